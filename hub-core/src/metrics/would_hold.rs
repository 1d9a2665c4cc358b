//! Warn-mode gauges (`fleetgate_hub_would_suspend_objects{cluster,gate}`,
//! `fleetgate_hub_would_hold_objects{cluster,gate}`): the Flux objects a closed warn gate would
//! suspend if enforced, and of those the ones whose newer revision it would hold, set from each report a replica receives and
//! dropped when the cluster's stream leaves the replica (as the held-object gauges are), so
//! summing over replicas counts every cluster once.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::held::ClusterGateLabels;
use crate::db::reports::ReportedObject;

/// The would-suspend gauge. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct WouldHoldMetrics {
    by_gate: Family<ClusterGateLabels, Gauge>,
    /// Of those, objects whose source has a newer revision (it would wait).
    hold_by_gate: Family<ClusterGateLabels, Gauge>,
    /// The gates exported per cluster, so a gate that stops "would-holding" loses its series.
    gates: Arc<Mutex<HashMap<String, BTreeSet<String>>>>,
}

impl WouldHoldMetrics {
    /// Registers the gauge in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "would_suspend_objects",
            "Flux objects a closed warn-mode gate would suspend if enforced (nothing is held), per cluster and gate",
            self.by_gate.clone(),
        );
        registry.register(
            "would_hold_objects",
            "Flux objects whose newer source revision a closed warn-mode gate would hold if enforced (nothing is held), per cluster and gate",
            self.hold_by_gate.clone(),
        );
    }

    /// Sets `cluster`'s series from its latest report's objects.
    pub fn set(&self, cluster: &str, objects: &[ReportedObject]) {
        // Per gate: (would suspend, would hold).
        let mut per_gate: BTreeMap<&str, (i64, i64)> = BTreeMap::new();
        for o in objects {
            for gate in &o.would_suspend_by {
                let n = per_gate.entry(gate).or_default();
                n.0 += 1;
                n.1 += i64::from(o.would_hold);
            }
        }
        let mut exported = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        for gone in exported.remove(cluster).unwrap_or_default() {
            if !per_gate.contains_key(gone.as_str()) {
                self.by_gate.remove(&labels(cluster, &gone));
                self.hold_by_gate.remove(&labels(cluster, &gone));
            }
        }
        for (gate, (suspend, hold)) in &per_gate {
            self.by_gate
                .get_or_create(&labels(cluster, gate))
                .set(*suspend);
            self.hold_by_gate
                .get_or_create(&labels(cluster, gate))
                .set(*hold);
        }
        if !per_gate.is_empty() {
            exported.insert(
                cluster.to_string(),
                per_gate.keys().map(|g| g.to_string()).collect(),
            );
        }
    }

    /// Drops `cluster`'s series (its stream left this replica).
    pub fn forget(&self, cluster: &str) {
        let mut exported = self.gates.lock().unwrap_or_else(|e| e.into_inner());
        for gate in exported.remove(cluster).unwrap_or_default() {
            self.by_gate.remove(&labels(cluster, &gate));
            self.hold_by_gate.remove(&labels(cluster, &gate));
        }
    }
}

fn labels(cluster: &str, gate: &str) -> ClusterGateLabels {
    ClusterGateLabels {
        cluster: cluster.to_string(),
        gate: gate.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, would: &[&str]) -> ReportedObject {
        ReportedObject {
            kind: "Kustomization".into(),
            namespace: "apps".into(),
            name: name.into(),
            would_suspend_by: would.iter().map(|s| s.to_string()).collect(),
            would_hold: name == "y",
            ..ReportedObject::default()
        }
    }

    fn render(m: &WouldHoldMetrics) -> String {
        let mut r = Registry::with_prefix("fleetgate_hub");
        m.register(&mut r);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &r).unwrap();
        out
    }

    #[test]
    fn counts_per_gate_and_drops_series_that_stop() {
        let m = WouldHoldMetrics::default();
        m.set(
            "a",
            &[object("x", &["try"]), object("y", &["try", "other"])],
        );
        let out = render(&m);
        assert!(
            out.contains("would_suspend_objects{cluster=\"a\",gate=\"try\"} 2"),
            "{out}"
        );
        assert!(out.contains("gate=\"other\"} 1"), "{out}");
        assert!(
            out.contains("would_hold_objects{cluster=\"a\",gate=\"try\"} 1"),
            "{out}"
        );
        m.set("a", &[object("x", &["try"])]);
        let out = render(&m);
        assert!(!out.contains("gate=\"other\""), "{out}");
        m.forget("a");
        assert!(!render(&m).contains("gate=\"try\""));
        assert!(!render(&m).contains("would_hold_objects{"));
    }
}
