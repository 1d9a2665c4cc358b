//! `GET /api/v1/events`: the fleet's changes as server-sent events for the
//! dashboard. The same domain events as gRPC `WatchFleet` (diffs of the
//! replica's shared fleet view, see `fleet_feed::events`), as JSON. The browser reads
//! it with `fetch`, so the token travels in the Authorization header.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use fleetgate_policy::GateState;
use futures::{Stream, StreamExt as _, stream};
use serde_json::{Value, json};

use crate::Result;
use crate::fleet_feed::events::{Filter, FleetChange, FleetEvent};
use crate::fleet_feed::stream::events;
use crate::grpc::convert::to_status;
use crate::rest::AppState;

/// Comment lines keep idle proxies and the browser from closing the stream.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Opens the event stream. The first event, `ready`, says the stream is
/// subscribed: state fetched after it misses no change. Later events are
/// `gate`, `override`, `freeze`, `approval`, `spoke`, `held`, `heldObjects`, `localGates`,
/// `reportProblems`, `calendarFeed`, `snapshotState` and `rollout`; `error` ends the stream (e.g. the
/// token was revoked).
#[utoipa::path(get, path = "/api/v1/events", tag = "dashboard",
    responses(
        (status = 200, description = "Server-sent events (text/event-stream): ready, gate, override, freeze, approval, spoke, held, heldObjects, localGates, reportProblems, calendarFeed, snapshotState, rollout, error", content_type = "text/event-stream", body = String),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn stream(State(s): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let credential = crate::rest::extract::credential(&headers)?;
    let actor = s.service.authenticate(&credential).await?.actor;
    let (first, updates) = s.fleet.subscribe(&actor).await?;
    let at = first.at;
    let changes = events(
        s.service.clone(),
        updates,
        s.shutdown.clone(),
        credential,
        Filter::default(),
        first,
    )
    .filter_map(|r| async move {
        match r {
            // The page fetches the state itself after `ready`.
            Ok(e) if e.initial => None,
            Ok(e) => Some(to_sse(&e)),
            Err(e) => {
                let status = to_status(e);
                Some(sse(
                    "error",
                    &json!({"code": format!("{:?}", status.code()), "message": status.message()}),
                ))
            }
        }
    });
    let ready = stream::once(async move { sse("ready", &json!({"at": at})) });
    let body: std::pin::Pin<Box<dyn Stream<Item = std::result::Result<Event, Infallible>> + Send>> =
        Box::pin(ready.chain(changes).map(Ok));
    let mut res = Sse::new(body)
        .keep_alive(KeepAlive::new().interval(KEEPALIVE))
        .into_response();
    // Reverse proxies (nginx) would otherwise buffer the stream.
    res.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(res)
}

fn sse(name: &str, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

/// One fleet event as an SSE event (name = its kind, data = JSON; absent
/// states and replicas are empty strings, as in `WatchFleet`).
pub fn to_sse(e: &FleetEvent) -> Event {
    let at = e.at;
    let state = |s: Option<GateState>| s.map(|s| s.to_string()).unwrap_or_default();
    let (name, data) = match &e.change {
        FleetChange::Gate(g) => (
            "gate",
            json!({
                "at": at, "gate": g.gate, "cluster": g.cluster, "from": state(g.from),
                "to": state(g.to), "reason": g.reason, "nextTransition": g.next_transition,
            }),
        ),
        FleetChange::Override { record: o, change } => (
            "override",
            json!({
                "at": at, "change": change.as_str(), "id": o.id.to_string(), "gate": o.gate,
                "state": o.state, "actor": o.actor, "reason": o.reason,
                "expiresAt": o.expires_at, "requestedIn": o.requested_in,
                "requestedBy": o.requested_by,
            }),
        ),
        FleetChange::Freeze { record: f, change } => (
            "freeze",
            json!({
                "at": at, "change": change.as_str(), "id": f.id.to_string(),
                "clusters": f.clusters, "reason": f.reason, "actor": f.actor,
                "expiresAt": f.expires_at, "requestedIn": f.requested_in,
                "endedBy": f.ended_by,
            }),
        ),
        FleetChange::Approval { record: r, change } => (
            "approval",
            json!({
                "at": at, "change": change.as_str(), "id": r.id.to_string(), "gate": r.gate,
                "state": r.state, "requester": r.requester, "reason": r.reason,
                "ticket": r.ticket, "status": r.status, "required": r.required,
                "approvals": r.approvals.len(), "expiresAt": r.expires_at,
                "decidedBy": r.decided_by, "decisionReason": r.decision_reason,
                "overrideId": r.override_id,
            }),
        ),
        FleetChange::Spoke(sp) => (
            "spoke",
            json!({
                "at": at, "cluster": sp.cluster, "connected": sp.connected,
                "replica": sp.replica.clone().unwrap_or_default(),
                "spokeVersion": sp.spoke_version.clone().unwrap_or_default(),
            }),
        ),
        FleetChange::Held {
            cluster,
            held,
            previous,
        } => (
            "held",
            json!({"at": at, "cluster": cluster, "held": held, "previous": previous}),
        ),
        FleetChange::WouldHold(w) => (
            "wouldHold",
            json!({
                "at": at, "cluster": w.cluster,
                "wouldSuspend": w.now.would_suspend, "wouldHold": w.now.would_hold,
                "previousWouldSuspend": w.previous.would_suspend,
                "previousWouldHold": w.previous.would_hold,
                "wouldHoldObjects": w.now.would_hold_objects,
                "wouldHoldObjectsWaiting": w.now.would_hold_objects_waiting,
                "previousWouldHoldObjects": w.previous.would_hold_objects,
                "previousWouldHoldObjectsWaiting": w.previous.would_hold_objects_waiting,
            }),
        ),
        FleetChange::HeldObjects(h) => (
            "heldObjects",
            json!({
                "at": at, "cluster": h.cluster, "held": h.held, "byPerson": h.by_person,
                "previous": h.previous, "previousByPerson": h.previous_by_person,
                "notPermitted": h.not_permitted, "previousNotPermitted": h.previous_not_permitted,
            }),
        ),
        FleetChange::LocalGates { cluster, gates } => (
            "localGates",
            json!({"at": at, "cluster": cluster, "gates": gates}),
        ),
        FleetChange::ReportProblems(p) => (
            "reportProblems",
            json!({
                "at": at, "cluster": p.cluster, "total": p.total, "previous": p.previous,
                "writeError": p.write_error,
            }),
        ),
        FleetChange::CalendarFeed(c) => (
            "calendarFeed",
            json!({
                "at": at, "gate": c.gate, "window": c.window, "url": c.url,
                "state": c.state.as_str(),
                "previousState": c.previous_state.map(|s| s.as_str()),
                "contentChanged": c.content_changed, "occurrences": c.occurrences,
                "previousOccurrences": c.previous_occurrences, "changedAt": c.changed_at,
                "sha256": c.sha256,
            }),
        ),
        FleetChange::SnapshotState(s) => (
            "snapshotState",
            json!({
                "at": at, "cluster": s.cluster, "persistence": s.persistence,
                "overBudget": s.over_budget,
                "previousPersistenceState": s.previous_persistence_state,
                "wasOverBudget": s.was_over_budget,
            }),
        ),
        FleetChange::Rollout(r) => (
            "rollout",
            json!({
                "at": at, "gate": r.gate, "rolloutId": r.rollout_id, "action": r.action.as_str(),
                "state": r.state, "wave": r.wave, "waves": r.waves, "released": r.released,
                "clusters": r.clusters, "detail": r.detail,
            }),
        ),
    };
    sse(name, &data)
}
