//! `GET /api/v1/events`: the fleet's changes as server-sent events for the
//! dashboard. The same source as gRPC `WatchFleet` (diffs of the replica's
//! shared fleet view, see `fleet_feed`), converted to JSON. The browser reads
//! it with `fetch`, so the token travels in the Authorization header.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::State;
use axum::http::header::AUTHORIZATION;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use fleetgate_proto::time::from_timestamp;
use fleetgate_proto::v1::{self as pb, fleet_event::Event as Pe};
use futures::{Stream, StreamExt as _, stream};
use serde_json::{Value, json};

use crate::auth::bearer_token;
use crate::grpc::watch_fleet::watch_fleet;
use crate::rest::AppState;
use crate::{Error, Result};

/// Comment lines keep idle proxies and the browser from closing the stream.
const KEEPALIVE: Duration = Duration::from_secs(15);

/// Opens the event stream. The first event, `ready`, says the stream is
/// subscribed: state fetched after it misses no change. Later events are
/// `gate`, `override`, `spoke` and `held`; `error` ends the stream (e.g. the
/// token was revoked).
#[utoipa::path(get, path = "/api/v1/events", tag = "dashboard",
    responses(
        (status = 200, description = "Server-sent events (text/event-stream): ready, gate, override, spoke, held, error", content_type = "text/event-stream", body = String),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn stream(State(s): State<AppState>, headers: HeaderMap) -> Result<Response> {
    let token = headers
        .get(AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .and_then(bearer_token)
        .ok_or_else(|| Error::Unauthenticated("missing Authorization: Bearer token".into()))?
        .to_string();
    let actor = s.service.authenticate_api(&token).await?;
    let (first, updates) = s.fleet.subscribe(&actor).await?;
    let at = first.at;
    let changes = watch_fleet(
        s.service.clone(),
        updates,
        s.shutdown.clone(),
        token,
        pb::WatchFleetRequest::default(),
        first,
    )
    .filter_map(|r| async move {
        match r {
            // The page fetches the state itself after `ready`.
            Ok(e) if e.initial => None,
            Ok(e) => to_sse(&e),
            Err(status) => Some(sse(
                "error",
                &json!({"code": format!("{:?}", status.code()), "message": status.message()}),
            )),
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

fn time(ts: Option<&prost_types::Timestamp>) -> Option<DateTime<Utc>> {
    ts.and_then(from_timestamp)
}

/// One fleet event as an SSE event (name = its kind, data = JSON).
pub fn to_sse(e: &pb::FleetEvent) -> Option<Event> {
    let at = time(e.at.as_ref());
    let (name, data) = match e.event.as_ref()? {
        Pe::GateState(g) => (
            "gate",
            json!({
                "at": at, "gate": g.gate, "cluster": g.cluster, "from": g.from, "to": g.to,
                "reason": g.reason, "nextTransition": time(g.next_transition.as_ref()),
            }),
        ),
        Pe::Override(o) => {
            let ov = o.r#override.as_ref();
            (
                "override",
                json!({
                    "at": at, "change": o.change,
                    "id": ov.map(|o| o.id.clone()), "gate": ov.map(|o| o.gate.clone()),
                    "state": ov.map(|o| o.state.clone()), "actor": ov.map(|o| o.actor.clone()),
                    "reason": ov.map(|o| o.reason.clone()),
                    "expiresAt": time(ov.and_then(|o| o.expires_at.as_ref())),
                }),
            )
        }
        Pe::Spoke(sp) => (
            "spoke",
            json!({
                "at": at, "cluster": sp.cluster, "connected": sp.connected,
                "replica": sp.replica, "spokeVersion": sp.spoke_version,
            }),
        ),
        Pe::Held(h) => (
            "held",
            json!({"at": at, "cluster": h.cluster, "held": h.held, "previous": h.previous}),
        ),
    };
    Some(sse(name, &data))
}
