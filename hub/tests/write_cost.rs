//! What a fleet-wide close and its cancel cost through REST does not grow with the
//! fleet: the same SQL statements, notification events and webhook deliveries for 10
//! clusters as for 400 (issue 32: the close call went from 7.6 ms to 544 ms at 19,000
//! clusters when work per cluster crept into the write). Counted, not timed: every
//! statement sqlx runs inside the request is a `sqlx::query` tracing event, counted by
//! a layer for the request's span.
//!
//! The ignored `close_cost_by_fleet_size` prints the same write's time at 1,000, 4,000
//! and 16,000 clusters and how it grows per 4× clusters (≈ 4× linear, ≈ 16× quadratic):
//! `cargo test --workspace --test write_cost -- --ignored --nocapture`.

mod common;

use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_api_types::webhooks::WebhookSpec;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::NotifyOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{Actor, Role};
use serde_json::json;
use tracing::Instrument as _;
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::registry::LookupSpan;

/// The span whose SQL statements are counted.
const COUNTED: &str = "counted_request";

/// SQL statements run inside a [`COUNTED`] span.
static STATEMENTS: AtomicUsize = AtomicUsize::new(0);

/// Of [`STATEMENTS`], those that read `fleet_revision.clusters_version`: each is one
/// read of the fleet's clusters through the replica's copy (`scoped_cached`).
static FLEET_READS: AtomicUsize = AtomicUsize::new(0);

/// Counts sqlx's per-statement events inside a [`COUNTED`] span.
struct CountStatements;

/// Whether any field of a statement event (its summary, its SQL) names `clusters_version`.
#[derive(Default)]
struct NamesClustersVersion(bool);

impl tracing::field::Visit for NamesClustersVersion {
    fn record_str(&mut self, _: &tracing::field::Field, value: &str) {
        self.0 |= value.contains("clusters_version");
    }

    fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0 |= format!("{value:?}").contains("clusters_version");
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for CountStatements {
    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        if event.metadata().target() == "sqlx::query"
            && ctx
                .event_scope(event)
                .is_some_and(|mut spans| spans.any(|s| s.name() == COUNTED))
        {
            STATEMENTS.fetch_add(1, Ordering::SeqCst);
            let mut names = NamesClustersVersion::default();
            event.record(&mut names);
            if names.0 {
                FLEET_READS.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
}

/// Installs the counting subscriber (before [`Hub::new`], whose own `try_init` then
/// leaves it in place).
fn count_statements() {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        tracing::subscriber::set_global_default(
            tracing_subscriber::registry().with(CountStatements),
        )
        .expect("the first subscriber");
    });
}

/// The bench fleet's gate (fleetgate-bench's): every `fleet=bench` cluster.
const GATE: &str = include_str!("../../bench/bench-window.yaml");

/// A hub with `n` clusters labelled `fleet=bench`, the bench gate over them, and a
/// webhook on their gate and override events selecting them by label (so routing looks
/// at each cluster of an event).
async fn fleet(n: i32) -> Hub {
    let hub = Hub::new().await;
    sqlx::query(
        "insert into clusters (name, labels, token_hash, created_at) \
         select 'b-' || lpad(i::text, 5, '0'), '{\"fleet\": \"bench\"}'::jsonb, \
                sha256(i::text::bytea), now() \
         from generate_series(1, $1) i",
    )
    .bind(n)
    .execute(&hub.pool)
    .await
    .unwrap();
    let r = hub.create_gate_yaml(GATE).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let opts = NotifyOptions {
        webhook_allow_private: true,
        webhook_allow_http: true,
        ..NotifyOptions::default()
    };
    let replica = Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        GrpcOptions::default(),
    )
    .with_notify(&opts, &EgressOptions::default())
    .unwrap();
    let spec: WebhookSpec = serde_json::from_value(json!({
        "name": "bench-hook",
        "url": "http://127.0.0.1:9/hook",
        "events": ["gate.*", "override.*"],
        "gates": ["bench-window"],
        "clusters": {"selector": {"matchLabels": {"fleet": "bench"}}},
    }))
    .unwrap();
    hub.service
        .create_webhook(
            &Actor::new("bench", Role::Admin),
            spec,
            &replica.notifier.delivery.egress,
        )
        .await
        .unwrap();
    hub
}

/// What one request cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Cost {
    statements: usize,
    /// Reads of the fleet's clusters (each a version check of the replica's copy).
    fleet_reads: usize,
    events: i64,
    deliveries: i64,
}

