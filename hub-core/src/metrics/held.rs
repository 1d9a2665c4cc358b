//! Held-object gauges (`fleetgate_hub_held_objects{cluster}`,
//! `…_by_gate{cluster,gate}`, `…_by_person{cluster}`, `…_waiting{cluster}`,
//! `…_not_permitted{cluster}`, and for warn-mode gates
//! `…_would_hold_by_gate{cluster,gate}`),
//! set from each report a replica receives and dropped when the cluster's
//! stream leaves the replica: every cluster is exported by the one replica
//! serving its spoke, so summing over replicas counts it once.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::db::held_objects::HeldObject;

/// A cluster's series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    pub cluster: String,
}

/// A cluster's series per gate.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterGateLabels {
    pub cluster: String,
    pub gate: String,
}

/// The held-object gauges. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct HeldObjectMetrics {
    held: Family<ClusterLabels, Gauge>,
    by_gate: Family<ClusterGateLabels, Gauge>,
    by_person: Family<ClusterLabels, Gauge>,
    waiting: Family<ClusterLabels, Gauge>,
    not_permitted: Family<ClusterLabels, Gauge>,
    would_hold_by_gate: Family<ClusterGateLabels, Gauge>,
    /// The gates exported per cluster, so a gate that stops holding loses its series.
    gates: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
    /// The same for the warn gates that would hold.
    would_gates: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
}

impl HeldObjectMetrics {
    /// Registers the gauges (prefix `held_objects`) in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "held_objects",
            "Objects inside Kustomizations held by fleetgate (holdObjects gates), per cluster",
            self.held.clone(),
        );
        registry.register(
            "held_objects_by_gate",
            "Objects held by fleetgate, per cluster and closed gate holding them",
            self.by_gate.clone(),
        );
        registry.register(
            "held_objects_by_person",
            "Objects Flux skips because a person marked them reconcile: disabled (fleetgate leaves them alone), per cluster",
            self.by_person.clone(),
        );
        registry.register(
            "held_objects_waiting",
            "Objects held by fleetgate whose Kustomization has applied a newer revision since (changes wait), per cluster",
            self.waiting.clone(),
        );
        registry.register(
            "held_objects_not_permitted",
            "Objects holdObjects gates select whose kind the spoke's --held-kinds does not enable (HoldNotPermitted: they cannot be held), per cluster",
            self.not_permitted.clone(),
        );
        registry.register(
            "held_objects_would_hold_by_gate",
            "Objects inside Kustomizations a closed warn-mode holdObjects gate would hold if enforced (nothing is marked), per cluster and gate",
            self.would_hold_by_gate.clone(),
        );
    }

    /// Sets `cluster`'s gauges from its latest report's held objects.
    pub fn set(&self, cluster: &str, objects: &[HeldObject]) {
        let c = ClusterLabels {
            cluster: cluster.to_string(),
        };
        let held = objects.iter().filter(|o| !o.held_by.is_empty());
        self.held.get_or_create(&c).set(count(held.clone().count()));
        self.waiting.get_or_create(&c).set(count(
            held.clone().filter(|o| o.newer_revision_applied).count(),
        ));
        self.by_person
            .get_or_create(&c)
            .set(count(objects.iter().filter(|o| o.held_by_person).count()));
        self.not_permitted
            .get_or_create(&c)
            .set(count(objects.iter().filter(|o| o.not_permitted).count()));
        let mut per_gate: HashMap<&str, usize> = HashMap::new();
        for gate in held.flat_map(|o| &o.held_by) {
            *per_gate.entry(gate).or_default() += 1;
        }
        let mut exported = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        let before = exported.remove(cluster).unwrap_or_default();
        for gone in before.iter().filter(|g| !per_gate.contains_key(g.as_str())) {
            self.by_gate.remove(&gate_labels(cluster, gone));
        }
        for (gate, n) in &per_gate {
            self.by_gate
                .get_or_create(&gate_labels(cluster, gate))
                .set(count(*n));
        }
        exported.insert(
            cluster.to_string(),
            per_gate.keys().map(|g| g.to_string()).collect(),
        );
        drop(exported);
        let mut would: HashMap<&str, usize> = HashMap::new();
        for gate in objects.iter().flat_map(|o| &o.would_hold_by) {
            *would.entry(gate).or_default() += 1;
        }
        let mut exported = self.would_gates.lock().unwrap_or_else(|e| e.into_inner());
        let before = exported.remove(cluster).unwrap_or_default();
        for gone in before.iter().filter(|g| !would.contains_key(g.as_str())) {
            self.would_hold_by_gate.remove(&gate_labels(cluster, gone));
        }
        for (gate, n) in &would {
            self.would_hold_by_gate
                .get_or_create(&gate_labels(cluster, gate))
                .set(count(*n));
        }
        if !would.is_empty() {
            exported.insert(
                cluster.to_string(),
                would.keys().map(|g| g.to_string()).collect(),
            );
        }
    }

    /// Drops `cluster`'s series (its stream left this replica).
    pub fn forget(&self, cluster: &str) {
        let c = ClusterLabels {
            cluster: cluster.to_string(),
        };
        self.held.remove(&c);
        self.waiting.remove(&c);
        self.by_person.remove(&c);
        self.not_permitted.remove(&c);
        let mut exported = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        for gate in exported.remove(cluster).unwrap_or_default() {
            self.by_gate.remove(&gate_labels(cluster, &gate));
        }
        drop(exported);
        let mut exported = self.would_gates.lock().unwrap_or_else(|e| e.into_inner());
        for gate in exported.remove(cluster).unwrap_or_default() {
            self.would_hold_by_gate.remove(&gate_labels(cluster, &gate));
        }
    }
}

