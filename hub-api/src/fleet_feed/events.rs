//! The fleet's changes as domain events: the difference of two
//! [`FleetView`]s (gate states, overrides, spoke connections, held counts,
//! rollouts, snapshot states), filtered per watcher ([`Filter`], in `filter`). The stream every
//! fleet watcher follows is [`events`] (in `stream`). gRPC `WatchFleet` and the
//! dashboard's SSE stream each convert these events to their wire form.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use fleetgate_policy::GateState;

pub use super::approval_events::ApprovalChange;
pub use super::calendar_events::CalendarFeedChange;
pub use super::filter::Filter;
pub use super::rollout_events::{RolloutAction, RolloutChange};
pub use super::snapshot_events::SnapshotStateChange;
pub use super::would_events::WouldHoldChange;
use crate::service::fleet::FleetView;
use crate::service::types::OverrideRecord;

/// A gate's state on a cluster changed.
#[derive(Debug, Clone, PartialEq)]
pub struct GateChange {
    pub gate: String,
    pub cluster: String,
    /// `None`: the gate did not apply to the cluster before.
    pub from: Option<GateState>,
    /// `None`: the gate no longer applies to the cluster.
    pub to: Option<GateState>,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
}

/// What happened to an override.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverrideChange {
    /// It is live (active now or starting later).
    Active,
    /// It expired or was cancelled.
    Ended,
}

impl OverrideChange {
    /// The wire name: `active` or `ended`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Ended => "ended",
        }
    }
}

/// A spoke's connection changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpokeChange {
    pub cluster: String,
    pub connected: bool,
    pub replica: Option<String>,
    pub spoke_version: Option<String>,
}

/// One change of the fleet.
#[derive(Debug, Clone)]
pub enum FleetChange {
    Gate(GateChange),
    Override {
        /// Boxed: a record is several times the size of the other changes.
        record: Box<OverrideRecord>,
        change: OverrideChange,
    },
    Spoke(SpokeChange),
    /// A cluster's held-object count changed.
    Held {
        cluster: String,
        held: u32,
        previous: u32,
    },
    /// What closed warn-mode gates would suspend and hold on a cluster changed.
    WouldHold(WouldHoldChange),
    /// Which objects inside a cluster's Kustomizations are held changed
    /// (holdObjects gates closing or opening, a person's mark, new objects
    /// marked), even when the counts stayed the same.
    HeldObjects(HeldObjectsChange),
    /// A gate's rollout started, released a wave, halted, completed, was
    /// paused, resumed or aborted, or ended.
    Rollout(RolloutChange),
    /// A fleet freeze began (is live) or ended.
    Freeze {
        record: Box<crate::db::freezes::FreezeRecord>,
        change: OverrideChange,
    },
    /// An approval request is pending, was approved, rejected, expired or withdrawn.
    Approval {
        record: Box<fleetgate_api_types::ApprovalRequest>,
        change: ApprovalChange,
    },
    /// A cluster's local gates (Gate objects made in it) changed: the list now.
    LocalGates {
        cluster: String,
        gates: Vec<crate::service::fleet::LocalGate>,
    },
    /// How a cluster's latest report was stored changed: objects with text the
    /// database cannot hold (stored repaired or left out), or the report refused.
    ReportProblems(ReportProblemsChange),
    /// A calendar feed's content (its occurrences) or state changed.
    CalendarFeed(CalendarFeedChange),
    /// A cluster's spoke started or stopped persisting its snapshot, or the hub started or
    /// stopped holding the cluster closed for a snapshot over its budget.
    SnapshotState(SnapshotStateChange),
}

/// A cluster's report problems now and before (none: total 0, no error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportProblemsChange {
    pub cluster: String,
    pub total: u32,
    pub previous: u32,
    /// The database's refusal of the cluster's latest report, if it was refused.
    pub write_error: Option<String>,
}

/// A cluster's held set of objects inside Kustomizations changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldObjectsChange {
    pub cluster: String,
    /// Held by fleetgate now.
    pub held: u32,
    /// Held by a person's own mark now.
    pub by_person: u32,
    /// Held by fleetgate before.
    pub previous: u32,
    /// Held by a person before.
    pub previous_by_person: u32,
    /// Selected by gates but not holdable by the spoke (HoldNotPermitted), now.
    pub not_permitted: u32,
    /// The same before.
    pub previous_not_permitted: u32,
}

/// A change with the instant of the view that showed it.
#[derive(Debug, Clone)]
pub struct FleetEvent {
    pub at: DateTime<Utc>,
    /// Part of the watcher's initial state rather than a change.
    pub initial: bool,
    pub change: FleetChange,
}

