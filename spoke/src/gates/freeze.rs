//! A freeze made in the cluster, also cut off from the hub and on a standalone spoke: the
//! ConfigMap `fleetgate-freeze` in the spoke's namespace. While it exists every gate here is
//! closed (above every override and request) and every Kustomization/HelmRelease no gate
//! covers is suspended; deleting it ends the freeze. One command each:
//!
//! ```sh
//! kubectl -n fleetgate-system create configmap fleetgate-freeze --from-literal=reason="INC-123"
//! kubectl -n fleetgate-system delete configmap fleetgate-freeze
//! ```
//!
//! Optional key `for` (`2h`) ends it by itself. The hub records it (audited) from the
//! spoke's report on every connect and change.

use chrono::{DateTime, Utc};
use fleetgate_policy::{FREEZE_GATE, Override};
use k8s_openapi::api::core::v1::ConfigMap;

/// The ConfigMap whose existence freezes the cluster.
pub const CONFIGMAP: &str = "fleetgate-freeze";
/// Prefix of the local freeze's override id.
const ID: &str = "local:freeze:";

/// The freeze made in the cluster.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalFreeze {
    /// The ConfigMap's creation: the freeze starts then.
    pub since: DateTime<Utc>,
    /// `since` + the `for` key, if given and valid.
    pub until: Option<DateTime<Utc>>,
    pub reason: String,
    /// The field manager that created it (`kubectl create --field-manager=alice`).
    pub by: String,
}

impl LocalFreeze {
    /// Reads the ConfigMap; a `for` that does not parse is ignored (frozen until deleted:
    /// closing never waits on a typo).
    pub fn from_configmap(cm: &ConfigMap) -> Option<Self> {
        let created = cm.metadata.creation_timestamp.as_ref()?.0;
        let since = DateTime::<Utc>::from_timestamp(created.as_second(), 0)?;
        let data = cm.data.clone().unwrap_or_default();
        let until = data
            .get("for")
            .and_then(|d| fleetgate_policy::parse_duration(d).ok())
            .filter(|d| *d > chrono::Duration::zero())
            .map(|d| since + d);
        let by = cm
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .find_map(|m| m.manager.clone())
            .unwrap_or_default();
        Some(LocalFreeze {
            since,
            until,
            reason: data.get("reason").cloned().unwrap_or_default(),
            by,
        })
    }

    /// The freeze as the evaluator weighs it.
    pub fn to_override(&self) -> Override {
        Override::freeze(
            format!("{ID}{}", self.since.timestamp()),
            self.since,
            self.until,
            self.since,
            if self.by.is_empty() {
                "the cluster".to_owned()
            } else {
                self.by.clone()
            },
            self.reason.clone(),
        )
    }

    /// The message telling the hub (a request on the reserved gate: `closed` = frozen).
    pub fn to_proto(this: Option<&Self>) -> fleetgate_proto::v1::LocalRequest {
        use fleetgate_proto::time::to_timestamp;
        match this {
            None => fleetgate_proto::v1::LocalRequest {
                gate: FREEZE_GATE.to_owned(),
                state: "open".to_owned(),
                ..Default::default()
            },
            Some(f) => fleetgate_proto::v1::LocalRequest {
                gate: FREEZE_GATE.to_owned(),
                state: "closed".to_owned(),
                requested_at: Some(to_timestamp(f.since)),
                expires_at: f.until.map(to_timestamp),
                reason: f.reason.clone(),
                requested_by: f.by.clone(),
            },
        }
    }
}

/// Longest `fleetgate.io/freeze-reason` value written (the reason is a person's free text).
const ANNOTATION_BYTES: usize = 1024;

/// The `fleetgate.io/freeze-reason` value for freeze `f` (the hub's or this cluster's):
/// which freeze, who made it, until when, and why, with absolute times so the value stays
/// the same for the freeze's whole life (one patch per object, not one a day):
/// `fleet freeze 12 by alice until 2026-11-27T16:00:00Z: INC-123` or
/// `cluster freeze (ConfigMap fleetgate-freeze) by alice until unfrozen: INC-123`.
pub fn annotation(f: &Override) -> String {
    use chrono::SecondsFormat;
    let which = if f.id.starts_with(ID) {
        format!("cluster freeze (ConfigMap {CONFIGMAP})")
    } else {
        format!("fleet freeze {}", f.id)
    };
    let by = if f.actor.is_empty() {
        String::new()
    } else {
        format!(" by {}", f.actor)
    };
    let until = f.expires_at.map_or_else(
        || "unfrozen".to_owned(),
        |e| e.to_rfc3339_opts(SecondsFormat::Secs, true),
    );
    let why = if f.reason.is_empty() {
        String::new()
    } else {
        format!(": {}", f.reason)
    };
    crate::cluster::text::fit_text(&format!("{which}{by} until {until}{why}"), ANNOTATION_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    #[test]
    fn the_annotation_names_the_freeze_who_until_and_why() {
        let hub = Override::freeze(
            "12",
            at("2026-11-27T10:00:00Z"),
            Some(at("2026-11-27T16:00:00Z")),
            at("2026-11-27T10:00:00Z"),
            "alice",
            "INC-123",
        );
        assert_eq!(
            annotation(&hub),
            "fleet freeze 12 by alice until 2026-11-27T16:00:00Z: INC-123"
        );
        let local = LocalFreeze {
            since: at("2026-11-27T10:00:00Z"),
            until: None,
            reason: "INC-9\0 and more".to_owned(),
            by: "bob".to_owned(),
        };
        assert_eq!(
            annotation(&local.to_override()),
            "cluster freeze (ConfigMap fleetgate-freeze) by bob until unfrozen: INC-9\u{FFFD} and more"
        );
        let long = LocalFreeze {
            reason: "x".repeat(5000),
            ..local
        };
        assert!(annotation(&long.to_override()).len() <= ANNOTATION_BYTES);
    }
}
