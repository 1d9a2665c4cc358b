//! A cluster's desired-state snapshot as the fan-out index holds it: the gates
//! applying to the cluster (manifest JSON + version) and its overrides, stamped
//! with the cluster's `desired_revision`. Converted to protobuf in `grpc::convert`.

use std::sync::Arc;

use fleetgate_policy::Override;
use futures::future::BoxFuture;

use crate::fanout::SnapshotSource;
use crate::service::Service;
use crate::{Error, Result};

/// One gate in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotGate {
    /// metadata.name.
    pub name: String,
    /// The gate's version.
    pub version: u64,
    /// The manifest as JSON text.
    pub manifest_json: String,
}

/// A cluster's full desired state at `revision`.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterSnapshot {
    /// The cluster's `desired_revision` when this was read.
    pub revision: u64,
    /// The cluster's name.
    pub cluster: String,
    /// Gates whose scope includes the cluster, ordered by name.
    pub gates: Vec<SnapshotGate>,
    /// Live overrides (active or upcoming) for those gates and this cluster,
    /// ordered by (created_at, id).
    pub overrides: Vec<Override>,
}

impl ClusterSnapshot {
    /// Builds a snapshot and puts gates and overrides in a canonical order, so
    /// two reads of the same state compare equal.
    pub fn new(
        revision: u64,
        cluster: String,
        mut gates: Vec<SnapshotGate>,
        mut overrides: Vec<Override>,
    ) -> Self {
        gates.sort_by(|a, b| a.name.cmp(&b.name));
        overrides.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Self {
            revision,
            cluster,
            gates,
            overrides,
        }
    }

    /// Same gates and overrides, regardless of revision: whether a spoke
    /// holding `other` would have to be sent `self`.
    pub fn same_content(&self, other: &Self) -> bool {
        self.cluster == other.cluster
            && self.gates == other.gates
            && self.overrides == other.overrides
    }
}

/// What a connected spoke's cluster should hold, as published per cluster in
/// the fan-out index.
#[derive(Debug, Clone, PartialEq)]
pub enum Desired {
    /// Subscribed, first read not done yet.
    Pending,
    /// The current snapshot.
    Snapshot(Arc<ClusterSnapshot>),
    /// The cluster was deleted: its connections must end.
    Gone,
}

impl Desired {
    /// The revision, 0 when there is no snapshot.
    pub fn revision(&self) -> u64 {
        match self {
            Self::Snapshot(s) => s.revision,
            Self::Pending | Self::Gone => 0,
        }
    }

    /// Whether `new` should replace `self` in the index. Revisions only move
    /// forward (a slow, stale read never overwrites a newer one); an equal
    /// revision replaces only if the content differs (an override that
    /// expired in between). `Gone` is final until the cluster is re-created.
    pub fn should_replace_with(&self, new: &Desired) -> bool {
        match (self, new) {
            (Self::Pending, Self::Pending) => false,
            (Self::Pending, _) => true,
            (Self::Gone, Self::Snapshot(_)) => true,
            (Self::Gone, _) => false,
            (Self::Snapshot(_), Self::Gone) => true,
            (Self::Snapshot(_), Self::Pending) => false,
            (Self::Snapshot(cur), Self::Snapshot(new)) => {
                new.revision > cur.revision
                    || (new.revision == cur.revision && !new.same_content(cur))
            }
        }
    }
}

/// The database as the fan-out's snapshot source, through the service layer.
impl SnapshotSource for Service {
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>> {
        Box::pin(async move {
            let inputs = match self.cluster_snapshot_inputs(cluster).await {
                Ok(inputs) => inputs,
                Err(Error::NotFound { .. }) => return Ok(Desired::Gone),
                Err(e) => return Err(e),
            };
            let mut gates = Vec::with_capacity(inputs.gates.len());
            for g in inputs.gates {
                let manifest_json = serde_json::to_string(&g.manifest)
                    .map_err(|e| Error::Internal(format!("encoding gate '{}': {e}", g.name)))?;
                gates.push(SnapshotGate {
                    name: g.name,
                    version: u64::try_from(g.version).unwrap_or(0),
                    manifest_json,
                });
            }
            Ok(Desired::Snapshot(Arc::new(ClusterSnapshot::new(
                u64::try_from(inputs.desired_revision).unwrap_or(0),
                inputs.cluster.name,
                gates,
                inputs.overrides,
            ))))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(rev: u64, gates: &[(&str, u64)]) -> Desired {
        Desired::Snapshot(Arc::new(ClusterSnapshot::new(
            rev,
            "c1".into(),
            gates
                .iter()
                .map(|(n, v)| SnapshotGate {
                    name: n.to_string(),
                    version: *v,
                    manifest_json: "{}".into(),
                })
                .collect(),
            vec![],
        )))
    }

    #[test]
    fn revisions_only_move_forward() {
        assert!(snap(1, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 1)])));
        assert!(!snap(2, &[("a", 1)]).should_replace_with(&snap(1, &[("a", 2)])));
        assert!(!snap(2, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 1)])));
        assert!(snap(2, &[("a", 1)]).should_replace_with(&snap(2, &[("a", 2)])));
    }

    #[test]
    fn pending_and_gone() {
        assert!(Desired::Pending.should_replace_with(&snap(0, &[])));
        assert!(Desired::Pending.should_replace_with(&Desired::Gone));
        assert!(!snap(3, &[]).should_replace_with(&Desired::Pending));
        assert!(snap(3, &[]).should_replace_with(&Desired::Gone));
        assert!(!Desired::Gone.should_replace_with(&Desired::Gone));
        assert!(Desired::Gone.should_replace_with(&snap(9, &[])));
    }

    #[test]
    fn canonical_order() {
        let a = ClusterSnapshot::new(
            1,
            "c".into(),
            vec![
                SnapshotGate {
                    name: "b".into(),
                    version: 1,
                    manifest_json: String::new(),
                },
                SnapshotGate {
                    name: "a".into(),
                    version: 1,
                    manifest_json: String::new(),
                },
            ],
            vec![],
        );
        assert_eq!(a.gates[0].name, "a");
    }
}
