//! The per-replica index of connected clusters: one small channel per cluster
//! ([`Receiver`]) holding the latest full [`Desired`] state. An unchanged
//! snapshot wakes no one and a slow subscriber simply reads the newest value
//! (no queue to overflow).
//!
//! Not a `tokio::sync::watch`: a watch channel is ~360 bytes (eight `Notify` for
//! its receivers' wake-ups), kept for every connected cluster, and waiting on it
//! takes a `changed()` future in every stream. Here a cluster's channel is its
//! value, a version and the wakers of the streams waiting on it, and a stream
//! polls it ([`Receiver::poll_changed`]) with no future of its own (the channel
//! and its receivers: `channel.rs`).

use std::collections::HashMap;
use std::sync::Arc;

use super::channel::Channel;
pub use super::channel::{Closed, Receiver, Ref};
use super::desired::Desired;
use super::warm::Warm;
use crate::service::fleet::Snapshot;

/// Connected clusters and their published desired state.
#[derive(Debug, Default)]
pub struct Index {
    clusters: HashMap<String, Arc<Channel>>,
    /// Every cluster's state as read when the replica started ([`Index::warm`]).
    warm: Warm,
}

impl Drop for Index {
    fn drop(&mut self) {
        for channel in self.clusters.values() {
            channel.close();
        }
    }
}

