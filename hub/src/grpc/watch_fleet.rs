//! `AdminService.WatchFleet`: follows the replica's shared [`FleetView`]
//! (see `fleet_feed`: one read per change however many watchers) and sends
//! each view's difference to the previous one as events, filtered per
//! watcher. Pure diffing is unit-tested.

use std::collections::BTreeSet;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use futures::Stream;
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::admin_convert::override_info;
use super::convert::to_status;
use crate::fleet_feed::FleetUpdates;
use crate::service::Service;
use crate::service::fleet::FleetView;

/// The server stream of `WatchFleet`.
pub type FleetStream = Pin<Box<dyn Stream<Item = Result<pb::FleetEvent, Status>> + Send>>;

/// Which events a watcher wants.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    clusters: BTreeSet<String>,
    gates: BTreeSet<String>,
}

impl Filter {
    fn cluster(&self, c: &str) -> bool {
        self.clusters.is_empty() || self.clusters.contains(c)
    }
    fn gate(&self, g: &str) -> bool {
        self.gates.is_empty() || self.gates.contains(g)
    }
}

impl From<pb::WatchFleetRequest> for Filter {
    fn from(r: pb::WatchFleetRequest) -> Self {
        Self {
            clusters: r.clusters.into_iter().collect(),
            gates: r.gates.into_iter().collect(),
        }
    }
}

fn event(at: DateTime<Utc>, initial: bool, e: Event) -> pb::FleetEvent {
    pb::FleetEvent {
        at: Some(to_timestamp(at)),
        initial,
        event: Some(e),
    }
}

/// The events that turn `prev` into `next` (`prev` None: the initial state).
pub fn diff(prev: Option<&FleetView>, next: &FleetView, filter: &Filter) -> Vec<pb::FleetEvent> {
    let initial = prev.is_none();
    let empty = FleetView::default();
    let prev = prev.unwrap_or(&empty);
    let at = next.at;
    let mut out = Vec::new();

    for ((gate, cluster), now) in &next.gates {
        if !filter.gate(gate) || !filter.cluster(cluster) {
            continue;
        }
        let before = prev.gates.get(&(gate.clone(), cluster.clone()));
        if before.is_some_and(|b| b.state == now.state) {
            continue;
        }
        out.push(event(
            at,
            initial,
            Event::GateState(pb::GateStateChanged {
                gate: gate.clone(),
                cluster: cluster.clone(),
                from: before.map(|b| b.state.to_string()).unwrap_or_default(),
                to: now.state.to_string(),
                reason: now.reason.clone(),
                next_transition: now.next_transition.map(to_timestamp),
            }),
        ));
    }
    for ((gate, cluster), before) in &prev.gates {
        if !filter.gate(gate) || !filter.cluster(cluster) {
            continue;
        }
        if !next.gates.contains_key(&(gate.clone(), cluster.clone())) {
            out.push(event(
                at,
                initial,
                Event::GateState(pb::GateStateChanged {
                    gate: gate.clone(),
                    cluster: cluster.clone(),
                    from: before.state.to_string(),
                    to: String::new(),
                    reason: "gate no longer applies to the cluster".into(),
                    next_transition: None,
                }),
            ));
        }
    }

    let override_wanted = |o: &crate::service::types::OverrideRecord| {
        filter.gate(&o.gate)
            && (filter.clusters.is_empty()
                || o.clusters.as_ref().is_none_or(|s| {
                    s.selector.is_some() || s.names.iter().any(|n| filter.cluster(n))
                }))
    };
    for (id, o) in &next.overrides {
        if !prev.overrides.contains_key(id) && override_wanted(o) {
            out.push(event(
                at,
                initial,
                Event::Override(pb::OverrideChanged {
                    r#override: Some(override_info(o.clone())),
                    change: "active".into(),
                }),
            ));
        }
    }
    for (id, o) in &prev.overrides {
        if !next.overrides.contains_key(id) && override_wanted(o) {
            out.push(event(
                at,
                initial,
                Event::Override(pb::OverrideChanged {
                    r#override: Some(override_info(o.clone())),
                    change: "ended".into(),
                }),
            ));
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
        out.push(event(
            at,
            initial,
            Event::Spoke(pb::SpokeConnectionChanged {
                cluster: cluster.clone(),
                connected: s.connected,
                replica: s.replica.clone().unwrap_or_default(),
                spoke_version: s.spoke_version.clone().unwrap_or_default(),
            }),
        ));
    }

    let clusters: BTreeSet<&String> = next.held.keys().chain(prev.held.keys()).collect();
    for cluster in clusters {
        if !filter.cluster(cluster) {
            continue;
        }
        let (before, now) = (
            prev.held.get(cluster).copied().unwrap_or(0),
            next.held.get(cluster).copied().unwrap_or(0),
        );
        if before != now {
            out.push(event(
                at,
                initial,
                Event::Held(pb::HeldChanged {
                    cluster: cluster.clone(),
                    held: now,
                    previous: before,
                }),
            ));
        }
    }
    out
}

/// The `WatchFleet` stream for the caller holding `token`: the events of
/// `first`, then the difference of each view the replica's
/// [`FleetFeed`](crate::fleet_feed::FleetFeed)
/// publishes (no read of its own).
pub fn watch_fleet(
    service: Service,
    mut updates: FleetUpdates,
    shutdown: CancellationToken,
    token: String,
    request: pb::WatchFleetRequest,
    first: Arc<FleetView>,
) -> FleetStream {
    let filter = Filter::from(request);
    Box::pin(async_stream::try_stream! {
        for e in diff(None, &first, &filter) {
            yield e;
        }
        let mut prev = first;
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => break,
                next = updates.next() => match next {
                    Some(next) => next,
                    None => break,
                },
            };
            // Re-check the caller: a revoked token ends the stream.
            service.authenticate_api(&token).await.map_err(to_status)?;
            let next = next.map_err(to_status)?;
            for e in diff(Some(&prev), &next, &filter) {
                yield e;
            }
            prev = next;
        }
    })
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;
    use fleetgate_policy::GateState;

    use super::*;
    use crate::service::fleet::{GateOnCluster, SpokeState};

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

    fn kinds(events: &[pb::FleetEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e.event.as_ref().unwrap() {
                Event::GateState(g) => {
                    format!("gate {} {} {}->{}", g.gate, g.cluster, g.from, g.to)
                }
                Event::Override(o) => format!("override {}", o.change),
                Event::Spoke(s) => format!("spoke {} {}", s.cluster, s.connected),
                Event::Held(h) => format!("held {} {}->{}", h.cluster, h.previous, h.held),
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
        let f = Filter::from(pb::WatchFleetRequest {
            clusters: vec!["b".into()],
            gates: vec![],
        });
        assert_eq!(
            kinds(&diff(Some(&a), &b, &f)),
            vec!["gate h b open->closed"]
        );
        let f = Filter::from(pb::WatchFleetRequest {
            clusters: vec![],
            gates: vec!["g".into()],
        });
        assert_eq!(
            kinds(&diff(Some(&a), &b, &f)),
            vec!["gate g a open->closed"]
        );
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
