//! Tests of the fan-out: subscriptions, publication, the listener's notices, the warm start.

use std::collections::HashMap;

use super::*;
use crate::service::fleet::{Snapshot, SnapshotGate};

/// An in-memory source whose state tests edit, counting reads.
#[derive(Default)]
struct MemSource {
    state: Mutex<HashMap<String, (u64, Vec<SnapshotGate>)>>,
    reads: Mutex<Vec<String>>,
    /// Sizes of the batched reads.
    batches: Mutex<Vec<usize>>,
}

impl MemSource {
    fn set(&self, cluster: &str, rev: u64, gates: &[(&str, u64)]) {
        let gates = desired::test_gates(gates);
        self.state
            .lock()
            .unwrap()
            .insert(cluster.into(), (rev, gates));
    }
    fn reads(&self) -> Vec<String> {
        std::mem::take(&mut *self.reads.lock().unwrap())
    }
    fn batches(&self) -> Vec<usize> {
        std::mem::take(&mut *self.batches.lock().unwrap())
    }
}

impl SnapshotSource for MemSource {
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>> {
        Box::pin(async move {
            self.reads.lock().unwrap().push(cluster.to_string());
            Ok(match self.state.lock().unwrap().get(cluster) {
                Some((rev, gates)) => Desired::Snapshot(Arc::new(Snapshot::new(
                    *rev,
                    cluster.into(),
                    gates.clone(),
                    vec![],
                ))),
                None => Desired::Gone,
            })
        })
    }

    /// Each cluster's credential hash is its name's bytes.
    fn load_all(&self) -> BoxFuture<'_, Result<Vec<Arc<Snapshot>>>> {
        Box::pin(async move {
            let state = self.state.lock().unwrap();
            Ok(state
                .iter()
                .map(|(c, (rev, gates))| {
                    let s = Snapshot::new(*rev, c.clone(), gates.clone(), vec![]);
                    Arc::new(s.with_token_hash(c.as_bytes().to_vec()))
                })
                .collect())
        })
    }

    fn load_many<'a>(
        &'a self,
        clusters: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<(String, Desired)>>> {
        self.batches.lock().unwrap().push(clusters.len());
        Box::pin(async move {
            let mut out = Vec::new();
            for c in clusters {
                out.push((c.clone(), self.load(c).await?));
            }
            Ok(out)
        })
    }
}

fn notice(rev: i64, clusters: Option<&[&str]>) -> ChangeNotice {
    ChangeNotice {
        revision: rev,
        clusters: clusters.map(|c| c.iter().map(|s| s.to_string()).collect()),
    }
}

#[tokio::test]
async fn only_listed_connected_clusters_are_read() {
    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[("g", 1)]);
    src.set("b", 1, &[("g", 1)]);
    let fanout = Fanout::new(src.clone());
    let mut a = fanout.subscribe("a").await.unwrap();
    let mut b = fanout.subscribe("b").await.unwrap();
    assert_eq!(a.borrow_and_update().revision(), 1);
    b.borrow_and_update();
    src.reads();

    src.set("a", 2, &[("g", 2)]);
    let failed = fanout.apply(&notice(2, Some(&["a", "elsewhere"]))).await;
    assert!(failed.is_empty());
    assert_eq!(src.reads(), vec!["a".to_string()]);
    assert!(a.has_changed().unwrap());
    assert_eq!(a.borrow_and_update().revision(), 2);
    assert!(!b.has_changed().unwrap());
}

#[tokio::test]
async fn null_clusters_and_resync_read_all_connected() {
    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[]);
    src.set("b", 1, &[]);
    let fanout = Fanout::new(src.clone());
    let _a = fanout.subscribe("a").await.unwrap();
    let _b = fanout.subscribe("b").await.unwrap();
    src.reads();
    fanout.apply(&notice(2, None)).await;
    let mut reads = src.reads();
    reads.sort();
    assert_eq!(reads, vec!["a".to_string(), "b".to_string()]);
    fanout.resync().await;
    assert_eq!(src.reads().len(), 2);
}

#[tokio::test]
async fn unchanged_state_wakes_nobody_and_deletion_is_gone() {
    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[("g", 1)]);
    let fanout = Fanout::new(src.clone());
    let mut a = fanout.subscribe("a").await.unwrap();
    a.borrow_and_update();
    fanout.apply(&notice(2, Some(&["a"]))).await;
    assert!(!a.has_changed().unwrap());
    src.state.lock().unwrap().remove("a");
    fanout.apply(&notice(3, Some(&["a"]))).await;
    assert_eq!(*a.borrow_and_update(), Desired::Gone);
}

#[tokio::test]
async fn subscriptions_arriving_together_are_read_together() {
    let src = Arc::new(MemSource::default());
    for c in ["a", "b", "c"] {
        src.set(c, 1, &[("g", 1)]);
    }
    let fanout = Fanout::new(src.clone());
    // Both loaders busy: later subscriptions queue and share a batch.
    fanout.first_reads.lock().unwrap().loaders = SUBSCRIBE_LOADERS;
    let (a, b, c) = (fanout.clone(), fanout.clone(), fanout.clone());
    let subs =
        tokio::spawn(
            async move { tokio::join!(a.subscribe("a"), b.subscribe("b"), c.subscribe("c")) },
        );
    while fanout.first_reads.lock().unwrap().waiting.len() < 3 {
        tokio::task::yield_now().await;
    }
    // A loader comes free and finds all three waiting.
    tokio::spawn(fanout.clone().read_waiting()).await.unwrap();
    let (a, b, c) = subs.await.unwrap();
    for rx in [a.unwrap(), b.unwrap(), c.unwrap()] {
        assert_eq!(rx.borrow().revision(), 1);
    }
    assert_eq!(src.batches(), vec![3], "not read in one batch");
}

