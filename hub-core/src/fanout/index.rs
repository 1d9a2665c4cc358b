//! The per-replica index of connected clusters: one `watch` channel per
//! cluster holding the latest full [`Desired`] state. Updates use
//! `send_if_modified`, so an unchanged snapshot wakes no one and a slow
//! subscriber simply reads the newest value (no queue to overflow).

use std::collections::HashMap;

use tokio::sync::watch;

use super::desired::Desired;

/// Connected clusters and their published desired state.
#[derive(Debug, Default)]
pub struct Index {
    clusters: HashMap<String, watch::Sender<Desired>>,
}

impl Index {
    /// An empty index.
    pub fn new() -> Self {
        Self::default()
    }

    /// Subscribes to `cluster`'s desired state, registering the cluster as
    /// connected. A new cluster starts `Pending` until [`Index::publish`]
    /// delivers its first read; later subscribers see the current value.
    pub fn subscribe(&mut self, cluster: &str) -> watch::Receiver<Desired> {
        self.prune(cluster);
        match self.clusters.get(cluster) {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = watch::channel(Desired::Pending);
                self.clusters.insert(cluster.to_string(), tx);
                rx
            }
        }
    }

    /// Publishes a fresh read of `cluster`'s state. Returns whether subscribers
    /// were notified (false when nobody is subscribed, or when the value is not
    /// newer / not different: see [`Desired::should_replace_with`]).
    pub fn publish(&mut self, cluster: &str, new: Desired) -> bool {
        if self.prune(cluster) {
            return false;
        }
        let Some(tx) = self.clusters.get(cluster) else {
            return false;
        };
        tx.send_if_modified(|cur| {
            if cur.should_replace_with(&new) {
                *cur = new;
                true
            } else {
                false
            }
        })
    }

    /// The clusters with at least one live subscriber, sorted.
    pub fn connected(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .clusters
            .iter()
            .filter(|(_, tx)| tx.receiver_count() > 0)
            .map(|(name, _)| name.clone())
            .collect();
        names.sort();
        names
    }

    /// Whether `cluster` has a live subscriber on this replica.
    pub fn is_connected(&self, cluster: &str) -> bool {
        self.clusters
            .get(cluster)
            .is_some_and(|tx| tx.receiver_count() > 0)
    }

    /// Live subscribers of `cluster` (connections of its spoke to this replica).
    pub fn subscribers(&self, cluster: &str) -> usize {
        self.clusters
            .get(cluster)
            .map_or(0, |tx| tx.receiver_count())
    }

    /// Drops `cluster`'s channel if nobody listens any more (its value would be
    /// stale by the time someone subscribes again). Returns whether it did.
    fn prune(&mut self, cluster: &str) -> bool {
        let dead = self
            .clusters
            .get(cluster)
            .is_some_and(|tx| tx.receiver_count() == 0);
        if dead {
            self.clusters.remove(cluster);
        }
        dead
    }

    /// Drops every channel without subscribers; returns how many remain.
    pub fn prune_all(&mut self) -> usize {
        self.clusters.retain(|_, tx| tx.receiver_count() > 0);
        self.clusters.len()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use chrono::{TimeZone, Utc};
    use fleetgate_policy::{GateState, Override};

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
}
