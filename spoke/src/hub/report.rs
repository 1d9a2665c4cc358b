//! The status report the spoke sends to the hub: the planner's per-object
//! entries plus the revision being enforced, converted to the wire message.

use chrono::{DateTime, Utc};
use fleetgate_proto::{time::to_timestamp, v1 as pb};

use std::{collections::BTreeMap, sync::Arc};

use crate::{
    cluster::observed::{ObjectKey, ObservedObject},
    hold::plan::HeldReport,
    suspend::plan::ObjectReport,
};

/// The latest full view of the governed objects.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The snapshot revision being enforced (0 for none).
    pub revision: u64,
    pub objects: Vec<ObjectReport>,
    /// Objects inside Kustomizations selected by holdObjects gates or marked.
    pub held_objects: Vec<HeldReport>,
    /// Every Flux object, governed or not (the hub's impact preview).
    pub inventory: Vec<InventoryEntry>,
}

/// One Flux object as a gate's targets see it (labels shared with the watched object).
#[derive(Clone, Debug, PartialEq)]
pub struct InventoryEntry {
    pub key: ObjectKey,
    pub labels: Arc<BTreeMap<String, String>>,
    pub sources: Vec<ObjectKey>,
    pub suspended_by_human: bool,
    pub ignored: bool,
}

impl InventoryEntry {
    /// The entry of an observed object.
    pub fn of(o: &ObservedObject) -> Self {
        InventoryEntry {
            key: o.key.clone(),
            labels: o.labels.clone(),
            sources: o.source_refs.clone(),
            suspended_by_human: o.suspended_by_human(),
            ignored: o.ignored,
        }
    }
}

fn inventory_object(e: &InventoryEntry) -> pb::InventoryObject {
    let key = |k: &ObjectKey| format!("{}/{}/{}", k.kind.as_str(), k.namespace, k.name);
    pb::InventoryObject {
        kind: e.key.kind.as_str().to_owned(),
        namespace: e.key.namespace.clone(),
        name: e.key.name.clone(),
        labels: e
            .labels
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
        sources: e.sources.iter().map(key).collect(),
        suspended_by_human: e.suspended_by_human,
        ignored: e.ignored,
    }
}

impl Report {
    /// The wire message. `clock_offset_ms` is this spoke's clock minus the hub's.
    pub fn to_proto(&self, clock_offset_ms: i64, observed_at: DateTime<Utc>) -> pb::StatusReport {
        pb::StatusReport {
            revision: self.revision,
            objects: self.objects.iter().map(object_status).collect(),
            clock_offset_ms,
            observed_at: Some(to_timestamp(observed_at)),
            more: false,
            held_objects: self.held_objects.iter().map(held_status).collect(),
            // The Gate loop's, added by the hub connection.
            local_gates: Vec::new(),
            inventory: self.inventory.iter().map(inventory_object).collect(),
        }
    }
}

fn held_status(h: &HeldReport) -> pb::HeldObjectStatus {
    let (ks_ns, ks_name) = h
        .owner
        .as_ref()
        .map(|o| (o.namespace.clone(), o.name.clone()))
        .unwrap_or_default();
    pb::HeldObjectStatus {
        group: h.key.kind.group.clone(),
        kind: h.key.kind.kind.clone(),
        namespace: h.key.namespace.to_string(),
        name: h.key.name.to_string(),
        kustomization_namespace: ks_ns,
        kustomization_name: ks_name,
        gates: h.gates.to_vec(),
        held_by: h.held_by.to_vec(),
        held_by_person: h.held_by_person,
        held_since_revision: text(&h.since_revision),
        held_since: text(&h.since),
        newer_revision_applied: h.newer_revision_applied,
        not_permitted: h.not_permitted,
    }
}

fn text(s: &Option<std::sync::Arc<str>>) -> String {
    s.as_deref().unwrap_or_default().to_owned()
}

fn object_status(o: &ObjectReport) -> pb::ObjectStatus {
    let r = &o.readiness;
    pb::ObjectStatus {
        kind: o.key.kind.as_str().to_owned(),
        namespace: o.key.namespace.clone(),
        name: o.key.name.clone(),
        suspended: o.suspended,
        suspended_by: o.suspended_by.clone(),
        gates: o.gates.clone(),
        last_applied_revision: text(&o.last_applied_revision),
        newest_source_revision: text(&o.newest_source_revision),
        held: o.held,
        would_suspend_by: o.would_suspend_by.clone(),
        would_hold: o.would_hold,
        suspended_by_human: o.suspended_by_human,
        ignored: o.ignored,
        ready: r
            .ready
            .as_ref()
            .map(|c| c.status.clone())
            .unwrap_or_default(),
        ready_reason: r
            .ready
            .as_ref()
            .map(|c| c.reason.clone())
            .unwrap_or_default(),
        ready_message: r
            .ready
            .as_ref()
            .map(|c| c.message.clone())
            .unwrap_or_default(),
        stalled: r.stalled,
        generation: r.generation,
        observed_generation: r.observed_generation,
        last_attempted_revision: text(&r.last_attempted_revision),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::observed::ObjectKey;
    use fleetgate_policy::FluxKind;

    #[test]
    fn converts_every_field() {
        let report = Report {
            revision: 9,
            objects: vec![ObjectReport {
                key: ObjectKey::new(FluxKind::Kustomization, "ns", "apps"),
                suspended: true,
                suspended_by: vec!["g".into()],
                gates: vec!["g".into(), "h".into()],
                last_applied_revision: Some("r1".into()),
                newest_source_revision: None,
                held: false,
                would_suspend_by: vec![],
                would_hold: false,
                suspended_by_human: false,
                ignored: true,
                pinned: false,
                applied_by_parent: false,
                readiness: crate::cluster::readiness::Readiness {
                    ready: Some(
                        crate::cluster::readiness::Ready {
                            status: "False".into(),
                            reason: "HealthCheckFailed".into(),
                            message: "health check failed".into(),
                        }
                        .into(),
                    ),
                    stalled: true,
                    generation: 3,
                    observed_generation: 2,
                    last_attempted_revision: Some("r2".into()),
                },
            }],
            held_objects: vec![],
            inventory: vec![],
        };
        let at = Utc::now();
        let msg = report.to_proto(-1500, at);
        assert_eq!(msg.revision, 9);
        assert_eq!(msg.clock_offset_ms, -1500);
        let o = &msg.objects[0];
        assert_eq!(
            (o.kind.as_str(), o.namespace.as_str(), o.name.as_str()),
            ("Kustomization", "ns", "apps")
        );
        assert!(o.suspended && !o.held && !o.suspended_by_human);
        assert_eq!(o.suspended_by, vec!["g"]);
        assert_eq!(o.gates, vec!["g", "h"]);
        assert_eq!(o.last_applied_revision, "r1");
        assert_eq!(o.newest_source_revision, "");
        assert_eq!(
            (
                o.ready.as_str(),
                o.ready_reason.as_str(),
                o.ready_message.as_str()
            ),
            ("False", "HealthCheckFailed", "health check failed")
        );
        assert!(o.stalled);
        assert_eq!((o.generation, o.observed_generation), (3, 2));
        assert_eq!(o.last_attempted_revision, "r2");
    }
}
