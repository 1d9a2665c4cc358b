//! A cluster's desired-state snapshot as the fan-out index holds it: the gates
//! applying to the cluster (manifest JSON + version) and its overrides, stamped
//! with the cluster's `desired_revision`. Converted to protobuf in `grpc::convert`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

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
    /// The manifest as JSON text, shared by every cluster's snapshot of this
    /// gate version (one copy per replica, not one per connected spoke).
    pub manifest_json: Arc<str>,
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
    /// The cluster's spoke token hash when it was read, so a stream woken by
    /// a change can re-check its token without a query (`None`: unknown).
    pub token_hash: Option<Arc<[u8]>>,
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
            token_hash: None,
        }
    }

    /// The same snapshot, carrying the cluster's token hash.
    pub fn with_token_hash(mut self, hash: Vec<u8>) -> Self {
        self.token_hash = Some(hash.into());
        self
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
/// Clusters are read in batches (one read for many clusters), so a
/// fleet-wide change costs a few queries, not a few per connected spoke.
impl SnapshotSource for Service {
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>> {
        Box::pin(async move {
            let names = [cluster.to_string()];
            let mut loaded = self.load_many(&names).await?;
            Ok(loaded.pop().map_or(Desired::Gone, |(_, d)| d))
        })
    }

    fn load_many<'a>(
        &'a self,
        clusters: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<(String, Desired)>>> {
        Box::pin(async move {
            let batch = self.clusters_snapshot_inputs(clusters).await?;
            // Each gate's JSON is encoded once per batch, not once per cluster.
            let mut manifests: HashMap<(String, i64), Arc<str>> = HashMap::new();
            let mut found: HashMap<String, Desired> = HashMap::with_capacity(batch.len());
            for b in batch {
                let mut gates = Vec::with_capacity(b.inputs.gates.len());
                for g in b.inputs.gates {
                    let key = (g.name, g.version);
                    let manifest_json = match manifests.get(&key) {
                        Some(json) => json.clone(),
                        None => {
                            let json = serde_json::to_string(&g.manifest).map_err(|e| {
                                Error::Internal(format!("encoding gate '{}': {e}", key.0))
                            })?;
                            let json = intern_manifest(json);
                            manifests.insert(key.clone(), json.clone());
                            json
                        }
                    };
                    gates.push(SnapshotGate {
                        name: key.0,
                        version: u64::try_from(key.1).unwrap_or(0),
                        manifest_json,
                    });
                }
                let snapshot = ClusterSnapshot::new(
                    u64::try_from(b.inputs.desired_revision).unwrap_or(0),
                    b.inputs.cluster.name,
                    gates,
                    b.inputs.overrides,
                )
                .with_token_hash(b.token_hash);
                found.insert(
                    snapshot.cluster.clone(),
                    Desired::Snapshot(Arc::new(snapshot)),
                );
            }
            Ok(clusters
                .iter()
                .map(|c| (c.clone(), found.remove(c).unwrap_or(Desired::Gone)))
                .collect())
        })
    }
}

/// Every snapshot of the replica shares one copy of each distinct manifest
/// JSON: clusters connecting one by one read their snapshot alone, and a
/// per-spoke copy of every gate's JSON was ~1 KiB of hub memory per spoke.
static MANIFESTS: LazyLock<Mutex<HashSet<Arc<str>>>> = LazyLock::new(Mutex::default);

fn intern_manifest(json: String) -> Arc<str> {
    // The set has no invariant a panicking holder could break halfway.
    let mut set = MANIFESTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(shared) = set.get(json.as_str()) {
        return shared.clone();
    }
    // Forget manifests no snapshot holds any more (old gate versions); amortised
    // by only sweeping when the set has doubled since the last sweep.
    if set.len() >= 64 && set.len().is_power_of_two() {
        set.retain(|m| Arc::strong_count(m) > 1);
    }
    let shared: Arc<str> = json.into();
    set.insert(shared.clone());
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_manifests_share_one_copy() {
        let a = intern_manifest(r#"{"kind":"Gate","t":"intern"}"#.to_string());
        let b = intern_manifest(r#"{"kind":"Gate","t":"intern"}"#.to_string());
        let c = intern_manifest(r#"{"kind":"Gate","t":"other"}"#.to_string());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, r#"{"kind":"Gate","t":"other"}"#);
    }

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
                    manifest_json: "".into(),
                },
                SnapshotGate {
                    name: "a".into(),
                    version: 1,
                    manifest_json: "".into(),
                },
            ],
            vec![],
        );
        assert_eq!(a.gates[0].name, "a");
    }
}
