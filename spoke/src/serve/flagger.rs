//! Flagger's webhook contract, answered from the spoke's own evaluation (so it
//! stays right while the hub is unreachable): Flagger POSTs
//! `{"name","namespace","phase","checksum","metadata"}` to a `confirm-rollout`,
//! `confirm-promotion` (or any gating) hook and proceeds on any status ≤ 202.
//! `POST /flagger/gates/{gate}` answers 200 while that gate is open on this
//! cluster now and 403 with the reason while it is closed; `POST /flagger/gate`
//! takes the gate from the hook's `metadata.gate`.

use std::sync::Arc;

use axum::{
    Json, Router,
    body::Bytes,
    extract::{Path, State},
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::post,
};
use serde::Deserialize;
use serde_json::json;

use crate::context::Context;

/// Flagger's webhook payload (flagger pkg/apis/flagger/v1beta1 CanaryWebhookPayload).
#[derive(Debug, Deserialize)]
#[allow(dead_code)] // every field is parsed to check the shape; only metadata is read
pub struct Payload {
    pub name: String,
    pub namespace: String,
    pub phase: String,
    #[serde(default)]
    pub checksum: String,
    #[serde(default)]
    pub metadata: Option<std::collections::BTreeMap<String, String>>,
}

/// The routes, served on the spoke's HTTP port.
pub fn router(ctx: Arc<Context>) -> Router {
    Router::new()
        .route("/flagger/gates/{gate}", post(by_path))
        .route("/flagger/gate", post(by_metadata))
        .with_state(ctx)
}

/// The payload, if any; `Err` is the 400 answer's reason.
fn parse(body: &Bytes) -> Result<Option<Payload>, String> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    serde_json::from_slice(body)
        .map(Some)
        .map_err(|e| format!("body: not a Flagger webhook payload: {e}"))
}

fn bad_request(reason: &str) -> Response {
    answer(StatusCode::BAD_REQUEST, "", false, reason)
}

fn answer(status: StatusCode, gate: &str, open: bool, reason: &str) -> Response {
    (
        status,
        Json(json!({"gate": gate, "open": open, "reason": reason})),
    )
        .into_response()
}

async fn by_path(
    State(ctx): State<Arc<Context>>,
    Path(gate): Path<String>,
    body: Bytes,
) -> Response {
    if let Err(r) = parse(&body) {
        return bad_request(&r);
    }
    decide(&ctx, &gate)
}

async fn by_metadata(State(ctx): State<Arc<Context>>, body: Bytes) -> Response {
    let payload = match parse(&body) {
        Ok(p) => p,
        Err(r) => return bad_request(&r),
    };
    match payload
        .and_then(|p| p.metadata)
        .and_then(|m| m.get("gate").cloned())
    {
        Some(gate) => decide(&ctx, &gate),
        None => bad_request(
            "metadata.gate: required (the hook's metadata names the gate), or POST /flagger/gates/{gate}",
        ),
    }
}

/// 200 open, 403 closed (with the evaluator's reason), 404 unknown gate, 503
/// before the spoke has any snapshot. Flagger retries anything above 202.
fn decide(ctx: &Context, gate: &str) -> Response {
    let snapshot = ctx.snapshot.borrow().clone();
    let Some(snapshot) = snapshot else {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            gate,
            false,
            "the spoke has no gates yet",
        );
    };
    let local = ctx.local_overrides_now();
    match snapshot.evaluate_gate(gate, ctx.config.clock.now(), &local) {
        Some(e) if e.state.is_open() => answer(StatusCode::OK, gate, true, &e.reason),
        // Warn mode holds nothing, a canary neither: 200, saying it would be closed.
        Some(e)
            if snapshot
                .gate(gate)
                .is_some_and(|g| g.gate().spec.enforcement.is_warn()) =>
        {
            let reason = format!("warn mode, would be closed: {}", e.reason);
            answer(StatusCode::OK, gate, false, &reason)
        }
        Some(e) => answer(StatusCode::FORBIDDEN, gate, false, &e.reason),
        None => answer(
            StatusCode::NOT_FOUND,
            gate,
            false,
            &format!("gate '{gate}' is not in force on this cluster"),
        ),
    }
}
