//! The whole fleet at one instant as the change streams (admin `WatchFleet`,
//! the dashboard's events) see it: every (gate, cluster) state, live
//! overrides, spoke connections, held counts, each gate's newest rollout and each cluster's
//! snapshot state. Watchers diff two views to produce events.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use fleetgate_policy::GateState;

pub use super::briefs::{FeedBrief, ReportProblemBrief, SnapshotBrief};
use super::evaluate::evaluate;
use super::inputs::FleetInputs;
use crate::Result;
use crate::service::types::OverrideRecord;

/// One gate's state on one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOnCluster {
    pub state: GateState,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
}

/// A cluster's spoke connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpokeState {
    pub connected: bool,
    pub replica: Option<String>,
    pub spoke_version: Option<String>,
}

/// A cluster's held objects as the change streams compare them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeldSet {
    /// Held by fleetgate.
    pub held: u32,
    /// Held by a person's own mark.
    pub by_person: u32,
    /// Selected by gates, but the spoke may not hold their kind (HoldNotPermitted).
    pub not_permitted: u32,
    /// Changes whenever the set does (which objects, by which gates), even
    /// when the counts stay the same.
    pub digest: String,
}

/// What closed warn-mode gates would do on a cluster if enforced (nothing is held).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct WouldCounts {
    /// Objects they would suspend.
    pub would_suspend: u32,
    /// Of those, objects whose newer revision they would hold.
    pub would_hold: u32,
    /// Objects inside Kustomizations warn-mode holdObjects gates would hold.
    pub would_hold_objects: u32,
    /// Of those, objects whose Kustomization applied a newer revision since.
    pub would_hold_objects_waiting: u32,
}

/// A gate's newest rollout as the change streams compare it.
pub type RolloutSummary = crate::db::rollouts::RolloutSummaryRow;

/// The fleet at `at`.
#[derive(Debug, Clone, Default)]
pub struct FleetView {
    pub at: DateTime<Utc>,
    /// Keyed by (gate, cluster).
    pub gates: BTreeMap<(String, String), GateOnCluster>,
    /// Live overrides (active now or starting later) by id.
    pub overrides: BTreeMap<String, OverrideRecord>,
    /// Fleet freezes in force (or starting later) by id.
    pub freezes: BTreeMap<String, crate::db::freezes::FreezeRecord>,
    /// Every registered cluster's spoke connection.
    pub spokes: BTreeMap<String, SpokeState>,
    /// Held objects per cluster (clusters without any are absent).
    pub held: BTreeMap<String, u32>,
    /// Would-suspend/would-hold counts of warn-mode gates per cluster (clusters
    /// without any absent).
    pub would_hold: BTreeMap<String, WouldCounts>,
    /// Objects inside Kustomizations held (by fleetgate or a person) per
    /// cluster, clusters without any absent.
    pub held_objects: BTreeMap<String, HeldSet>,
    /// Each gate's newest rollout (current or ended), by gate.
    pub rollouts: BTreeMap<String, RolloutSummary>,
    /// Gate objects made in each cluster as its spoke reported them
    /// (clusters without any absent).
    pub local_gates: BTreeMap<String, Vec<super::LocalGate>>,
    /// Clusters whose latest report had problems (clusters without absent).
    pub report_problems: BTreeMap<String, ReportProblemBrief>,
    /// Each `calendar.url` window's feed, by (gate, window).
    pub calendar_feeds: BTreeMap<(String, String), FeedBrief>,
    /// Each cluster's snapshot state (clusters with neither field set absent).
    pub snapshot_states: BTreeMap<String, SnapshotBrief>,
    /// The earliest next transition of any (gate, cluster).
    pub next_transition: Option<DateTime<Utc>>,
    /// Every cluster's and gate's labels: what scoped watchers filter on.
    pub labels: Arc<ViewLabels>,
    /// Approval requests pending now or decided in the last few minutes, by id
    /// (read beside the fleet inputs by [`crate::Service::fleet_view`]).
    pub approvals: BTreeMap<String, crate::db::approvals::ApprovalRequest>,
}