/// The events that turn `prev` into `next` (`prev` None: the initial state).
pub fn diff(prev: Option<&FleetView>, next: &FleetView, filter: &Filter) -> Vec<FleetEvent> {
    let initial = prev.is_none();
    let empty = FleetView::default();
    let prev = prev.unwrap_or(&empty);
    let mut out = Vec::new();
    let mut push = |change| {
        out.push(FleetEvent {
            at: next.at,
            initial,
            change,
        })
    };

    for ((gate, cluster), now) in &next.gates {
        if !filter.pair(gate, cluster) {
            continue;
        }
        let before = prev.gates.get(&(gate.clone(), cluster.clone()));
        if before.is_some_and(|b| b.state == now.state) {
            continue;
        }
        push(FleetChange::Gate(GateChange {
            gate: gate.clone(),
            cluster: cluster.clone(),
            from: before.map(|b| b.state),
            to: Some(now.state),
            reason: now.reason.clone(),
            next_transition: now.next_transition,
        }));
    }
    for ((gate, cluster), before) in &prev.gates {
        if !filter.pair(gate, cluster) {
            continue;
        }
        if !next.gates.contains_key(&(gate.clone(), cluster.clone())) {
            push(FleetChange::Gate(GateChange {
                gate: gate.clone(),
                cluster: cluster.clone(),
                from: Some(before.state),
                to: None,
                reason: "gate no longer applies to the cluster".into(),
                next_transition: None,
            }));
        }
    }

    let overrides = [
        (&next.overrides, &prev.overrides, OverrideChange::Active),
        (&prev.overrides, &next.overrides, OverrideChange::Ended),
    ];
    for (these, others, change) in overrides {
        for (id, o) in these {
            if !others.contains_key(id) && filter.override_wanted(o) {
                push(FleetChange::Override {
                    record: Box::new(o.clone()),
                    change,
                });
            }
        }
    }

    // Every watcher hears of every freeze: it may stop what it watches.
    let freezes = [
        (&next.freezes, &prev.freezes, OverrideChange::Active),
        (&prev.freezes, &next.freezes, OverrideChange::Ended),
    ];
    for (these, others, change) in freezes {
        for (id, f) in these {
            if !others.contains_key(id) {
                push(FleetChange::Freeze {
                    record: Box::new(f.clone()),
                    change,
                });
            }
        }
    }

    for (cluster, s) in &next.spokes {
        if !filter.cluster(cluster) || prev.spokes.get(cluster) == Some(s) {
            continue;
        }
        // A new cluster without a spoke is not a connection change.
        if !initial && !prev.spokes.contains_key(cluster) && !s.connected {
            continue;
        }
        if prev.spokes.get(cluster).map(|p| p.connected) == Some(s.connected)
            && s.connected
            && prev.spokes.get(cluster).map(|p| &p.replica) == Some(&s.replica)
        {
            continue; // only the version changed
        }
        push(FleetChange::Spoke(SpokeChange {
            cluster: cluster.clone(),
            connected: s.connected,
            replica: s.replica.clone(),
            spoke_version: s.spoke_version.clone(),
        }));
    }

    let clusters: BTreeSet<&String> = next.held.keys().chain(prev.held.keys()).collect();
    for cluster in clusters {
        if !filter.cluster(cluster) {
            continue;
        }
        let previous = prev.held.get(cluster).copied().unwrap_or(0);
        let held = next.held.get(cluster).copied().unwrap_or(0);
        if previous != held {
            push(FleetChange::Held {
                cluster: cluster.clone(),
                held,
                previous,
            });
        }
    }

    for w in super::would_events::diff(prev, next, |c| filter.cluster(c)) {
        push(FleetChange::WouldHold(w));
    }

    let clusters: BTreeSet<&String> = (next.held_objects.keys())
        .chain(prev.held_objects.keys())
        .collect();
    for cluster in clusters {
        let (before, now) = (
            prev.held_objects.get(cluster),
            next.held_objects.get(cluster),
        );
        if !filter.cluster(cluster) || before == now {
            continue;
        }
        let (before, now) = (
            before.cloned().unwrap_or_default(),
            now.cloned().unwrap_or_default(),
        );
        push(FleetChange::HeldObjects(HeldObjectsChange {
            cluster: cluster.clone(),
            held: now.held,
            by_person: now.by_person,
            previous: before.held,
            previous_by_person: before.by_person,
            not_permitted: now.not_permitted,
            previous_not_permitted: before.not_permitted,
        }));
    }

    let clusters: BTreeSet<&String> = (next.local_gates.keys())
        .chain(prev.local_gates.keys())
        .collect();
    for cluster in clusters {
        let now = next.local_gates.get(cluster);
        if !filter.cluster(cluster) || prev.local_gates.get(cluster) == now {
            continue;
        }
        push(FleetChange::LocalGates {
            cluster: cluster.clone(),
            gates: now.cloned().unwrap_or_default(),
        });
    }

    let clusters: BTreeSet<&String> = (next.report_problems.keys())
        .chain(prev.report_problems.keys())
        .collect();
    for cluster in clusters {
        let (before, now) = (
            prev.report_problems.get(cluster),
            next.report_problems.get(cluster),
        );
        if !filter.cluster(cluster) || before == now {
            continue;
        }
        let now = now.cloned().unwrap_or_default();
        push(FleetChange::ReportProblems(ReportProblemsChange {
            cluster: cluster.clone(),
            total: now.total,
            previous: before.map_or(0, |b| b.total),
            write_error: now.write_error,
        }));
    }

    for s in super::snapshot_events::diff(prev, next, |c| filter.cluster(c)) {
        push(FleetChange::SnapshotState(s));
    }

    // Rollouts are gate-wide: only the gate filter applies.
    let before = (!initial).then_some(prev);
    for r in super::rollout_events::diff(before, next, |g| filter.gate(g)) {
        push(FleetChange::Rollout(r));
    }
    for c in super::calendar_events::diff(before, next, |g| filter.gate(g)) {
        push(FleetChange::CalendarFeed(c));
    }
    for (record, change) in super::approval_events::diff(before, next, |r| {
        filter.scope_wanted(&r.gate, r.clusters.as_ref())
    }) {
        push(FleetChange::Approval {
            record: Box::new(record),
            change,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use fleetgate_policy::GateState;

    use super::*;
    use crate::service::fleet::{GateOnCluster, HeldSet, SpokeState};

    fn view(
        states: &[(&str, &str, GateState)],
        connected: &[&str],
        held: &[(&str, u32)],
    ) -> FleetView {
        let mut v = FleetView {
            at: Utc.with_ymd_and_hms(2026, 11, 27, 7, 0, 0).unwrap(),
            ..FleetView::default()
        };
        for (g, c, s) in states {
            v.gates.insert(
                (g.to_string(), c.to_string()),
                GateOnCluster {
                    state: *s,
                    reason: "r".into(),
                    next_transition: None,
                },
            );
            v.spokes.insert(
                c.to_string(),
                SpokeState {
                    connected: connected.contains(c),
                    replica: connected.contains(c).then(|| "hub-a".into()),
                    spoke_version: None,
                },
            );
        }
        v.held = held.iter().map(|(c, n)| (c.to_string(), *n)).collect();
        v
    }

    fn kinds(events: &[FleetEvent]) -> Vec<String> {
        let state = |s: &Option<GateState>| s.map(|s| s.to_string()).unwrap_or_default();
        events
            .iter()
            .map(|e| match &e.change {
                FleetChange::Gate(g) => format!(
                    "gate {} {} {}->{}",
                    g.gate,
                    g.cluster,
                    state(&g.from),
                    state(&g.to)
                ),
                FleetChange::Override { change, .. } => format!("override {}", change.as_str()),
                FleetChange::Freeze { change, .. } => format!("freeze {}", change.as_str()),
                FleetChange::Spoke(s) => format!("spoke {} {}", s.cluster, s.connected),
                FleetChange::Held {
                    cluster,
                    held,
                    previous,
                } => format!("held {cluster} {previous}->{held}"),
                FleetChange::WouldHold(w) => format!("would hold {}", w.cluster),
                FleetChange::HeldObjects(h) => format!(
                    "held objects {} {}+{}->{}+{}",
                    h.cluster, h.previous, h.previous_by_person, h.held, h.by_person
                ),
                FleetChange::Rollout(r) => format!("rollout {} {}", r.gate, r.action.as_str()),
                FleetChange::LocalGates { cluster, gates } => {
                    format!("local gates {cluster} {}", gates.len())
                }
                FleetChange::Approval { change, .. } => format!("approval {}", change.as_str()),
                FleetChange::CalendarFeed(c) => format!("calendar feed {}", c.window),
                FleetChange::SnapshotState(s) => format!("snapshot state {}", s.cluster),
                FleetChange::ReportProblems(p) => format!(
                    "report problems {} {}->{}{}",
                    p.cluster,
                    p.previous,
                    p.total,
                    if p.write_error.is_some() {
                        " refused"
                    } else {
                        ""
                    }
                ),
            })
            .collect()
    }

    #[test]
    fn initial_events_describe_the_state() {
        let v = view(&[("g", "a", GateState::Open)], &["a"], &[("a", 2)]);
        let ev = diff(None, &v, &Filter::default());
        assert!(ev.iter().all(|e| e.initial));
        assert_eq!(
            kinds(&ev),
            vec!["gate g a ->open", "spoke a true", "held a 0->2"]
        );
    }

    #[test]
    fn only_changes_are_sent() {
        let a = view(
            &[("g", "a", GateState::Open), ("g", "b", GateState::Open)],
            &["a"],
            &[],
        );
        let b = view(
            &[("g", "a", GateState::Closed), ("g", "b", GateState::Open)],
            &["a", "b"],
            &[("a", 1)],
        );
        assert!(diff(Some(&a), &a, &Filter::default()).is_empty());
        let ev = diff(Some(&a), &b, &Filter::default());
        assert!(ev.iter().all(|e| !e.initial));
        assert_eq!(
            kinds(&ev),
            vec!["gate g a open->closed", "spoke b true", "held a 0->1"]
        );
    }

    #[test]
    fn filters_apply() {
        let a = view(
            &[("g", "a", GateState::Open), ("h", "b", GateState::Open)],
            &[],
            &[],
        );
        let b = view(
            &[("g", "a", GateState::Closed), ("h", "b", GateState::Closed)],
            &[],
            &[],
        );
        let f = Filter::new(vec!["b".into()], vec![]);
        assert_eq!(
            kinds(&diff(Some(&a), &b, &f)),
            vec!["gate h b open->closed"]
        );
        let f = Filter::new(vec![], vec!["g".into()]);
        assert_eq!(
            kinds(&diff(Some(&a), &b, &f)),
            vec!["gate g a open->closed"]
        );
    }

    fn held_set(held: u32, by_person: u32, digest: &str) -> HeldSet {
        HeldSet {
            held,
            by_person,
            not_permitted: 0,
            digest: digest.into(),
        }
    }

    #[test]
    fn held_object_sets_are_compared_not_only_counted() {
        let mut a = view(&[], &[], &[]);
        a.held_objects.insert("a".into(), held_set(1, 0, "x"));
        let initial = diff(None, &a, &Filter::default());
        assert_eq!(kinds(&initial), vec!["held objects a 0+0->1+0"]);
        // Same count, another object held: still an event.
        let mut b = a.clone();
        b.held_objects.insert("a".into(), held_set(1, 0, "y"));
        assert_eq!(
            kinds(&diff(Some(&a), &b, &Filter::default())),
            vec!["held objects a 1+0->1+0"]
        );
        assert!(diff(Some(&b), &b, &Filter::default()).is_empty());
        // Released; a person's mark elsewhere, filtered out.
        let mut c = view(&[], &[], &[]);
        c.held_objects.insert("b".into(), held_set(0, 1, "z"));
        let f = Filter::new(vec!["a".into()], vec![]);
        assert_eq!(
            kinds(&diff(Some(&b), &c, &f)),
            vec!["held objects a 1+0->0+0"]
        );
    }

    #[test]
    fn report_problems_appear_change_and_clear() {
        use crate::service::fleet::ReportProblemBrief;
        let a = view(&[], &[], &[]);
        let mut b = a.clone();
        b.report_problems.insert(
            "c1".into(),
            ReportProblemBrief {
                total: 2,
                write_error: None,
            },
        );
        assert_eq!(
            kinds(&diff(Some(&a), &b, &Filter::default())),
            vec!["report problems c1 0->2"]
        );
        assert_eq!(
            kinds(&diff(None, &b, &Filter::default())),
            vec!["report problems c1 0->2"]
        );
        assert!(diff(Some(&b), &b, &Filter::default()).is_empty());
        let mut c = a.clone();
        c.report_problems.insert(
            "c1".into(),
            ReportProblemBrief {
                total: 2,
                write_error: Some("refused".into()),
            },
        );
        assert_eq!(
            kinds(&diff(Some(&b), &c, &Filter::default())),
            vec!["report problems c1 2->2 refused"]
        );
        assert_eq!(
            kinds(&diff(Some(&c), &a, &Filter::default())),
            vec!["report problems c1 2->0"]
        );
        let other = Filter::new(vec!["c2".into()], vec![]);
        assert!(diff(Some(&a), &b, &other).is_empty());
    }

    #[test]
    fn removed_gate_and_disconnect() {
        let a = view(&[("g", "a", GateState::Open)], &["a"], &[("a", 3)]);
        let mut b = view(&[], &[], &[]);
        b.spokes.insert(
            "a".into(),
            SpokeState {
                connected: false,
                replica: Some("hub-a".into()),
                spoke_version: None,
            },
        );
        assert_eq!(
            kinds(&diff(Some(&a), &b, &Filter::default())),
            vec!["gate g a open->", "spoke a false", "held a 3->0"]
        );
    }
}