/// A source whose batched reads each wait until a second read is under
/// way: a refresh reading batches one at a time never finishes.
struct PairedSource {
    inner: MemSource,
    both: tokio::sync::Barrier,
}

impl SnapshotSource for PairedSource {
    fn load<'a>(&'a self, cluster: &'a str) -> BoxFuture<'a, Result<Desired>> {
        self.inner.load(cluster)
    }

    fn load_many<'a>(
        &'a self,
        clusters: &'a [String],
    ) -> BoxFuture<'a, Result<Vec<(String, Desired)>>> {
        Box::pin(async move {
            self.both.wait().await;
            self.inner.load_many(clusters).await
        })
    }
}

#[tokio::test]
async fn refresh_reads_batches_concurrently_and_publishes_all() {
    let src = Arc::new(PairedSource {
        inner: MemSource::default(),
        both: tokio::sync::Barrier::new(2),
    });
    let names: Vec<String> = (0..READ_BATCH + 1).map(|i| format!("c{i:04}")).collect();
    for n in &names {
        src.inner.set(n, 2, &[("g", 1)]);
    }
    let fanout = Fanout::new(src.clone());
    let failed = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        fanout.refresh(names.clone()),
    )
    .await
    .expect("batches were read one at a time");
    assert!(failed.is_empty());
    let mut sizes = src.inner.batches();
    sizes.sort();
    assert_eq!(sizes, vec![1, READ_BATCH]);
}

#[tokio::test]
async fn a_warm_start_signs_in_and_subscribes_until_a_notice_names_the_cluster() {
    let src = Arc::new(MemSource::default());
    for c in ["a", "b", "c"] {
        src.set(c, 1, &[("g", 1)]);
    }
    let fanout = Fanout::new(src.clone());
    assert_eq!(fanout.warm_up().await.unwrap(), 3);
    assert_eq!(fanout.warm_cluster_of(b"a").as_deref(), Some("a"));
    assert_eq!(fanout.warm_cluster_of(b"nope"), None);

    // From memory: nothing read.
    let mut a = fanout.subscribe("a").await.unwrap();
    assert_eq!(a.borrow_and_update().revision(), 1);
    assert!(src.reads().is_empty());
    // A second stream of the cluster reads it (the warm snapshot went to the first).
    let _a2 = fanout.subscribe("a").await.unwrap();
    assert_eq!(src.reads(), vec!["a".to_string()]);

    // A notice naming a cluster (a rotated token, a deletion, a change) drops its
    // entry: its token is asked of the database and its state read.
    src.set("b", 2, &[("g", 2)]);
    fanout.apply(&notice(2, Some(&["b"]))).await;
    assert_eq!(fanout.warm_cluster_of(b"b"), None);
    assert_eq!(fanout.warm_cluster_of(b"c").as_deref(), Some("c"));
    let b = fanout.subscribe("b").await.unwrap();
    assert_eq!(b.borrow().revision(), 2);
    assert_eq!(src.reads(), vec!["b".to_string()]);
    // A connected cluster's entry goes too (its stream is re-read and re-checked).
    fanout.apply(&notice(3, Some(&["a"]))).await;
    assert_eq!(fanout.warm_cluster_of(b"a"), None);
    assert_eq!(fanout.cool(), 1, "c's snapshot was not taken");
    assert_eq!(fanout.warm_cluster_of(b"c"), None);
}

#[tokio::test]
async fn a_fleet_wide_notice_or_a_resync_ends_the_warm_start() {
    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[]);
    let fanout = Fanout::new(src.clone());
    fanout.warm_up().await.unwrap();
    fanout.apply(&notice(2, None)).await;
    assert_eq!(fanout.warm_cluster_of(b"a"), None);
    let _a = fanout.subscribe("a").await.unwrap();
    assert_eq!(src.reads(), vec!["a".to_string()]);

    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[]);
    let fanout = Fanout::new(src.clone());
    fanout.warm_up().await.unwrap();
    // The listener reconnected: notifications may have been lost.
    fanout.resync().await;
    assert_eq!(fanout.warm_cluster_of(b"a"), None);
    let _a = fanout.subscribe("a").await.unwrap();
    assert_eq!(src.reads(), vec!["a".to_string()]);
}

#[tokio::test]
async fn disconnected_clusters_are_forgotten() {
    let src = Arc::new(MemSource::default());
    src.set("a", 1, &[]);
    let fanout = Fanout::new(src.clone());
    let a = fanout.subscribe("a").await.unwrap();
    assert_eq!(fanout.subscribers("a"), 1);
    drop(a);
    src.reads();
    fanout.apply(&notice(2, Some(&["a"]))).await;
    assert!(src.reads().is_empty());
    assert!(fanout.connected().is_empty());
}