/// Cluster and gate labels of a view, by name.
#[derive(Debug, Clone, Default)]
pub struct ViewLabels {
    pub clusters: HashMap<String, BTreeMap<String, String>>,
    pub gates: HashMap<String, BTreeMap<String, String>>,
}

/// The view of a fleet read ([`super::Scope::Fleet`]).
pub fn view(inputs: &FleetInputs) -> Result<FleetView> {
    let mut view = FleetView {
        at: inputs.at,
        overrides: inputs
            .live_overrides()
            .map(|r| (r.id.to_string(), r.clone()))
            .collect(),
        freezes: inputs
            .freezes
            .iter()
            .map(|f| (f.id.to_string(), f.clone()))
            .collect(),
        rollouts: inputs
            .rollouts
            .iter()
            .map(|r| (r.gate.clone(), r.clone()))
            .collect(),
        labels: Arc::new(ViewLabels {
            clusters: inputs
                .clusters
                .iter()
                .map(|c| (c.row.name.clone(), c.row.labels.clone()))
                .collect(),
            gates: inputs
                .gates
                .iter()
                .map(|g| (g.name().to_string(), g.gate.metadata.labels.clone()))
                .collect(),
        }),
        ..FleetView::default()
    };
    for cluster in evaluate(inputs)?.clusters {
        let row = &cluster.cluster.row;
        view.spokes.insert(
            row.name.clone(),
            SpokeState {
                connected: row.connected,
                replica: row.connected_replica.clone(),
                spoke_version: row.spoke_version.clone(),
            },
        );
        if row.snapshot_persistence.is_some() || row.snapshot_over_budget.is_some() {
            view.snapshot_states.insert(
                row.name.clone(),
                SnapshotBrief {
                    persistence: row.snapshot_persistence.clone(),
                    over_budget: row.snapshot_over_budget.clone(),
                },
            );
        }
        for (gate, e) in cluster.gates {
            if let Some(t) = e.next_transition {
                view.next_transition = Some(view.next_transition.map_or(t, |n| n.min(t)));
            }
            view.gates.insert(
                (gate.name().to_string(), row.name.clone()),
                GateOnCluster {
                    state: e.state,
                    reason: e.reason,
                    next_transition: e.next_transition,
                },
            );
        }
    }
    for (cluster, c) in &inputs.reported.counts {
        if c.held > 0 {
            view.held
                .insert(cluster.clone(), u32::try_from(c.held).unwrap_or(u32::MAX));
        }
        if c.would_suspend > 0 || c.would_hold > 0 || c.would_hold_objects > 0 {
            let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
            view.would_hold.insert(
                cluster.clone(),
                WouldCounts {
                    would_suspend: n(c.would_suspend),
                    would_hold: n(c.would_hold),
                    would_hold_objects: n(c.would_hold_objects),
                    would_hold_objects_waiting: n(c.would_hold_objects_waiting),
                },
            );
        }
        if c.held_objects > 0 || c.held_objects_by_person > 0 || c.held_objects_not_permitted > 0 {
            view.held_objects.insert(
                cluster.clone(),
                HeldSet {
                    held: u32::try_from(c.held_objects).unwrap_or(u32::MAX),
                    by_person: u32::try_from(c.held_objects_by_person).unwrap_or(u32::MAX),
                    not_permitted: u32::try_from(c.held_objects_not_permitted).unwrap_or(u32::MAX),
                    digest: inputs
                        .reported
                        .held_digests
                        .get(cluster)
                        .cloned()
                        .unwrap_or_default(),
                },
            );
        }
    }
    view.local_gates = inputs
        .reported
        .local_gates
        .iter()
        .map(|(c, g)| (c.clone(), g.clone()))
        .collect();
    view.calendar_feeds = inputs.reported.feed_briefs.clone();
    view.report_problems = (inputs.reported.problem_briefs.iter())
        .map(|(c, p)| (c.clone(), p.clone()))
        .collect();
    Ok(view)
}
