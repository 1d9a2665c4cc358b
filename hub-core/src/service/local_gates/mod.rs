//! Audit entries for a cluster's local gates (Gate objects made in the
//! cluster, reported by its spoke): one entry per gate that appeared,
//! disappeared or changed how the spoke treats it — enforced or not, its
//! `Ready` condition (valid, invalid spec, name conflict, other cluster).
//! Opening and closing by its windows is evaluation, not a change (a hub
//! gate's transitions are not audited either), and counts move with every
//! reconcile: neither writes an entry, so a heartbeat never does.
//! Written in the report's own transaction, under actor `cluster/NAME`;
//! like reports, they bump no revision and notify nothing.

pub mod requests;

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;
use crate::db::audit::{self, NewAudit};
use crate::db::reports::LocalGate;

/// Audited as a local gate's target kind: the cluster it lives in.
const TARGET_KIND: &str = "cluster";

/// One audit entry for a local gate of a cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct LocalGateAudit {
    /// `local_gate.add`, `local_gate.change` or `local_gate.remove`.
    pub action: &'static str,
    pub gate: String,
    pub before: Option<LocalGate>,
    pub after: Option<LocalGate>,
}

/// The actor local gate entries are recorded under.
pub fn cluster_actor(cluster: &str) -> String {
    format!("cluster/{cluster}")
}

/// What makes a local gate's entry: whether it is enforced and its Ready
/// condition. State, reason, next transition and counts are left out.
fn identity(g: &LocalGate) -> (bool, &str, &str, &str) {
    (
        g.enforced,
        g.ready.as_str(),
        g.ready_reason.as_str(),
        g.ready_message.as_str(),
    )
}

/// The entries for a cluster whose local gates were `before` and are now
/// `after`, by gate name.
pub fn diff(before: &[LocalGate], after: &[LocalGate]) -> Vec<LocalGateAudit> {
    let old: BTreeMap<&str, &LocalGate> = before.iter().map(|g| (g.name.as_str(), g)).collect();
    let new: BTreeMap<&str, &LocalGate> = after.iter().map(|g| (g.name.as_str(), g)).collect();
    let mut out = Vec::new();
    let names: std::collections::BTreeSet<&str> = old.keys().chain(new.keys()).copied().collect();
    for name in names {
        let action = match (old.get(name), new.get(name)) {
            (None, Some(_)) => "local_gate.add",
            (Some(_), None) => "local_gate.remove",
            (Some(a), Some(b)) if identity(a) != identity(b) => "local_gate.change",
            _ => continue,
        };
        out.push(LocalGateAudit {
            action,
            gate: name.to_string(),
            before: old.get(name).map(|g| (*g).clone()),
            after: new.get(name).map(|g| (*g).clone()),
        });
    }
    out
}

fn reason(cluster: &str, e: &LocalGateAudit) -> String {
    let what = match e.action {
        "local_gate.add" => "reported",
        "local_gate.remove" => "no longer reported",
        _ => "changed",
    };
    let state = e.after.as_ref().map_or(String::new(), |g| {
        let enforced = if g.enforced {
            "enforced".to_string()
        } else {
            format!("not enforced ({})", g.ready_reason)
        };
        format!(": {enforced}")
    });
    format!("local gate '{}' {what} by cluster {cluster}{state}", e.gate)
}

/// Writes `cluster`'s entries at `at` in the report's transaction.
pub async fn write(
    conn: &mut PgConnection,
    cluster: &str,
    at: DateTime<Utc>,
    entries: &[LocalGateAudit],
) -> Result<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let actor = cluster_actor(cluster);
    for e in entries {
        let reason = reason(cluster, e);
        audit::insert(
            &mut *conn,
            &NewAudit {
                at,
                actor: &actor,
                action: e.action,
                target_kind: TARGET_KIND,
                target_name: cluster,
                before: e.before.as_ref().and_then(super::to_json),
                after: e.after.as_ref().and_then(super::to_json),
                reason: Some(&reason),
                who: audit::Who {
                    kind: Some("spoke".into()),
                    ..audit::Who::default()
                },
            },
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(name: &str, enforced: bool, state: &str) -> LocalGate {
        LocalGate {
            name: name.into(),
            enforced,
            state: state.into(),
            ready: "True".into(),
            ready_reason: if enforced { "Enforced" } else { "NotEnforced" }.into(),
            governed: 3,
            ..LocalGate::default()
        }
    }

    #[test]
    fn only_appearing_leaving_and_enforcement_changes_are_entries() {
        let before = vec![g("a", true, "open"), g("b", false, "closed")];
        // Same gates, other state and counts: a window edge, a heartbeat.
        let mut moved = before.clone();
        moved[0].state = "closed".into();
        moved[0].reason = "DenyWindow".into();
        moved[0].held = 2;
        moved[0].next_transition = Some(Utc::now());
        assert!(diff(&before, &moved).is_empty());
        assert!(diff(&before, &before).is_empty());

        let mut invalid = g("a", true, "open");
        invalid.ready = "False".into();
        invalid.ready_reason = "InvalidSpec".into();
        let after = vec![invalid, g("c", true, "open")];
        let entries = diff(&before, &after);
        let got: Vec<(&str, &str)> = entries
            .iter()
            .map(|e| (e.action, e.gate.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("local_gate.change", "a"),
                ("local_gate.remove", "b"),
                ("local_gate.add", "c")
            ]
        );
        assert_eq!(entries[1].after, None);
        assert_eq!(entries[2].before, None);
        assert_eq!(
            reason("edge-1", &entries[0]),
            "local gate 'a' changed by cluster edge-1: enforced"
        );
        assert_eq!(
            reason("edge-1", &entries[1]),
            "local gate 'b' no longer reported by cluster edge-1"
        );
    }
}
