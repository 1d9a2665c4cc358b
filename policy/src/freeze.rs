//! Fleet freezes (the emergency stop): a closing override of the reserved gate
//! [`FREEZE_GATE`] closes every gate it reaches, above every other override, window and
//! rollout, so a newer override or a local open request cannot reopen a frozen cluster.

use chrono::{DateTime, Utc};

use crate::{GateState, Override};

/// The reserved gate name freezes are overrides of. No stored gate may take it; on a spoke it
/// also names the built-in gate that holds every Kustomization and HelmRelease no other gate
/// covers while a freeze is in force.
pub const FREEZE_GATE: &str = "fleet-freeze";

impl Override {
    /// A freeze: closes every gate on the clusters it was sent to, ahead of every other rule.
    pub fn freeze(
        id: impl Into<String>,
        starts_at: DateTime<Utc>,
        expires_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
        actor: impl Into<String>,
        reason: impl Into<String>,
    ) -> Self {
        Override {
            id: id.into(),
            gate: FREEZE_GATE.to_string(),
            state: GateState::Closed,
            starts_at,
            expires_at,
            created_at,
            actor: actor.into(),
            reason: reason.into(),
        }
    }

    /// Whether this is a freeze ([`Override::freeze`]): it applies to every gate.
    pub fn is_freeze(&self) -> bool {
        self.gate == FREEZE_GATE && self.state == GateState::Closed
    }

    /// Why a gate is closed while this freeze is in force, for people, with times in `tz`:
    /// `fleet freeze by alice until 11:00 UTC: INC-123` (what every gate's reason reads).
    pub fn freeze_reason(&self, tz: chrono_tz::Tz, t: DateTime<Utc>) -> String {
        let until = match self.expires_at {
            Some(e) => format!("until {}", crate::localtime::format_until(tz, e, t)),
            None => "until unfrozen".to_string(),
        };
        let by = if self.actor.is_empty() {
            String::new()
        } else {
            format!(" by {}", self.actor)
        };
        let why = if self.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", self.reason)
        };
        format!("{}{by} {until}{why}", crate::eval::FREEZE_PREFIX)
    }

    /// [`Override::freeze_reason`] with times in UTC (a freeze belongs to no gate's zone).
    pub fn freeze_reason_utc(&self, t: DateTime<Utc>) -> String {
        self.freeze_reason(chrono_tz::UTC, t)
    }

    /// Whether it weighs in on `gate`: its own overrides and every freeze.
    pub fn applies_to_gate(&self, gate: &str) -> bool {
        self.gate == gate || self.is_freeze()
    }
}

/// The freeze in force at `t` among `overrides` (the newest), if any.
pub fn active_freeze<'a>(
    overrides: impl IntoIterator<Item = &'a Override>,
    t: DateTime<Utc>,
) -> Option<&'a Override> {
    overrides
        .into_iter()
        .filter(|o| o.is_freeze() && o.is_active(t))
        .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
}
