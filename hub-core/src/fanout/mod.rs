//! Change fan-out on one hub replica: connected spokes subscribe to their
//! cluster in the [`Index`]; change notifications (see `listener`) name the
//! clusters to re-read, and only those connected here are recomputed and
//! published. The snapshot source is a trait so the core is testable without SQL.

mod channel;
mod desired;
pub mod index;
pub mod listener;
mod source;
mod warm;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use futures::future::BoxFuture;
use tokio::sync::{oneshot, watch};

pub use self::desired::Desired;
pub use self::index::Index;
use crate::Result;
use crate::db::revision::ChangeNotice;
use crate::service::fleet::Snapshot;

/// Clusters per batched snapshot read during a refresh; batches are published
/// as they arrive, so streams already send while the next batch is read. At
/// 10,000 spokes 500 beat 250 and 2,000 (p99 flip latency, fleetgate-bench).
const READ_BATCH: usize = 500;

/// Batched first reads for new subscriptions running at once (each reads up
/// to [`READ_BATCH`] clusters in one fleet read).
const SUBSCRIBE_LOADERS: usize = 2;

/// Batches of one refresh read at once. A fleet-wide change at 10,000
/// clusters is 20 batches; read one after another they were ~95 % of the
/// refresh (the `fan-out refresh` debug line, fleetgate-bench), each one a
/// database query on one backend. Each batch is published as soon as it is
/// read, in whatever order they finish: a published value only moves forward
/// ([`Desired::should_replace_with`]). Well below the pool's default 20.
const REFRESH_READERS: usize = 4;

/// Reads a cluster's current desired state (the database in production).
pub trait SnapshotSource: Send + Sync + 'static {
    /// The cluster's desired state now; `Desired::Gone` if it does not exist.
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>>;

    /// The desired state of each of `clusters` (in that order). Sources that
    /// can read many clusters at once override this; by default it reads one
    /// by one.
    fn load_many<'a>(
        &'a self,
        clusters: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<(String, Desired)>>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(clusters.len());
            for c in clusters {
                out.push((c.clone(), self.load(c).await?));
            }
            Ok(out)
        })
    }

    /// Every cluster's snapshot, for [`Fanout::warm_up`]; none by default (a source
    /// that cannot read the whole fleet at once warms nothing).
    fn load_all(&self) -> BoxFuture<'_, Result<Vec<Arc<Snapshot>>>> {
        Box::pin(async { Ok(Vec::new()) })
    }
}

/// A batch, its read's result and how long the read took.
type BatchRead<'a> = (
    &'a [String],
    Result<Vec<(String, Desired)>>,
    std::time::Duration,
);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Neither the index nor the queue has invariants a panicking holder
    // could break halfway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The replica's fan-out: index + source + a counter of observed changes.
#[derive(Clone)]
pub struct Fanout {
    index: Arc<Mutex<Index>>,
    source: Arc<dyn SnapshotSource>,
    /// Bumped on every notification and resync; the fleet watchers (admin
    /// `WatchFleet`) wake on it.
    changes: Arc<watch::Sender<u64>>,
    /// New subscriptions waiting for their first read.
    first_reads: Arc<Mutex<FirstReads>>,
}

/// Subscriptions waiting for their first read, and how many loaders run. A
/// reconnect storm brings thousands of spokes at once; one fleet read per
/// batch of them instead of one per spoke (fleetgate-bench storm).
#[derive(Default)]
struct FirstReads {
    waiting: Vec<(String, oneshot::Sender<bool>)>,
    loaders: usize,
}

impl std::fmt::Debug for Fanout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fanout").finish_non_exhaustive()
    }
}

impl Fanout {
    /// A fan-out reading snapshots from `source`.
    pub fn new(source: Arc<dyn SnapshotSource>) -> Self {
        Self {
            index: Arc::new(Mutex::new(Index::new())),
            source,
            changes: Arc::new(watch::channel(0).0),
            first_reads: Arc::default(),
        }
    }