async fn rows(hub: &Hub) -> (i64, i64) {
    sqlx::query_as(
        "select (select count(*) from notify_events), (select count(*) from webhook_deliveries)",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap()
}

/// Calls `uri` as the operator inside the counted span; its answer and its cost.
async fn counted(hub: &Hub, method: Method, uri: &str) -> (common::Resp, Cost) {
    // A later instant: gate.opened/closed events are deduplicated per instant.
    hub.clock.advance(chrono::Duration::minutes(1));
    let (events, deliveries) = rows(hub).await;
    STATEMENTS.store(0, Ordering::SeqCst);
    FLEET_READS.store(0, Ordering::SeqCst);
    let body = (method == Method::POST)
        .then(|| ("application/json", "{\"reason\": \"bench\"}".to_string()));
    let r = hub
        .call(method, uri, Some(&hub.operator), body)
        .instrument(tracing::info_span!(COUNTED))
        .await;
    let statements = STATEMENTS.load(Ordering::SeqCst);
    let fleet_reads = FLEET_READS.load(Ordering::SeqCst);
    let (events_after, deliveries_after) = rows(hub).await;
    let cost = Cost {
        statements,
        fleet_reads,
        events: events_after - events,
        deliveries: deliveries_after - deliveries,
    };
    (r, cost)
}

/// Closes the bench gate on every cluster and cancels the override; the cost of each.
async fn close_and_cancel(hub: &Hub, n: usize) -> (Cost, Cost) {
    let (r, close) = counted(hub, Method::POST, "/api/v1/gates/bench-window/close").await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    // The close reached every cluster: one gate.closed naming all of them.
    let (closed,): (i64,) = sqlx::query_as(
        "select coalesce(max(cardinality(clusters)), 0)::bigint from notify_events where type = 'gate.closed'",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!(closed, n as i64, "gate.closed names every cluster");
    let (r, cancel) = counted(hub, Method::DELETE, &format!("/api/v1/overrides/{id}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    (close, cancel)
}

#[tokio::test]
async fn a_fleet_wide_close_costs_the_same_statements_and_events_at_any_fleet_size() {
    count_statements();
    let mut costs = Vec::new();
    for n in [10, 400] {
        let hub = fleet(n).await;
        // The first write of a fleet reads its clusters (then kept while they do not
        // change) and stamps the operator token's first use: not what is compared.
        close_and_cancel(&hub, n as usize).await;
        costs.push((n, close_and_cancel(&hub, n as usize).await));
    }
    let (small, (close_small, cancel_small)) = costs[0];
    let (large, (close_large, cancel_large)) = costs[1];
    assert!(close_small.statements > 0, "statements are counted");
    // The operator's whole-gate close reads the fleet's clusters once, in its write
    // (the check before admission does not need them); the cancel once.
    assert_eq!(close_small.fleet_reads, 1, "fleet reads of the close");
    assert_eq!(cancel_small.fleet_reads, 1, "fleet reads of the cancel");
    // override.created, gate.closed; one delivery each (the webhook is not per cluster).
    assert_eq!((close_small.events, close_small.deliveries), (2, 2));
    // override.ended, gate.opened.
    assert_eq!((cancel_small.events, cancel_small.deliveries), (2, 2));
    assert_eq!(
        close_small, close_large,
        "close on {small} vs {large} clusters"
    );
    assert_eq!(
        cancel_small, cancel_large,
        "cancel on {small} vs {large} clusters"
    );
}

fn median(v: &mut [Duration]) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run with --ignored --nocapture"]
async fn close_cost_by_fleet_size() {
    let mut last: Option<(Duration, Duration)> = None;
    for n in [1_000, 4_000, 16_000] {
        let hub = fleet(n).await;
        let (mut closes, mut cancels) = (Vec::new(), Vec::new());
        for _ in 0..6 {
            let t = Instant::now();
            let r = hub
                .post_json(
                    "/api/v1/gates/bench-window/close",
                    &hub.operator,
                    json!({"reason": "bench"}),
                )
                .await;
            closes.push(t.elapsed());
            assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
            let id = r.body["id"].as_str().unwrap();
            let t = Instant::now();
            let r = hub.cancel_override(id).await;
            cancels.push(t.elapsed());
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        }
        // The first of each reads the fleet into the write's cache.
        let close = median(&mut closes[1..]);
        let cancel = median(&mut cancels[1..]);
        let growth = last.map_or_else(String::new, |(c, x)| {
            format!(
                "; ×{:.1} / ×{:.1} for 4× the clusters (linear ≈ 4, quadratic ≈ 16)",
                close.as_secs_f64() / c.as_secs_f64(),
                cancel.as_secs_f64() / x.as_secs_f64()
            )
        });
        println!(
            "fleet-wide close / cancel through REST at {n} clusters: p50 {:.1} / {:.1} ms{growth}",
            close.as_secs_f64() * 1e3,
            cancel.as_secs_f64() * 1e3
        );
        last = Some((close, cancel));
    }
}
