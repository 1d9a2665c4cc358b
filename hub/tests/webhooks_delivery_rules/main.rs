//! The webhook delivery rules, each against a real local HTTP receiver:
//! 410 Gone disables the endpoint (REST, gRPC, audit, metric, nothing more
//! sent until it is enabled again); `Retry-After` in seconds and as an HTTP
//! date, never retried before it; 3xx is a failure and no redirect is
//! followed; an endpoint failing for days is disabled with its reason; a
//! rotated secret signs beside the new one for the overlap only; after the
//! schedule's last retry a delivery fails, the endpoint's queue moves on,
//! and a redelivery sends it again with its `webhook-id`.
//!
//! Time is the hub's injected clock: except for the first test (the running
//! worker, end to end), each test delivers with [`deliver::tick`] (the
//! worker's own step: claim what is due now, send, record) at instants it
//! sets, and reads the scheduled next attempt from the stored delivery.
//! Ordering per endpoint after an outage: `webhooks.rs`
//! `receiver_down_then_up_gets_every_event_in_order_and_leases_move`.
//!
//! One module per rule: `disable` (410 Gone, failing for days), `interrupted` (an attempt a
//! dead replica never recorded), `retries`
//! (`Retry-After`, 3xx, the schedule's end) and `rotation` (the old secret's
//! overlap); the helpers below serve all three.

#[path = "../common/mod.rs"]
mod common;
#[path = "../grpc_support/mod.rs"]
mod grpc_support;
#[path = "../notify_support/mod.rs"]
mod notify_support;

mod disable;
mod interrupted;
mod retries;
mod rotation;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse as _, Response};
use chrono::{DateTime, Utc};
use common::{Hub, t0};
use fleetgate_hub::clock::Clock as _;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::NotifyOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::webhook_delivery as deliver;
use fleetgate_proto::v1 as pb;
use grpc_support::served::Served;
use grpc_support::{Grpc, authed, within};
use notify_support::{
    Received, call, enqueue_numbered, enqueue_numbered_together, next, receiver,
    receiver_answering, replica_with, subscribe, verify,
};
use serde_json::{Value, json};

/// Settings with this retry schedule (loopback receivers allowed).
fn opts_with(schedule: &str) -> NotifyOptions {
    NotifyOptions {
        webhook_retry_schedule: schedule.into(),
        ..notify_support::opts()
    }
}

/// `answer` as a response with one header.
fn with_header(status: StatusCode, name: &'static str, value: String) -> Response {
    (status, [(name, value)]).into_response()
}

/// Runs the worker's step at the hub's current instant; how many it claimed.
async fn tick(hub: &Hub, r: &Replica) -> usize {
    within(
        "a delivery step",
        deliver::tick(&hub.service, &r.notifier.delivery),
    )
    .await
    .expect("delivery step")
}

/// The newest delivery of `hook`, with its attempts.
async fn newest(router: &Router, hook: &str) -> Value {
    let (status, list) = call(
        router,
        Method::GET,
        &format!("/api/v1/webhooks/{hook}/deliveries"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let id = list[0]["id"].as_i64().expect("a delivery");
    let (status, one) = call(
        router,
        Method::GET,
        &format!("/api/v1/webhooks/{hook}/deliveries/{id}"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{one}");
    one
}

fn instant(v: &Value) -> DateTime<Utc> {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{v}: {e}"))
}

/// The value of `fleetgate_hub_webhook_attempts_total` for (webhook, outcome).
async fn attempts_metric(router: &Router, webhook: &str, outcome: &str) -> f64 {
    let labels = [("webhook", webhook), ("outcome", outcome)];
    metric(router, "fleetgate_hub_webhook_attempts_total", &labels).await
}

/// The value of the series of `name` with these labels on `/metrics` (0 if absent).
async fn metric(router: &Router, name: &str, labels: &[(&str, &str)]) -> f64 {
    let req = axum::http::Request::get("/metrics")
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = tower::ServiceExt::oneshot(router.clone(), req)
        .await
        .unwrap();
    let text = axum::body::to_bytes(resp.into_body(), 1 << 22)
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .find(|l| {
            l.starts_with(&format!("{name}{{"))
                && labels
                    .iter()
                    .all(|(k, v)| l.contains(&format!("{k}=\"{v}\"")))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// Nothing more reached `rx` (call after the step that would have sent it).
fn nothing_more(rx: &mut Received, what: &str) {
    if let Ok((h, b)) = rx.try_recv() {
        panic!(
            "{what}: unexpected request {:?} {}",
            h.get("webhook-id"),
            String::from_utf8_lossy(&b)
        );
    }
}

/// Polls `probe` every 20 ms until it holds (30 s at most).
async fn until<F, Fut>(what: &str, mut probe: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    within(what, async {
        while !probe().await {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
}
