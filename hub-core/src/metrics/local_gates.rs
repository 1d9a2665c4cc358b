//! Local-gate gauges (`fleetgate_hub_local_gates{cluster,enforced,state}`):
//! Gate objects made in each cluster, as its spoke last reported them, set
//! from each report a replica receives and dropped when the cluster's stream
//! leaves the replica (like the held-object gauges, so summing over replicas
//! counts each cluster once).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::db::reports::LocalGate;

/// One cluster's local gates of one kind.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LocalGateLabels {
    pub cluster: String,
    /// `true` or `false`.
    pub enforced: String,
    /// `open` or `closed`.
    pub state: String,
}

/// The local-gate gauge. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct LocalGateMetrics {
    gates: Family<LocalGateLabels, Gauge>,
}

/// Every label combination of a cluster: all are exported (zeros too), so a
/// kind that empties drops to 0 rather than keeping its last value.
fn combinations(cluster: &str) -> impl Iterator<Item = LocalGateLabels> + '_ {
    [("true", "open"), ("true", "closed"), ("false", "closed")]
        .into_iter()
        .map(move |(enforced, state)| LocalGateLabels {
            cluster: cluster.to_string(),
            enforced: enforced.into(),
            state: state.into(),
        })
}

impl LocalGateMetrics {
    /// Registers the gauge (`local_gates`) in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "local_gates",
            "Gate objects made in the cluster (not the hub's) as its spoke reports them, per cluster, enforced or not, open or closed",
            self.gates.clone(),
        );
    }

    /// Sets `cluster`'s gauges from its latest report.
    pub fn set(&self, cluster: &str, gates: &[LocalGate]) {
        for labels in combinations(cluster) {
            let n = gates
                .iter()
                .filter(|g| {
                    g.enforced.to_string() == labels.enforced
                        && (if g.enforced {
                            g.state.as_str()
                        } else {
                            "closed"
                        }) == labels.state
                })
                .count();
            self.gates
                .get_or_create(&labels)
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Drops `cluster`'s series (its stream left this replica).
    pub fn forget(&self, cluster: &str) {
        for labels in combinations(cluster) {
            self.gates.remove(&labels);
        }
    }
}
