//! A cluster's snapshot state on the change streams: its spoke started or stopped persisting
//! the snapshot it enforces (`snapshotPersistence.state`), or the hub started or stopped
//! holding it closed because its snapshot is over its budget (`snapshotOverBudget`). Only
//! those transitions are announced ([`SnapshotBrief::announced`]), not each new persisted
//! revision a report brings. Not audited: a spoke's state, not a person's action (as its
//! connection and its report problems).

use std::collections::BTreeSet;

use fleetgate_api_types::{SnapshotOverBudget, SnapshotPersistence};

use crate::service::fleet::{FleetView, SnapshotBrief};

/// A cluster's snapshot state now, and what it was announced as before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotStateChange {
    pub cluster: String,
    /// What its spoke reported last (`None`: nothing, or a spoke that predates it).
    pub persistence: Option<SnapshotPersistence>,
    /// Set while the hub holds the cluster closed for a snapshot over its budget.
    pub over_budget: Option<SnapshotOverBudget>,
    /// The persistence state before (`None`: not reported).
    pub previous_persistence_state: Option<String>,
    /// Whether it was over its budget before.
    pub was_over_budget: bool,
}

/// The registered clusters (in `next`) whose announced snapshot state differs between
/// `prev` and `next` (a cluster missing from a view has none), for the clusters `wanted`
/// lets through. The initial view: every cluster with a snapshot state.
pub(super) fn diff(
    prev: &FleetView,
    next: &FleetView,
    wanted: impl Fn(&str) -> bool,
) -> Vec<SnapshotStateChange> {
    let none = SnapshotBrief::default();
    let clusters: BTreeSet<&String> = (next.snapshot_states.keys())
        .chain(prev.snapshot_states.keys())
        .collect();
    clusters
        .into_iter()
        .filter(|c| wanted(c) && next.spokes.contains_key(*c))
        .filter_map(|cluster| {
            let before = prev.snapshot_states.get(cluster).unwrap_or(&none);
            let now = next.snapshot_states.get(cluster).unwrap_or(&none);
            (before.announced() != now.announced()).then(|| SnapshotStateChange {
                cluster: cluster.clone(),
                persistence: now.persistence.clone(),
                over_budget: now.over_budget.clone(),
                previous_persistence_state: before.announced().0.map(str::to_string),
                was_over_budget: before.over_budget.is_some(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::Utc;

    use super::*;
    use crate::service::fleet::SpokeState;

    fn persistence(state: &str, revision: u64) -> SnapshotPersistence {
        SnapshotPersistence {
            state: state.into(),
            persisted_revision: revision,
            stored_bytes: 10,
            json_bytes: 20,
            config_maps: 1,
            error: (state == "failing").then(|| format!("forbidden at {revision}")),
            failing_revision: None,
            failing_since: None,
        }
    }

    fn over(bytes: u64) -> SnapshotOverBudget {
        SnapshotOverBudget {
            bytes,
            budget: 16,
            revision: 7,
            since: Utc::now(),
        }
    }

    /// A view of registered clusters `a`, `b`, `c` with these snapshot states.
    fn view(
        states: &[(
            &str,
            Option<SnapshotPersistence>,
            Option<SnapshotOverBudget>,
        )],
    ) -> FleetView {
        let mut v = FleetView::default();
        for c in ["a", "b", "c"] {
            v.spokes.insert(
                c.into(),
                SpokeState {
                    connected: true,
                    replica: None,
                    spoke_version: None,
                },
            );
        }
        for (c, persistence, over_budget) in states {
            v.snapshot_states.insert(
                (*c).into(),
                SnapshotBrief {
                    persistence: persistence.clone(),
                    over_budget: over_budget.clone(),
                },
            );
        }
        v
    }

    fn seen(changes: &[SnapshotStateChange]) -> Vec<String> {
        changes
            .iter()
            .map(|c| {
                format!(
                    "{} {}->{} over {}->{}",
                    c.cluster,
                    c.previous_persistence_state.as_deref().unwrap_or("-"),
                    c.persistence.as_ref().map_or("-", |p| p.state.as_str()),
                    c.was_over_budget,
                    c.over_budget.is_some(),
                )
            })
            .collect()
    }

    #[test]
    fn only_transitions_are_announced_not_each_report() {
        let first = view(&[
            ("a", Some(persistence("persisted", 1)), None),
            ("b", Some(persistence("persisted", 1)), None),
        ]);
        // The initial view: every cluster with a state.
        assert_eq!(
            seen(&diff(&FleetView::default(), &first, |_| true)),
            [
                "a -->persisted over false->false",
                "b -->persisted over false->false"
            ]
        );
        // New revisions persisted, another error while failing, another size over the
        // budget: nothing to announce.
        let second = view(&[
            ("a", Some(persistence("persisted", 2)), None),
            ("b", Some(persistence("persisted", 2)), None),
        ]);
        assert!(diff(&first, &second, |_| true).is_empty());
        let failing = view(&[
            ("a", Some(persistence("failing", 2)), None),
            ("b", Some(persistence("persisted", 2)), Some(over(20))),
        ]);
        let changes = diff(&second, &failing, |_| true);
        assert_eq!(
            seen(&changes),
            [
                "a persisted->failing over false->false",
                "b persisted->persisted over false->true"
            ]
        );
        assert_eq!(
            changes[0].persistence.as_ref().unwrap().error.as_deref(),
            Some("forbidden at 2")
        );
        assert_eq!(changes[1].over_budget.as_ref().unwrap().bytes, 20);
        let still = view(&[
            ("a", Some(persistence("failing", 3)), None),
            ("b", Some(persistence("persisted", 3)), Some(over(30))),
        ]);
        assert!(diff(&failing, &still, |_| true).is_empty());
        // Recovered, and filtered per watcher.
        let back = view(&[
            ("a", Some(persistence("persisted", 3)), None),
            ("b", Some(persistence("persisted", 3)), None),
        ]);
        assert_eq!(
            seen(&diff(&still, &back, |c| c == "b")),
            ["b persisted->persisted over true->false"]
        );
        // A cluster whose state went (a spoke that predates it) is announced; a deleted
        // cluster is not.
        let mut gone = view(&[("b", Some(persistence("persisted", 3)), None)]);
        gone.spokes.remove("c");
        let mut before = back.clone();
        before.snapshot_states.insert(
            "c".into(),
            SnapshotBrief {
                persistence: Some(persistence("persisted", 3)),
                over_budget: None,
            },
        );
        assert_eq!(
            seen(&diff(&before, &gone, |_| true)),
            ["a persisted->- over false->false"]
        );
    }
}