impl Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes to `cluster`'s desired state, registering the cluster as
    /// connected. A new cluster starts `Pending` until [`Index::publish`]
    /// delivers its first read; later subscribers see the current value.
    pub fn subscribe(&mut self, cluster: &str) -> Receiver {
        self.prune(cluster);
        match self.clusters.get(cluster) {
            Some(channel) => channel.subscribe(),
            None => {
                let channel = Arc::new(Channel::new());
                let rx = channel.subscribe();
                self.clusters.insert(cluster.to_string(), channel);
                rx
            }
        }
    }

    /// Publishes a fresh read of `cluster`'s state. Returns whether subscribers
    /// were notified (false when nobody is subscribed, or when the value is not
    /// newer / not different: see [`Desired::should_replace_with`]).
    pub fn publish(&mut self, cluster: &str, new: Desired) -> bool {
        // One lookup per cluster of a refresh (10,000 for a fleet-wide change); a
        // channel nobody listens to any more is dropped ([`Index::prune`]).
        let Some(channel) = self.clusters.get(cluster) else {
            return false;
        };
        if channel.receivers() > 0 {
            return channel.publish(new);
        }
        self.clusters.remove(cluster);
        false
    }

    /// Wakes every receiver waiting for a change, with no change: each looks again at
    /// what else it waits for (the replica's drain, which every spoke stream checks
    /// when woken, instead of a wait of its own per stream).
    pub fn wake_all(&self) {
        for channel in self.clusters.values() {
            channel.wake();
        }
    }

    /// The clusters with at least one live subscriber, sorted.
    pub fn connected(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .clusters
            .iter()
            .filter(|(_, channel)| channel.receivers() > 0)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// Whether `cluster` has a live subscriber on this replica.
    pub fn is_connected(&self, cluster: &str) -> bool {
        self.subscribers(cluster) > 0
    }

    /// Live subscribers of `cluster` (connections of its spoke to this replica).
    pub fn subscribers(&self, cluster: &str) -> usize {
        self.clusters.get(cluster).map_or(0, |c| c.receivers())
    }

    /// Drops `cluster`'s channel if nobody listens any more (its value would be
    /// stale by the time someone subscribes again). Returns whether it did.
    fn prune(&mut self, cluster: &str) -> bool {
        let dead = self
            .clusters
            .get(cluster)
            .is_some_and(|c| c.receivers() == 0);
        if dead {
            self.clusters.remove(cluster);
        }
        dead
    }

    /// Drops every channel without subscribers; returns how many remain.
    pub fn prune_all(&mut self) -> usize {
        self.clusters.retain(|_, c| c.receivers() > 0);
        self.clusters.len()
    }

    /// Keeps `snapshots` (every cluster's, read after the replica's change listener
    /// listened) until [`Index::forget_warm`]: see [`Warm`].
    pub fn warm(&mut self, snapshots: Vec<Arc<Snapshot>>) {
        self.warm = Warm::new(snapshots);
    }

    /// Drops the warm entries of `clusters` (`None`: all of them): a change notification
    /// named them, or notifications may have been lost.
    pub fn forget_warm(&mut self, clusters: Option<&[String]>) {
        match clusters {
            None => self.warm = Warm::default(),
            Some(names) => names.iter().for_each(|name| self.warm.forget(name)),
        }
    }

    /// Warm snapshots no subscription took.
    pub fn warm_left(&self) -> usize {
        self.warm.snapshots_left()
    }

    /// The cluster whose credential hash is `presented`, if the warm entries know it:
    /// found by the hash, confirmed in constant time (as the database check).
    pub fn warm_cluster_of(&self, presented: &[u8]) -> Option<String> {
        self.warm.cluster_of(presented)
    }

    /// [`Index::subscribe`], with the cluster's warm snapshot published if the
    /// subscription is the cluster's first (nothing published yet): then the second
    /// value is true and nothing needs to be read.
    pub fn subscribe_warm(&mut self, cluster: &str) -> (Receiver, bool) {
        let rx = self.subscribe(cluster);
        let published = match (self.warm.take_snapshot(cluster), self.clusters.get(cluster)) {
            (Some(s), Some(channel)) => channel.publish_first(Desired::Snapshot(s)),
            _ => false,
        };
        (rx, published)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{TimeZone, Utc};
    use fleetgate_policy::{GateState, Override};

    use std::task::{Context, Poll, Waker};

    use super::*;
    use crate::service::fleet::{Snapshot, SnapshotGate};

    fn mk_gate(name: &str, version: u64) -> SnapshotGate {
        SnapshotGate {
            name: name.into(),
            version,
            manifest_json: format!("{{\"metadata\":{{\"name\":\"{name}\"}}}}").into(),
            release: None,
            waiting: None,
            opening_fence: None,
            calendars: std::sync::Arc::from([]),
        }
    }

    fn mk_override(id: &str, gate: &str) -> Override {
        let at = Utc.with_ymd_and_hms(2026, 11, 27, 7, 0, 0).unwrap();
        Override {
            id: id.into(),
            gate: gate.into(),
            state: GateState::Open,
            starts_at: at,
            expires_at: None,
            created_at: at,
            actor: "alice".into(),
            reason: "hotfix".into(),
        }
    }

    fn mk_snap(cluster: &str, rev: u64, gates: Vec<SnapshotGate>, ov: Vec<Override>) -> Desired {
        Desired::Snapshot(Arc::new(Snapshot::new(rev, cluster.into(), gates, ov)))
    }

    #[test]
    fn first_read_reaches_subscriber() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        assert_eq!(*rx.borrow_and_update(), Desired::Pending);
        assert!(idx.publish("c1", mk_snap("c1", 3, vec![mk_gate("g", 1)], vec![])));
        assert!(rx.has_changed().unwrap());
        assert_eq!(rx.borrow_and_update().revision(), 3);
    }

    #[test]
    fn unchanged_snapshot_is_not_pushed() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        idx.publish("c1", mk_snap("c1", 3, vec![mk_gate("g", 1)], vec![]));
        rx.borrow_and_update();
        assert!(!idx.publish("c1", mk_snap("c1", 3, vec![mk_gate("g", 1)], vec![])));
        assert!(!rx.has_changed().unwrap());
    }

    #[test]
    fn stale_read_never_overwrites_newer() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        idx.publish("c1", mk_snap("c1", 5, vec![mk_gate("g", 2)], vec![]));
        rx.borrow_and_update();
        assert!(!idx.publish("c1", mk_snap("c1", 4, vec![mk_gate("g", 1)], vec![])));
        assert!(!rx.has_changed().unwrap());
        assert_eq!(rx.borrow().revision(), 5);
    }

    #[test]
    fn override_change_is_pushed_and_only_the_latest_is_seen() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        idx.publish("c1", mk_snap("c1", 1, vec![mk_gate("g", 1)], vec![]));
        idx.publish(
            "c1",
            mk_snap("c1", 2, vec![mk_gate("g", 1)], vec![mk_override("o1", "g")]),
        );
        idx.publish(
            "c1",
            mk_snap(
                "c1",
                3,
                vec![mk_gate("g", 1)],
                vec![mk_override("o1", "g"), mk_override("o2", "g")],
            ),
        );
        assert!(rx.has_changed().unwrap());
        match &*rx.borrow_and_update() {
            Desired::Snapshot(s) => {
                assert_eq!(s.revision, 3);
                assert_eq!(s.overrides.len(), 2);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn clusters_are_isolated() {
        let mut idx = Index::new();
        let mut a = idx.subscribe("a");
        let mut b = idx.subscribe("b");
        a.borrow_and_update();
        b.borrow_and_update();
        idx.publish("a", mk_snap("a", 1, vec![mk_gate("g", 1)], vec![]));
        assert!(a.has_changed().unwrap());
        assert!(!b.has_changed().unwrap());
    }

    #[test]
    fn unconnected_clusters_are_ignored() {
        let mut idx = Index::new();
        assert!(!idx.publish("nobody", mk_snap("nobody", 1, vec![], vec![])));
        assert!(idx.connected().is_empty());
    }

    #[test]
    fn second_connection_shares_state_and_disconnect_prunes() {
        let mut idx = Index::new();
        let rx1 = idx.subscribe("c1");
        idx.publish("c1", mk_snap("c1", 7, vec![], vec![]));
        let rx2 = idx.subscribe("c1");
        assert_eq!(rx2.borrow().revision(), 7);
        assert_eq!(idx.subscribers("c1"), 2);
        drop(rx1);
        assert!(idx.is_connected("c1"));
        drop(rx2);
        assert!(!idx.is_connected("c1"));
        assert_eq!(idx.connected(), Vec::<String>::new());
        // A publish for a cluster whose subscribers are gone drops its channel;
        // a later subscriber starts from Pending, not from a stale snapshot.
        assert!(!idx.publish("c1", mk_snap("c1", 8, vec![], vec![])));
        let rx3 = idx.subscribe("c1");
        assert_eq!(*rx3.borrow(), Desired::Pending);
    }

    #[test]
    fn deleted_cluster_ends_connections() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        idx.publish("c1", mk_snap("c1", 7, vec![], vec![]));
        rx.borrow_and_update();
        assert!(idx.publish("c1", Desired::Gone));
        assert_eq!(*rx.borrow_and_update(), Desired::Gone);
    }

    #[test]
    fn connected_lists_live_clusters_sorted() {
        let mut idx = Index::new();
        let _b = idx.subscribe("b");
        let _a = idx.subscribe("a");
        let c = idx.subscribe("c");
        drop(c);
        assert_eq!(idx.connected(), vec!["a".to_string(), "b".to_string()]);
        assert_eq!(idx.prune_all(), 2);
    }

    /// Counts a waker's wake-ups.
    struct Count(std::sync::atomic::AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// A waker that counts its wake-ups, and its count.
    fn counting_waker() -> (Waker, Arc<Count>) {
        let count = Arc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
        (Waker::from(count.clone()), count)
    }

    fn wakes(n: &Count) -> usize {
        n.0.load(std::sync::atomic::Ordering::SeqCst)
    }

    #[test]
    fn a_waiting_receiver_is_woken_by_a_change_only() {
        let mut idx = Index::new();
        let mut rx = idx.subscribe("c1");
        let (waker, woken) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(rx.poll_changed(&mut cx).is_pending());
        // Polled again while waiting: still one waker kept, not two.
        assert!(rx.poll_changed(&mut cx).is_pending());
        assert!(!idx.publish("c1", Desired::Pending));
        assert_eq!(wakes(&woken), 0);
        assert!(idx.publish("c1", mk_snap("c1", 3, vec![], vec![])));
        assert_eq!(wakes(&woken), 1);
        // Ready until read; the value read marks it seen.
        assert_eq!(rx.poll_changed(&mut cx), Poll::Ready(Ok(())));
        assert_eq!(rx.borrow_and_update().revision(), 3);
        assert!(rx.poll_changed(&mut cx).is_pending());
        assert!(idx.publish("c1", mk_snap("c1", 4, vec![], vec![])));
        assert_eq!(wakes(&woken), 2);
    }

    #[test]
    fn wake_all_wakes_waiting_receivers_without_a_change() {
        let mut idx = Index::new();
        let mut a = idx.subscribe("a");
        let mut b = idx.subscribe("b");
        let (waker, woken) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        assert!(a.poll_changed(&mut cx).is_pending());
        assert!(b.poll_changed(&mut cx).is_pending());
        idx.wake_all();
        assert_eq!(wakes(&woken), 2);
        assert!(!a.has_changed().unwrap());
        assert!(a.poll_changed(&mut cx).is_pending());
    }

    #[test]
    fn a_dropped_receiver_leaves_no_waker_and_the_index_gone_closes() {
        let mut idx = Index::new();
        let mut rx1 = idx.subscribe("c1");
        let mut rx2 = idx.subscribe("c1");
        let (waker1, woken1) = counting_waker();
        let (waker2, woken2) = counting_waker();
        assert!(
            rx1.poll_changed(&mut Context::from_waker(&waker1))
                .is_pending()
        );
        assert!(
            rx2.poll_changed(&mut Context::from_waker(&waker2))
                .is_pending()
        );
        drop(rx1);
        assert!(idx.publish("c1", mk_snap("c1", 1, vec![], vec![])));
        assert_eq!((wakes(&woken1), wakes(&woken2)), (0, 1));
        rx2.borrow_and_update();
        assert!(
            rx2.poll_changed(&mut Context::from_waker(&waker2))
                .is_pending()
        );
        drop(idx);
        assert_eq!(wakes(&woken2), 2);
        assert_eq!(rx2.has_changed(), Err(Closed));
        assert_eq!(
            rx2.poll_changed(&mut Context::from_waker(&waker2)),
            Poll::Ready(Err(Closed))
        );
    }
}