fn gate_labels(cluster: &str, gate: &str) -> ClusterGateLabels {
    ClusterGateLabels {
        cluster: cluster.to_string(),
        gate: gate.to_string(),
    }
}

fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(name: &str, by: &[&str], person: bool, waiting: bool) -> HeldObject {
        HeldObject {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: "web".into(),
            name: name.into(),
            kustomization_namespace: "flux-system".into(),
            kustomization_name: "apps".into(),
            gates: vec!["g".into(), "h".into()],
            held_by: by.iter().map(|s| s.to_string()).collect(),
            held_by_person: person,
            held_since_revision: None,
            held_since: None,
            newer_revision_applied: waiting,
            ..HeldObject::default()
        }
    }

    fn exposition(m: &HeldObjectMetrics) -> String {
        let mut r = Registry::default();
        m.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn gauges_follow_reports_and_leave_with_the_stream() {
        let m = HeldObjectMetrics::default();
        m.set(
            "a",
            &[
                held("x", &["g", "h"], false, true),
                held("y", &["g"], false, false),
                held("z", &[], true, false),
                HeldObject {
                    not_permitted: true,
                    ..held("w", &[], false, false)
                },
                HeldObject {
                    would_hold_by: vec!["try".into()],
                    ..held("v", &[], false, false)
                },
            ],
        );
        assert!(
            exposition(&m)
                .contains("held_objects_would_hold_by_gate{cluster=\"a\",gate=\"try\"} 1"),
            "{}",
            exposition(&m)
        );
        let out = exposition(&m);
        assert!(
            out.contains("held_objects_not_permitted{cluster=\"a\"} 1"),
            "{out}"
        );
        assert!(out.contains("held_objects{cluster=\"a\"} 2"), "{out}");
        assert!(
            out.contains("held_objects_waiting{cluster=\"a\"} 1"),
            "{out}"
        );
        assert!(
            out.contains("held_objects_by_person{cluster=\"a\"} 1"),
            "{out}"
        );
        assert!(
            out.contains("held_objects_by_gate{cluster=\"a\",gate=\"g\"} 2"),
            "{out}"
        );
        assert!(
            out.contains("held_objects_by_gate{cluster=\"a\",gate=\"h\"} 1"),
            "{out}"
        );
        // Gate h opens, warn gate try is enforced: their series go.
        m.set("a", &[held("x", &["g"], false, false)]);
        let out = exposition(&m);
        assert!(!out.contains("gate=\"h\""), "{out}");
        assert!(!out.contains("gate=\"try\""), "{out}");
        assert!(out.contains("held_objects{cluster=\"a\"} 1"), "{out}");
        m.forget("a");
        assert!(!exposition(&m).contains("cluster=\"a\""));
    }
}
