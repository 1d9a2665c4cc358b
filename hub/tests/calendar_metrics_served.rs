//! The calendar feed metrics as a hub serves them: `fleetgate_hub::serve` (the binary's own
//! wiring: database, replica, refresher, HTTP on a real socket) with an injected clock, a real
//! feed server on loopback, and `/metrics` read over HTTP while the feed is failing and once it
//! is stale, under the names docs/metrics-and-alerts.md lists. Not a registry built beside the
//! hub: what an operator's Prometheus scrapes.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::{TimeZone, Utc};
use fleetgate_hub::clock::ManualClock;
use fleetgate_hub::config::ServeConfig;
use fleetgate_tests::{free_port, test_db};
use serde_json::json;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

const ADMIN: &str = "fga_metrics-served-admin-secret-0";

const GOOD: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Quarter close freeze\r\nDTSTART:20261126T000000Z\r\nDTEND:20261126T060000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

const LOGIN: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>...</form></body></html>\n";

struct Feed(Mutex<(&'static str, &'static str)>);

async fn serve_feed(State(feed): State<Arc<Feed>>) -> Response {
    let (body, kind) = *feed.0.lock().await;
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// Reads `/metrics` until every line of `want` is in it (the refresher sets the gauges each
/// tick); panics with the last text after 30 s.
async fn metrics_with(client: &reqwest::Client, base: &str, want: &[&str]) -> String {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let text = client
            .get(format!("{base}/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if want.iter().all(|w| text.lines().any(|l| l == *w)) {
            return text;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{want:?} not all in /metrics:\n{}",
            text.lines()
                .filter(|l| l.contains("calendar"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_metrics_show_a_failing_then_stale_feed() {
    let db = test_db().await;
    let feed = Arc::new(Feed(Mutex::new((GOOD, "text/calendar"))));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let feed_addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/feed.ics", get(serve_feed))
        .with_state(feed.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap());
    let http = free_port();
    let mut config = ServeConfig::new(db.url.clone());
    config.http_addr = format!("127.0.0.1:{http}").parse().unwrap();
    config.grpc_addr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    config.admin_token = Some(ADMIN.into());
    config.db_max_connections = 5;
    config.calendar.calendar_allow_private = true;
    config.calendar.calendar_allow_http = true;
    config.calendar.calendar_tick = Duration::from_millis(100);
    config.clock = Some(Arc::new(clock.clone()));
    let shutdown = CancellationToken::new();
    let hub = tokio::spawn(fleetgate_hub::serve(config, shutdown.clone()));

    let base = format!("http://127.0.0.1:{http}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .is_ok_and(|r| r.status().is_success())
    {
        assert!(!hub.is_finished(), "the hub stopped");
        assert!(tokio::time::Instant::now() < deadline, "never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let post = |path: &str, kind: &str, body: String| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(ADMIN)
            .header("content-type", kind)
            .body(body)
            .send()
    };
    let r = post(
        "/api/v1/clusters",
        "application/json",
        json!({"name": "a", "labels": {}}).to_string(),
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);
    let r = post(
        "/api/v1/gates",
        "application/yaml",
        format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: cab}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - name: cab\n      kind: deny\n      calendar: {{url: \"http://{feed_addr}/feed.ics\", refresh: 1h, maxStale: 4h, onStale: keep}}\n"
        ),
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);

    // Fetched: a good copy.
    metrics_with(
        &client,
        &base,
        &[
            "fleetgate_hub_calendar_fetches_total{outcome=\"changed\"} 1",
            "fleetgate_hub_calendar_feeds_failing 0",
            "fleetgate_hub_calendar_feeds_stale 0",
        ],
    )
    .await;

    // A login page instead of the feed: failing, not stale yet.
    *feed.0.lock().await = (LOGIN, "text/html");
    clock.advance(chrono::Duration::hours(1));
    metrics_with(
        &client,
        &base,
        &[
            "fleetgate_hub_calendar_fetches_total{outcome=\"failed\"} 1",
            "fleetgate_hub_calendar_feeds_failing 1",
            "fleetgate_hub_calendar_feeds_stale 0",
        ],
    )
    .await;

    // Past maxStale without a good copy: stale (counted there, not as failing), once.
    clock.advance(chrono::Duration::hours(4));
    let text = metrics_with(
        &client,
        &base,
        &[
            "fleetgate_hub_calendar_feeds_stale 1",
            "fleetgate_hub_calendar_feeds_failing 0",
            "fleetgate_hub_calendar_stale_total 1",
            "fleetgate_hub_calendar_fetches_total{outcome=\"failed\"} 2",
        ],
    )
    .await;
    for name in [
        "# TYPE fleetgate_hub_calendar_feeds_stale gauge",
        "# TYPE fleetgate_hub_calendar_feeds_failing gauge",
        "# TYPE fleetgate_hub_calendar_fetches counter",
        "# TYPE fleetgate_hub_calendar_stale counter",
    ] {
        assert!(text.lines().any(|l| l == name), "{name} missing:\n{text}");
    }
    assert!(!text.contains("fleetgate_hub_fleetgate_"), "{text}");

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(30), hub)
        .await
        .expect("the hub stops")
        .unwrap()
        .unwrap();
}