    fn index(&self) -> MutexGuard<'_, Index> {
        lock(&self.index)
    }

    /// Subscribes a connection to `cluster` and reads its state once, so the
    /// receiver holds a snapshot (or `Gone`) when this returns. Subscribing
    /// before reading means a change committed meanwhile is not lost: its
    /// notification finds the cluster connected and re-reads it. Subscriptions
    /// arriving together are read together (batched, see [`FirstReads`]); one
    /// whose batch failed is read alone, so its error is its own.
    ///
    /// A cluster's first subscription after [`Fanout::warm_up`] takes the cluster's
    /// snapshot read then (still valid: no notification named the cluster since) and
    /// reads nothing.
    pub async fn subscribe(&self, cluster: &str) -> Result<index::Receiver> {
        let (rx, warm) = self.index().subscribe_warm(cluster);
        if warm {
            return Ok(rx);
        }
        let (tx, read) = oneshot::channel();
        let start_loader = {
            let mut q = lock(&self.first_reads);
            q.waiting.push((cluster.to_string(), tx));
            let start = q.loaders < SUBSCRIBE_LOADERS;
            q.loaders += usize::from(start);
            start
        };
        if start_loader {
            tokio::spawn(self.clone().read_waiting());
        }
        if read.await != Ok(true) {
            let desired = self.source.load(cluster).await?;
            self.index().publish(cluster, desired);
        }
        Ok(rx)
    }

    /// Reads waiting subscriptions in batches until none is left.
    async fn read_waiting(self) {
        /// Counts the loader out however it ends.
        struct Running(Arc<Mutex<FirstReads>>);
        impl Drop for Running {
            fn drop(&mut self) {
                lock(&self.0).loaders -= 1;
            }
        }
        let _running = Running(self.first_reads.clone());
        loop {
            let batch: Vec<(String, oneshot::Sender<bool>)> = {
                let mut q = lock(&self.first_reads);
                let n = q.waiting.len().min(READ_BATCH);
                q.waiting.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            let names: Vec<String> = batch
                .iter()
                .map(|(c, _)| c.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let ok = match self.source.load_many(&names).await {
                Ok(loaded) => {
                    let mut index = self.index();
                    for (cluster, desired) in loaded {
                        index.publish(&cluster, desired);
                    }
                    true
                }
                Err(e) => {
                    tracing::warn!(clusters = names.len(), error = %e, "batched first read failed; reading one by one");
                    false
                }
            };
            for (_, tx) in batch {
                let _ = tx.send(ok);
            }
        }
    }

    /// Reads every cluster's snapshot (one fleet read) and keeps it, with the cluster's
    /// credential hash, until a change notification names the cluster or [`Fanout::cool`]
    /// (see `index::Warm`): a replica that starts into a reconnect storm then signs the
    /// spokes in ([`Fanout::warm_cluster_of`]) and sends their first snapshots from
    /// memory. Only once the replica's change listener listens (and by the task that
    /// applies its notifications, so none is applied before these are kept). Returns how
    /// many clusters were read.
    pub async fn warm_up(&self) -> Result<usize> {
        let all = self.source.load_all().await?;
        let n = all.len();
        self.index().warm(all);
        Ok(n)
    }

    /// Drops what [`Fanout::warm_up`] kept; returns how many snapshots no spoke took.
    pub fn cool(&self) -> usize {
        let mut index = self.index();
        let left = index.warm_left();
        index.forget_warm(None);
        left
    }

    /// The cluster whose spoke token hashes to `presented`, if [`Fanout::warm_up`] read it
    /// and no change notification named the cluster since; `None`: ask the database.
    pub fn warm_cluster_of(&self, presented: &[u8]) -> Option<String> {
        self.index().warm_cluster_of(presented)
    }

    /// Whether `cluster` has connections on this replica, and how many.
    pub fn subscribers(&self, cluster: &str) -> usize {
        self.index().subscribers(cluster)
    }

    /// Clusters connected to this replica.
    pub fn connected(&self) -> Vec<String> {
        self.index().connected()
    }

    /// Wakes every subscriber waiting for a change, with no change (see
    /// [`Index::wake_all`]).
    pub fn wake_all(&self) {
        self.index().wake_all();
    }

    /// A receiver that changes whenever a notification or resync was handled.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Handles one change notification: re-reads the named clusters that are
    /// connected here (all connected ones for `clusters: null`). Returns the
    /// clusters whose read failed, to retry.
    pub async fn apply(&self, notice: &ChangeNotice) -> Vec<String> {
        let targets = {
            let mut index = self.index();
            // In the same step as the connected clusters are picked: see `index::Warm`.
            index.forget_warm(notice.clusters.as_deref());
            match &notice.clusters {
                None => index.connected(),
                Some(names) => names
                    .iter()
                    .filter(|n| index.is_connected(n))
                    .cloned()
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
            }
        };
        let failed = self.refresh(targets).await;
        self.changes.send_modify(|n| *n += 1);
        failed
    }

    /// Re-reads every connected cluster (after the listener reconnected, when
    /// notifications may have been lost). Returns the clusters that failed.
    /// Drops every warm entry (the notifications that would have dropped some may be
    /// the lost ones).
    pub async fn resync(&self) -> Vec<String> {
        let targets = {
            let mut index = self.index();
            index.forget_warm(None);
            index.connected()
        };
        let failed = self.refresh(targets).await;
        self.changes.send_modify(|n| *n += 1);
        failed
    }

    /// One batch of a refresh: the batch, what was read, how long it took.
    async fn read_batch<'a>(&'a self, batch: &'a [String]) -> BatchRead<'a> {
        let started = std::time::Instant::now();
        let loaded = self.source.load_many(batch).await;
        (batch, loaded, started.elapsed())
    }

    /// Reads and publishes `clusters` in batches, [`REFRESH_READERS`] at a
    /// time; returns those whose read failed.
    pub async fn refresh(&self, clusters: Vec<String>) -> Vec<String> {
        let started = std::time::Instant::now();
        let mut failed = Vec::new();
        let mut read_time = std::time::Duration::ZERO;
        let mut published = 0usize;
        // Collected first: a closure held across the awaits below makes the
        // future not `Send` for every lifetime (rustc's higher-ranked check).
        let batches: Vec<_> = clusters
            .chunks(READ_BATCH)
            .map(|batch| self.read_batch(batch))
            .collect();
        let mut reads = futures::stream::iter(batches).buffer_unordered(REFRESH_READERS);
        while let Some((batch, loaded, took)) = reads.next().await {
            read_time += took;
            match loaded {
                Ok(loaded) => {
                    let mut index = self.index();
                    for (cluster, desired) in loaded {
                        published += usize::from(index.publish(&cluster, desired));
                    }
                }
                Err(e) => {
                    tracing::warn!(clusters = batch.len(), error = %e, "reading snapshots failed; will retry");
                    failed.extend_from_slice(batch);
                }
            }
        }
        self.index().prune_all();
        tracing::debug!(
            clusters = clusters.len(),
            published,
            failed = failed.len(),
            // Summed over batches; they overlap, so it can exceed total_ms.
            read_ms = read_time.as_secs_f64() * 1e3,
            total_ms = started.elapsed().as_secs_f64() * 1e3,
            "fan-out refresh"
        );
        failed
    }
}

#[cfg(test)]
mod tests;
