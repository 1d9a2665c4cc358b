//! Notification benchmark (ignored; prints numbers, asserts nothing about
//! time): a window edge on 10,000 clusters delivered to 10 endpoints as 10
//! aggregated events, and the override write path's p50/p99 without and
//! with 10 subscriptions, in one run.
//!
//! `cargo test --release --workspace --test webhooks_bench -- --ignored --nocapture`
//! (numbers in `docs/performance.md`).

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::http::StatusCode;
use axum::routing::post;
use common::{Hub, t0};
use fleetgate_api_types::webhooks::WebhookSpec;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::NotifyOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::service::types::OverrideRequest;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::GateState;
use tokio_util::sync::CancellationToken;

const CLUSTERS: usize = 10_000;
const ENDPOINTS: usize = 10;
const WRITES: usize = 50;

async fn receiver(count: Arc<AtomicUsize>) -> String {
    let app = Router::new().route(
        "/hook",
        post(move || {
            let count = count.clone();
            async move {
                count.fetch_add(1, Ordering::SeqCst);
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

fn pct(v: &mut [Duration], p: f64) -> Duration {
    v.sort();
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

/// `n` override writes on `gate`: their p50 and p99.
async fn overrides(hub: &Hub, gate: &str, n: usize) -> (Duration, Duration) {
    let actor = Actor::new("bench", Role::Admin);
    let mut took = Vec::with_capacity(n);
    for i in 0..n {
        let state = if i % 2 == 0 {
            GateState::Open
        } else {
            GateState::Closed
        };
        let req = OverrideRequest {
            duration: Some("1h".into()),
            reason: format!("bench {i}"),
            ..OverrideRequest::default()
        };
        let start = Instant::now();
        hub.service
            .create_override(&actor, gate, state, req)
            .await
            .unwrap();
        took.push(start.elapsed());
    }
    (pct(&mut took, 0.5), pct(&mut took, 0.99))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn edge_on_10k_clusters_to_10_endpoints_and_override_p99() {
    let hub = Hub::new().await;
    sqlx::query(
        "insert into clusters (name, labels, token_hash, created_at) \
         select 'c' || lpad(i::text, 5, '0'), '{\"env\": \"prod\"}'::jsonb, sha256(i::text::bytea), now() \
         from generate_series(1, $1) i",
    )
    .bind(i32::try_from(CLUSTERS).unwrap())
    .execute(&hub.pool)
    .await
    .unwrap();
    let start = (t0() + chrono::Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S");
    let end = (t0() + chrono::Duration::hours(5)).format("%Y-%m-%dT%H:%M:%S");
    // One gate per phase: an override write evaluates the gate's live
    // overrides, so writing both phases on one gate would time the second
    // with 50 more of them (it measured about twice as slow for that alone).
    for name in ["fleet", "fleet-2", "xmas"] {
        let yaml = format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}}}\nspec:\n  clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  \
             timeZone: UTC\n  windows:\n    - {{name: freeze, kind: deny, start: \"{start}\", end: \"{end}\"}}\n"
        );
        let r = hub.create_gate_yaml(&yaml).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }

    // Override writes with no subscription.
    let (p50_without, p99_without) = overrides(&hub, "fleet", WRITES).await;

    let opts = NotifyOptions {
        webhook_allow_private: true,
        webhook_allow_http: true,
        webhook_poll: Duration::from_millis(250),
        ..NotifyOptions::default()
    };
    let replica = Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        GrpcOptions::default(),
    )
    .with_notify(&opts, &EgressOptions::default())
    .unwrap();
    let egress = replica.notifier.delivery.egress.clone();
    let count = Arc::new(AtomicUsize::new(0));
    let admin = Actor::new("bench", Role::Admin);
    for i in 0..ENDPOINTS {
        let url = receiver(count.clone()).await;
        let spec = WebhookSpec {
            name: format!("hook-{i}"),
            url,
            events: vec!["gate.closed".into()],
            gates: vec!["xmas".into()],
            clusters: None,
            format: Default::default(),
            per_cluster: false,
            enabled: true,
            description: String::new(),
        };
        hub.service
            .create_webhook(&admin, spec, &egress)
            .await
            .unwrap();
    }
    // With 10 subscriptions (of gate.closed on another gate: routing runs,
    // nothing is delivered).
    let (p50_with, p99_with) = overrides(&hub, "fleet-2", WRITES).await;

    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    hub.service.notify_scan(&[]).await.unwrap();
    tokio::spawn(
        replica
            .notifier
            .clone()
            .run(hub.service.clone(), stop.clone()),
    );
    hub.clock.set(t0() + chrono::Duration::hours(2));
    let edge = Instant::now();
    let scan = hub.service.notify_scan(&[]).await.unwrap();
    let scanned = edge.elapsed();
    replica.notifier.wake.notify_waiters();
    while count.load(Ordering::SeqCst) < ENDPOINTS {
        assert!(
            edge.elapsed() < Duration::from_secs(60),
            "delivered within a minute"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let delivered = edge.elapsed();
    // The replica's own scheduler may find the edge before this scan does
    // (then this one inserts nothing): count what the outbox holds.
    let (events,): (i64,) = sqlx::query_as(
        "select count(*) from notify_events where type = 'gate.closed' and occurred_at = $1",
    )
    .bind(t0() + chrono::Duration::hours(2))
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    println!(
        "edge on {CLUSTERS} clusters: {events} events ({} inserted by this scan), scan {:.0} ms, all {ENDPOINTS} endpoints delivered {:.0} ms after the edge",
        scan.inserted,
        scanned.as_secs_f64() * 1e3,
        delivered.as_secs_f64() * 1e3
    );
    println!(
        "override write on a {CLUSTERS}-cluster gate ({WRITES} each): without subscribers p50 {:.1} ms p99 {:.1} ms; with {ENDPOINTS} subscribers p50 {:.1} ms p99 {:.1} ms",
        p50_without.as_secs_f64() * 1e3,
        p99_without.as_secs_f64() * 1e3,
        p50_with.as_secs_f64() * 1e3,
        p99_with.as_secs_f64() * 1e3
    );
}
