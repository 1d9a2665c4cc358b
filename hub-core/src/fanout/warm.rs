//! The warm start's map: every cluster's snapshot and credential hash, read once when a
//! replica starts. It lives inside the fan-out [`super::index::Index`], under its lock.

use std::collections::HashMap;
use std::sync::Arc;

use crate::auth::hashes_equal;
use crate::service::fleet::Snapshot;

/// Every cluster's snapshot and credential hash, read once when the replica starts
/// (`Fanout::warm_up`), so the spokes of a reconnect storm are signed in and sent their
/// first snapshot from memory instead of a query each batch. Kept in the index (under its
/// lock) because a change notification must drop what it names here in the same step as it
/// picks the connected clusters to re-read: a spoke either took its cluster's entry before
/// (then it is connected, and re-read) or finds none after (then it is read from the
/// database). An entry's snapshot goes to the cluster's first subscription.
#[derive(Debug, Default)]
pub(super) struct Warm {
    /// Cluster → its snapshot (until the first subscription takes it) and credential hash.
    clusters: HashMap<String, WarmEntry>,
    /// Credential hash → cluster.
    by_hash: HashMap<Arc<[u8]>, String>,
}

/// A cluster's snapshot (until its first subscription takes it) and credential hash.
type WarmEntry = (Option<Arc<Snapshot>>, Option<Arc<[u8]>>);

impl Warm {
    /// Drops `cluster`'s entry.
    pub(super) fn forget(&mut self, cluster: &str) {
        if let Some((_, Some(hash))) = self.clusters.remove(cluster)
            && self.by_hash.get(&hash).is_some_and(|c| c == cluster)
        {
            self.by_hash.remove(&hash);
        }
    }

    /// The entries of `snapshots`.
    pub(super) fn new(snapshots: Vec<Arc<Snapshot>>) -> Self {
        let mut warm = Warm::default();
        for s in snapshots {
            let (name, hash) = (s.cluster.clone(), s.token_hash.clone());
            if let Some(hash) = &hash {
                warm.by_hash.insert(hash.clone(), name.clone());
            }
            warm.clusters.insert(name, (Some(s), hash));
        }
        warm
    }

    /// Snapshots no subscription took.
    pub(super) fn snapshots_left(&self) -> usize {
        self.clusters.values().filter(|(s, _)| s.is_some()).count()
    }

    /// The cluster whose credential hash is `presented`: found by the hash, confirmed in
    /// constant time.
    pub(super) fn cluster_of(&self, presented: &[u8]) -> Option<String> {
        self.by_hash
            .get_key_value(presented)
            .filter(|(stored, _)| hashes_equal(stored, presented))
            .map(|(_, cluster)| cluster.clone())
    }

    /// `cluster`'s snapshot, once: the first subscription takes it.
    pub(super) fn take_snapshot(&mut self, cluster: &str) -> Option<Arc<Snapshot>> {
        self.clusters
            .get_mut(cluster)
            .and_then(|(snapshot, _)| snapshot.take())
    }
}
