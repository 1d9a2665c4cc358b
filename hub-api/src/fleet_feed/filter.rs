//! Which fleet events a watcher gets: the clusters and gates it asked for (empty:
//! all) within what its grants let it see, re-computed from each view's labels so a
//! changed policy or token applies to open streams too.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

use crate::service::fleet::{FleetView, ViewLabels};
use crate::service::types::OverrideRecord;
use crate::service::{ClusterRef, GateRef, ReadScope};

/// Which events a watcher wants (empty: all), and may see (its scope).
#[derive(Debug, Clone, Default)]
pub struct Filter {
    clusters: BTreeSet<String>,
    gates: BTreeSet<String>,
    visible: Option<Arc<Visible>>,
}

/// The clusters and gates of one view a scoped watcher sees.
#[derive(Debug)]
struct Visible {
    clusters: HashSet<String>,
    gates: HashSet<String>,
    /// With grants of different scopes: which pairs (see `ReadScope::pair`).
    pairs: Option<(ReadScope, Arc<ViewLabels>)>,
}

impl Filter {
    /// Events of these clusters and gates only (an empty list: all).
    pub fn new(clusters: Vec<String>, gates: Vec<String>) -> Self {
        Self {
            clusters: clusters.into_iter().collect(),
            gates: gates.into_iter().collect(),
            visible: None,
        }
    }
    /// This filter within `scope` (a watcher's [`Actor::read_scope`]) as of
    /// `view`'s labels; unchanged for an unscoped watcher.
    pub fn within(&self, scope: Option<ReadScope>, view: &FleetView) -> Filter {
        let visible = scope.map(|s| {
            let l = &view.labels;
            Arc::new(Visible {
                clusters: (l.clusters.iter())
                    .filter(|(n, labels)| s.cluster(n, labels))
                    .map(|(n, _)| n.clone())
                    .collect(),
                gates: (l.gates.iter())
                    .filter(|(n, labels)| s.gate(n, labels))
                    .map(|(n, _)| n.clone())
                    .collect(),
                pairs: (!s.is_single()).then(|| (s, l.clone())),
            })
        });
        Filter {
            visible,
            ..self.clone()
        }
    }
    pub(super) fn cluster(&self, c: &str) -> bool {
        (self.clusters.is_empty() || self.clusters.contains(c))
            && self.visible.as_ref().is_none_or(|v| v.clusters.contains(c))
    }
    pub(super) fn gate(&self, g: &str) -> bool {
        (self.gates.is_empty() || self.gates.contains(g))
            && self.visible.as_ref().is_none_or(|v| v.gates.contains(g))
    }
    pub(super) fn pair(&self, g: &str, c: &str) -> bool {
        self.gate(g)
            && self.cluster(c)
            && self.visible.as_ref().is_none_or(|v| {
                v.pairs.as_ref().is_none_or(|(s, l)| {
                    let none = BTreeMap::new();
                    s.pair(
                        GateRef {
                            name: g,
                            labels: l.gates.get(g).unwrap_or(&none),
                        },
                        ClusterRef {
                            name: c,
                            labels: l.clusters.get(c).unwrap_or(&none),
                        },
                    )
                })
            })
    }
    pub(super) fn override_wanted(&self, o: &OverrideRecord) -> bool {
        self.scope_wanted(&o.gate, o.clusters.as_ref())
    }
    /// An override or approval request through `gate` on `clusters` (None: its
    /// whole scope).
    pub(super) fn scope_wanted(
        &self,
        gate: &str,
        clusters: Option<&fleetgate_policy::ClusterScope>,
    ) -> bool {
        self.gate(gate)
            && (self.clusters.is_empty()
                || clusters.is_none_or(|s| {
                    s.selector.is_some() || s.names.iter().any(|n| self.cluster(n))
                }))
    }
}
