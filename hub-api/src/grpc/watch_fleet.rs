//! `AdminService.WatchFleet`: the fleet's domain events (see
//! `fleet_feed::events`: one fleet read per change however many watchers)
//! as protobuf `FleetEvent`s.

use std::pin::Pin;
use std::sync::Arc;

use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use futures::{Stream, StreamExt as _};
use tokio_util::sync::CancellationToken;
use tonic::Status;

use super::admin_convert::override_info;
use super::convert::to_status;
use crate::fleet_feed::FleetUpdates;
use crate::fleet_feed::events::{Filter, FleetChange, FleetEvent};
use crate::fleet_feed::stream::events;
use crate::service::Service;
use crate::service::fleet::FleetView;

/// The server stream of `WatchFleet`.
pub type FleetStream = Pin<Box<dyn Stream<Item = Result<pb::FleetEvent, Status>> + Send>>;

/// A fleet event as protobuf (absent states are empty strings).
pub fn event_to_proto(e: FleetEvent) -> pb::FleetEvent {
    let state =
        |s: Option<fleetgate_policy::GateState>| s.map(|s| s.to_string()).unwrap_or_default();
    let event = match e.change {
        FleetChange::Gate(g) => Event::GateState(pb::GateStateChanged {
            gate: g.gate,
            cluster: g.cluster,
            from: state(g.from),
            to: state(g.to),
            reason: g.reason,
            next_transition: g.next_transition.map(to_timestamp),
        }),
        FleetChange::Override { record, change } => Event::Override(pb::OverrideChanged {
            r#override: Some(override_info(*record)),
            change: change.as_str().into(),
        }),
        FleetChange::Freeze { record, change } => Event::Freeze(pb::FreezeChanged {
            freeze: Some(crate::grpc::admin_convert::freeze_info(*record)),
            change: change.as_str().into(),
        }),
        FleetChange::Approval { record, change } => Event::Approval(pb::ApprovalChanged {
            approval: Some(super::admin_convert::approval_info(*record)),
            change: change.as_str().into(),
        }),
        FleetChange::Spoke(s) => Event::Spoke(pb::SpokeConnectionChanged {
            cluster: s.cluster,
            connected: s.connected,
            replica: s.replica.unwrap_or_default(),
            spoke_skew: fleetgate_api_types::version::spoke_skew_here(s.spoke_version.as_deref())
                .to_string(),
            spoke_version: s.spoke_version.unwrap_or_default(),
        }),
        FleetChange::Held {
            cluster,
            held,
            previous,
        } => Event::Held(pb::HeldChanged {
            cluster,
            held,
            previous,
        }),
        FleetChange::WouldHold(w) => Event::WouldHold(pb::WouldHoldChanged {
            cluster: w.cluster,
            would_suspend: w.now.would_suspend,
            would_hold: w.now.would_hold,
            previous_would_suspend: w.previous.would_suspend,
            previous_would_hold: w.previous.would_hold,
            would_hold_objects: w.now.would_hold_objects,
            would_hold_objects_waiting: w.now.would_hold_objects_waiting,
            previous_would_hold_objects: w.previous.would_hold_objects,
            previous_would_hold_objects_waiting: w.previous.would_hold_objects_waiting,
        }),
        FleetChange::HeldObjects(h) => Event::HeldObjects(pb::HeldObjectsChanged {
            cluster: h.cluster,
            held: h.held,
            by_person: h.by_person,
            previous: h.previous,
            previous_by_person: h.previous_by_person,
            not_permitted: h.not_permitted,
            previous_not_permitted: h.previous_not_permitted,
        }),
        FleetChange::LocalGates { cluster, gates } => Event::LocalGates(pb::LocalGatesChanged {
            cluster,
            gates: gates
                .into_iter()
                .map(crate::grpc::admin_status::local_gate)
                .collect(),
        }),
        FleetChange::ReportProblems(p) => Event::ReportProblems(pb::ReportProblemsChanged {
            cluster: p.cluster,
            total: p.total,
            previous: p.previous,
            write_error: p.write_error.unwrap_or_default(),
        }),
        FleetChange::CalendarFeed(c) => Event::CalendarFeed(pb::CalendarFeedChanged {
            gate: c.gate,
            window: c.window,
            url: c.url,
            state: c.state.as_str().into(),
            previous_state: c
                .previous_state
                .map(|s| s.as_str().into())
                .unwrap_or_default(),
            content_changed: c.content_changed,
            occurrences: c.occurrences,
            previous_occurrences: c.previous_occurrences,
            changed_at: c.changed_at.map(to_timestamp),
            sha256: c.sha256.unwrap_or_default(),
        }),
        FleetChange::SnapshotState(s) => Event::SnapshotState(pb::SnapshotStateChanged {
            cluster: s.cluster,
            persistence: s
                .persistence
                .map(crate::grpc::admin_convert::snapshot_persistence),
            over_budget: s
                .over_budget
                .map(crate::grpc::admin_convert::snapshot_over_budget),
            previous_persistence_state: s.previous_persistence_state.unwrap_or_default(),
            was_over_budget: s.was_over_budget,
        }),
        FleetChange::Rollout(r) => Event::Rollout(pb::RolloutChanged {
            gate: r.gate,
            rollout_id: r.rollout_id,
            action: r.action.as_str().into(),
            state: r.state,
            wave: r.wave,
            waves: r.waves,
            released: r.released,
            clusters: r.clusters,
            detail: r.detail.unwrap_or_default(),
        }),
    };
    pb::FleetEvent {
        at: Some(to_timestamp(e.at)),
        initial: e.initial,
        event: Some(event),
    }
}

/// The `WatchFleet` stream for the caller holding `token` (its bearer token).
pub fn watch_fleet(
    service: Service,
    updates: FleetUpdates,
    shutdown: CancellationToken,
    token: String,
    request: pb::WatchFleetRequest,
    first: Arc<FleetView>,
) -> FleetStream {
    let filter = Filter::new(request.clusters, request.gates);
    let credential = crate::service::access::Credential::Bearer(token);
    let stream = events(service, updates, shutdown, credential, filter, first);
    Box::pin(stream.map(|e| e.map(event_to_proto).map_err(to_status)))
}
