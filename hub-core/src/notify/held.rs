//! `changes.held`: a new source revision started waiting behind a closed
//! gate. Found when a spoke's report is written (the objects held now that
//! were not held at that revision before) and enqueued in the report's
//! transaction: one event per (cluster, gate) listing the objects and
//! their revisions, keyed by them, so the same wait is never announced twice.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::event::NewEvent;
use crate::db::reports::ClusterReport;

/// The events of `report`'s objects at `newly_held` (indices into its
/// objects), one per holding gate (the gates that suspended the object, or
/// those governing it when none did, e.g. object-level holds).
pub(crate) fn events(report: &ClusterReport, newly_held: &[usize]) -> Vec<NewEvent> {
    let mut by_gate: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    for o in newly_held.iter().filter_map(|i| report.objects.get(*i)) {
        let gates = if o.suspended_by.is_empty() {
            &o.gates
        } else {
            &o.suspended_by
        };
        for g in gates {
            by_gate.entry(g).or_default().push(serde_json::json!({
                "kind": o.kind,
                "namespace": o.namespace,
                "name": o.name,
                "revision": o.newest_source_revision,
                "appliedRevision": o.last_applied_revision,
            }));
        }
    }
    let cluster = &report.cluster;
    by_gate
        .into_iter()
        .map(|(gate, objects)| {
            let digest = Sha256::digest(serde_json::to_vec(&objects).unwrap_or_default());
            let key = hex::encode(&digest[..12]);
            NewEvent {
                event_type: "changes.held".into(),
                subject: format!("cluster/{cluster}"),
                dedup_key: Some(format!("changes.held/{cluster}/{gate}/{key}")),
                occurred_at: report.received_at,
                gate: Some(gate.to_string()),
                clusters: vec![cluster.clone()],
                data: serde_json::json!({
                    "cluster": cluster,
                    "gate": gate,
                    "objects": objects,
                }),
            }
        })
        .collect()
}
