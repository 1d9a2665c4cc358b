//! What the notification tests share: a real local HTTP receiver (axum over
//! TCP) that hands every request to the test, notification settings for
//! plain-http loopback receivers with fast retries, a replica of the test
//! hub with them, and signature checks with the reference
//! `standardwebhooks` crate.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse as _, Response};
use axum::routing::post;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::NotifyOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{AppState, app};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::{CancellationToken, DropGuard};
use tower::ServiceExt as _;

use super::common::{self, Hub};

/// What a receiver got: one request's headers and body.
pub type Received = mpsc::UnboundedReceiver<(HeaderMap, Bytes)>;

/// A receiver at `http://127.0.0.1:<port>/hook`: every request's headers and
/// body on the channel; the first `fail_first` requests answer 503.
pub async fn receiver(fail_first: usize) -> (String, Received) {
    receiver_answering(move |n| {
        if n < fail_first {
            StatusCode::SERVICE_UNAVAILABLE.into_response()
        } else {
            StatusCode::NO_CONTENT.into_response()
        }
    })
    .await
}

/// A receiver at `http://127.0.0.1:<port>/hook` answering its `n`th request
/// (from 0) with `answer(n)`; every request's headers and body go on the
/// channel before the answer.
pub async fn receiver_answering(
    answer: impl Fn(usize) -> Response + Clone + Send + Sync + 'static,
) -> (String, Received) {
    let (tx, rx) = mpsc::unbounded_channel();
    let seen = Arc::new(AtomicUsize::new(0));
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let (tx, seen, answer) = (tx.clone(), seen.clone(), answer.clone());
            async move {
                let n = seen.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send((headers, body));
                answer(n)
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// The next request a receiver got (20 s at most): headers, JSON body, raw body.
pub async fn next(rx: &mut Received) -> (HeaderMap, Value, Bytes) {
    let (h, b) = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a delivery within 20 s")
        .expect("receiver open");
    let v = serde_json::from_slice(&b).expect("JSON body");
    (h, v, b)
}

/// The next delivered event of type `event_type`, skipping others (20 s at most).
pub async fn next_of(rx: &mut Received, event_type: &str) -> (HeaderMap, Value, Bytes) {
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            let got = next(rx).await;
            if got.1["type"] == event_type {
                return got;
            }
        }
    })
    .await
    .unwrap_or_else(|_| panic!("a {event_type} within 20 s"))
}

/// Notification settings the tests need: local plain-http receivers, fast retries.
pub fn opts() -> NotifyOptions {
    NotifyOptions {
        webhook_allow_private: true,
        webhook_allow_http: true,
        notify_upcoming: "1h".into(),
        webhook_retry_schedule: "100ms,100ms,100ms,100ms,100ms".into(),
        webhook_poll: Duration::from_millis(50),
        webhook_lease: Duration::from_millis(500),
        ..NotifyOptions::default()
    }
}

/// A replica of `hub` with [`opts`] and a router over it.
pub fn replica(hub: &Hub, id: &str) -> (Replica, Router) {
    replica_with(hub, id, &opts())
}

/// A replica of `hub` with these notification settings and a router over it.
pub fn replica_with(hub: &Hub, id: &str, opts: &NotifyOptions) -> (Replica, Router) {
    let grpc = GrpcOptions {
        replica_id: Some(id.into()),
        ..GrpcOptions::default()
    };
    let r = Replica::new(hub.service.clone(), HttpOptions::default(), grpc)
        .with_notify(opts, &EgressOptions::default())
        .unwrap();
    let router = app(AppState::from_replica(r.clone()));
    (r, router)
}

/// Runs `r`'s notifier over `hub` until the returned guard is dropped.
pub fn run_notifier(r: &Replica, hub: &Hub) -> DropGuard {
    let stop = CancellationToken::new();
    tokio::spawn(r.notifier.clone().run(hub.service.clone(), stop.clone()));
    stop.drop_guard()
}

/// A request through `router` with `token` (JSON body if any): status and JSON.
pub async fn call_as(
    router: &Router,
    token: &str,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"));
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            axum::body::Body::from(b.to_string())
        }
        None => axum::body::Body::empty(),
    };
    let resp = router
        .clone()
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// [`call_as`] with the admin token.
pub async fn call(
    router: &Router,
    method: Method,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    call_as(router, common::ADMIN, method, uri, body).await
}

/// Enqueues a `spoke.disconnected` event numbered `n` (in `data.n`) at the
/// hub's clock, as other parts of the hub enqueue theirs.
pub async fn enqueue_numbered(hub: &Hub, n: usize) {
    enqueue_numbered_together(hub, &[n]).await;
}

/// [`enqueue_numbered`] for each of `ns`, in one transaction: every event is
/// routed to the endpoints subscribed now, before the worker can deliver (and
/// an answer change an endpoint) in between.
pub async fn enqueue_numbered_together(hub: &Hub, ns: &[usize]) {
    use fleetgate_hub::clock::Clock as _;
    let mut tx = hub.pool.begin().await.unwrap();
    for &n in ns {
        fleetgate_hub::notify::enqueue(
            &mut tx,
            &fleetgate_hub::notify::NewEvent {
                event_type: "spoke.disconnected".into(),
                subject: "cluster/a".into(),
                dedup_key: None,
                occurred_at: hub.clock.now(),
                gate: None,
                clusters: vec!["a".into()],
                data: serde_json::json!({"cluster": "a", "n": n}),
            },
        )
        .await
        .unwrap();
    }
    tx.commit().await.unwrap();
}

/// Panics unless the Standard Webhooks reference library accepts the signature.
pub fn verify(secret: &str, headers: &HeaderMap, body: &Bytes) {
    standardwebhooks::Webhook::new(secret)
        .unwrap()
        .verify(body, headers)
        .expect("signature verifies with the reference library");
}

/// Creates a subscription through `router` (as `token`); its signing secret.
pub async fn subscribe(router: &Router, token: &str, body: Value) -> String {
    let (status, hook) = call_as(router, token, Method::POST, "/api/v1/webhooks", Some(body)).await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    hook["secret"].as_str().unwrap().to_string()
}
