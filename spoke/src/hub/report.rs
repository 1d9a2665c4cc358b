//! The status report the spoke sends to the hub: the planner's per-object
//! entries plus the revision being enforced, converted to the wire message.
//! The Flux inventory goes with a report only when the stream has not carried
//! it yet or it changed ([`InventorySent`]): it is most of a report's bytes.

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
#[derive(Clone, Debug, PartialEq, Hash)]
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

/// What one stream has carried of the inventory: its digest when last queued.
/// A new stream starts empty, so its first report carries the inventory: a
/// restarted hub or another replica always gets it, and the hub keeps its
/// stored copy while later reports carry none.
#[derive(Debug, Default)]
pub struct InventorySent {
    last: Option<u64>,
}

impl InventorySent {
    /// The digest of `report`'s inventory when it is to go with the report
    /// (never sent on this stream, or changed since); `None` when the hub has it.
    pub fn due(&self, report: &Report) -> Option<u64> {
        let digest = inventory_digest(&report.inventory);
        (self.last != Some(digest)).then_some(digest)
    }

    /// Records that the inventory with `digest` was queued on the stream.
    pub fn sent(&mut self, digest: u64) {
        self.last = Some(digest);
    }
}

/// A digest of `inventory` (the same within this process: compared only with
/// digests this spoke made).
fn inventory_digest(inventory: &[InventoryEntry]) -> u64 {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    BuildHasherDefault::<DefaultHasher>::default().hash_one(inventory)
}

impl Report {
    /// The wire message. `clock_offset_ms` is this spoke's clock minus the hub's;
    /// `with_inventory`: the report carries the whole Flux inventory.
    pub fn to_proto(
        &self,
        clock_offset_ms: i64,
        observed_at: DateTime<Utc>,
        with_inventory: bool,
    ) -> pb::StatusReport {
        let inventory = if with_inventory {
            self.inventory.iter().map(inventory_object).collect()
        } else {
            Vec::new()
        };
        pb::StatusReport {
            revision: self.revision,
            objects: self.objects.iter().map(object_status).collect(),
            clock_offset_ms,
            observed_at: Some(to_timestamp(observed_at)),
            more: false,
            held_objects: self.held_objects.iter().map(held_status).collect(),
            // The Gate loop's, added by the hub connection.
            local_gates: Vec::new(),
            inventory,
            has_inventory: with_inventory,
            // The persisted snapshot's state, added by the hub connection.
            snapshot_persistence: None,
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
        would_hold_by: h.would_hold_by.to_vec(),
        would_hold_since_revision: text(&h.would_hold_since_revision),
        would_hold_newer_revision: h.would_hold_newer_revision,
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
        let msg = report.to_proto(-1500, at, false);
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

    fn entry(name: &str, tier: &str) -> InventoryEntry {
        InventoryEntry {
            key: ObjectKey::new(FluxKind::Kustomization, "apps", name),
            labels: Arc::new([("tier".to_owned(), tier.to_owned())].into()),
            sources: vec![ObjectKey::new(FluxKind::GitRepository, "apps", "repo")],
            suspended_by_human: false,
            ignored: false,
        }
    }

    /// What the stream's reports carry: the inventory on the first report, none while it
    /// is unchanged, again once it changed, and on a new stream's first report.
    fn carried(sent: &mut InventorySent, report: &Report) -> Option<Vec<String>> {
        let digest = sent.due(report);
        let msg = report.to_proto(0, Utc::now(), digest.is_some());
        if let Some(d) = digest {
            sent.sent(d);
        }
        assert_eq!(msg.has_inventory, digest.is_some());
        msg.has_inventory
            .then(|| msg.inventory.iter().map(|o| o.name.clone()).collect())
    }

    #[test]
    fn the_inventory_goes_only_with_a_stream_s_first_report_and_after_a_change() {
        let mut report = Report {
            inventory: vec![entry("a", "prod"), entry("b", "dev")],
            ..Report::default()
        };
        let mut stream = InventorySent::default();
        assert_eq!(
            carried(&mut stream, &report),
            Some(vec!["a".into(), "b".into()])
        );
        // Heartbeats and changed object statuses: no inventory.
        assert_eq!(carried(&mut stream, &report), None);
        report.revision = 2;
        assert_eq!(carried(&mut stream, &report), None);
        // A label changed: carried again, once.
        report.inventory[1] = entry("b", "prod");
        assert_eq!(
            carried(&mut stream, &report),
            Some(vec!["a".into(), "b".into()])
        );
        assert_eq!(carried(&mut stream, &report), None);
        // Every object gone: an empty inventory is carried (the hub clears its copy).
        report.inventory.clear();
        assert_eq!(carried(&mut stream, &report), Some(vec![]));
        assert_eq!(carried(&mut stream, &report), None);
        // A new stream (reconnect, restarted hub, another replica) gets it first thing.
        report.inventory = vec![entry("a", "prod")];
        let mut stream = InventorySent::default();
        assert_eq!(carried(&mut stream, &report), Some(vec!["a".into()]));
        assert_eq!(carried(&mut stream, &report), None);
    }
}
