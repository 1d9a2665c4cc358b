//! The events the hub emits: their types and what each carries. An event
//! is written once to the outbox ([`super::outbox`]) and rendered per
//! subscription format when delivered ([`super::format`]).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

pub use crate::db::outbox::{NewEvent, type_matches};

/// Every event type, as subscribers name them (`gate.closed`). Other parts
/// of the hub (approvals, calendars) enqueue theirs with [`super::enqueue`]
/// under the names listed here.
pub const EVENT_TYPES: &[&str] = &[
    "gate.opened",
    "gate.closed",
    "gate.upcoming",
    "override.created",
    "override.ended",
    "approval.pending",
    "approval.approved",
    "approval.rejected",
    "calendar.stale",
    "spoke.disconnected",
    "spoke.connected",
    "changes.held",
    "rollout.started",
    "rollout.wave_released",
    "rollout.halted",
    "rollout.completed",
    "webhook.test",
    "freeze.started",
    "freeze.ended",
    "rollout.aborted",
    "rollout.ended",
    "approval.cancelled",
    "approval.expired",
];

/// Why a gate's state changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Cause {
    /// A window began or ended (`window` edge), at its instant.
    Window,
    /// A manual override started, expired or was cancelled.
    Override,
    /// The gate's manifest was created, replaced or deleted.
    Manifest,
    /// An open/close request made inside the cluster.
    InClusterRequest,
    /// A calendar entry began or ended.
    Calendar,
    /// A rollout released or held a wave.
    Rollout,
}

/// `data` of `gate.opened` / `gate.closed`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateTransition {
    pub gate: String,
    /// `open` or `closed`: the new state.
    pub state: String,
    pub clusters: Vec<String>,
    pub reason: String,
    pub cause: Cause,
    /// The instant of the change.
    pub at: DateTime<Utc>,
    /// The gate's next change after this one on these clusters (with their overrides and
    /// freezes: a gate closed for an hour changes at the override's end), if any; the
    /// earliest where the clusters differ.
    pub next_transition: Option<DateTime<Utc>>,
    /// Who made the change, when a person or token did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
}

/// The earlier of two next transitions, where either is known.
pub(crate) fn earliest(
    a: Option<DateTime<Utc>>,
    b: Option<DateTime<Utc>>,
) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl GateTransition {
    /// The event, one per (gate, instant, new state): a window edge seen by
    /// two replicas, or an override's start seen by its write and by the
    /// scheduler, is one event.
    pub fn into_event(self) -> NewEvent {
        let instant = self.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        self.keyed(&instant)
    }

    /// The event with `key` (unique to the write or edge that caused it) in
    /// its dedup key instead of the instant: two writes in one millisecond
    /// are two events.
    pub fn keyed(self, key: &str) -> NewEvent {
        let event_type = format!(
            "gate.{}",
            if self.state == "open" {
                "opened"
            } else {
                "closed"
            }
        );
        NewEvent {
            dedup_key: Some(format!("{event_type}/{}/{key}", self.gate)),
            subject: format!("gate/{}", self.gate),
            occurred_at: self.at,
            gate: Some(self.gate.clone()),
            clusters: self.clusters.clone(),
            data: serde_json::to_value(&self).unwrap_or_default(),
            event_type,
        }
    }
}

/// `data` of `gate.upcoming`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GateUpcoming {
    pub gate: String,
    /// The state the gate will change to.
    pub state: String,
    pub clusters: Vec<String>,
    /// When it will change.
    pub at: DateTime<Utc>,
    /// How long before `at` this is sent (Go-style duration).
    pub lead: String,
    pub reason: String,
}

impl GateUpcoming {
    pub fn into_event(self, now: DateTime<Utc>) -> NewEvent {
        NewEvent {
            event_type: "gate.upcoming".into(),
            dedup_key: Some(format!(
                "gate.upcoming/{}/{}/{}/{}",
                self.gate,
                self.state,
                self.lead,
                self.at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
            )),
            subject: format!("gate/{}", self.gate),
            occurred_at: now,
            gate: Some(self.gate.clone()),
            clusters: self.clusters.clone(),
            data: serde_json::to_value(&self).unwrap_or_default(),
        }
    }
}

/// Per new state: the clusters, the reason, and their earliest next transition (how the
/// state-change events of one write are grouped before they are enqueued).
pub(crate) type StateGroups = BTreeMap<&'static str, (Vec<String>, String, Option<DateTime<Utc>>)>;
