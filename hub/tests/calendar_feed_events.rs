//! A calendar feed's life as the APIs and watchers see it (issue 37), fetched by a replica's
//! own refresher from a real local HTTP server, over real gRPC and the dashboard's event
//! stream:
//! - a `calendar.url` window never fetched is `notFetched` in REST and gRPC (not stale, not
//!   empty), and WatchFleet's initial events list it so;
//! - the first fetch and each later change of the feed's content are WatchFleet
//!   `CalendarFeedChanged` and SSE `calendarFeed` events (content changed, occurrences);
//! - the window edges of the feed's events are `gate.closed`/`gate.opened` with the cause
//!   `calendar`, and a plain cron window's edge on the same gate keeps the cause `window`.

mod common;
mod grpc_support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use common::{Hub, t0};
use fleetgate_hub::calendar_sync::CalendarOptions;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1 as pb;
use grpc_support::served::{Served, next_event};
use grpc_support::{Grpc, authed};
use serde_json::{Value, json};
use tokio::sync::Mutex;

/// A feed with one event per `(summary, start hour, end hour)` on 2026-11-25 (UTC).
fn ics(events: &[(&str, u32, u32)]) -> String {
    let mut s = String::from("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\n");
    for (i, (summary, from, to)) in events.iter().enumerate() {
        s.push_str(&format!(
            "BEGIN:VEVENT\r\nUID:e{i}\r\nSUMMARY:{summary}\r\nDTSTART:20261125T{from:02}0000Z\r\nDTEND:20261125T{to:02}0000Z\r\nEND:VEVENT\r\n"
        ));
    }
    s + "END:VCALENDAR\r\n"
}

/// The feed server: the first request waits until `release` is notified, so the feed stays
/// never attempted (its fetch has not come back) for as long as the test looks.
struct Feed {
    body: Mutex<String>,
    release: tokio::sync::Notify,
    released: std::sync::atomic::AtomicBool,
}

async fn serve(State(feed): State<Arc<Feed>>) -> String {
    if !feed.released.load(std::sync::atomic::Ordering::SeqCst) {
        feed.release.notified().await;
    }
    feed.body.lock().await.clone()
}

/// The replica's own refresher: plain http from loopback allowed, a short tick.
fn with_feeds(replica: Replica) -> Replica {
    let opts = CalendarOptions {
        calendar_allow_private: true,
        calendar_allow_http: true,
        calendar_tick: Duration::from_millis(100),
        ..CalendarOptions::default()
    };
    let egress = EgressOptions {
        egress_timeout: Duration::from_secs(30),
        egress_connect_timeout: Duration::from_secs(5),
        ..EgressOptions::default()
    };
    replica.with_calendars(&opts, &egress).unwrap()
}

/// The next `CalendarFeedChanged` WatchFleet event that satisfies `want`.
async fn feed_event(
    s: &mut tonic::Streaming<pb::FleetEvent>,
    want: impl Fn(&pb::CalendarFeedChanged) -> bool,
) -> (bool, pb::CalendarFeedChanged) {
    next_event(s, "a CalendarFeedChanged event", |e| match e.event {
        Some(pb::fleet_event::Event::CalendarFeed(c)) if want(&c) => Some((e.initial, c)),
        _ => None,
    })
    .await
}

/// `gate.opened`/`gate.closed` of gate cab in the outbox: (type, HH:MM, cause, clusters).
async fn edges(hub: &Hub) -> Vec<(String, String, String, Value)> {
    let rows: Vec<(String, Value)> = sqlx::query_as(
        "select type, data from notify_events where gate = 'cab' and type like 'gate.%' \
         and data->>'cause' <> 'manifest' order by id",
    )
    .fetch_all(&hub.pool)
    .await
    .unwrap();
    rows.into_iter()
        .map(|(t, d)| {
            let at = d["at"].as_str().unwrap_or_default();
            (
                t,
                at.get(11..16).unwrap_or_default().to_string(),
                d["cause"].as_str().unwrap_or_default().to_string(),
                d["clusters"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn feed_state_change_events_and_the_calendar_cause() {
    let hub = Hub::new().await;
    let feed = Arc::new(Feed {
        body: Mutex::new(ics(&[("CAB freeze", 13, 14)])),
        release: tokio::sync::Notify::new(),
        released: false.into(),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Router::new()
        .route("/cab.ics", get(serve))
        .with_state(feed.clone());
    tokio::spawn(async move { axum::serve(listener, server).await });

    hub.register("a", json!({})).await;
    // A calendar deny window, and a cron deny window 16:00-17:00 UTC daily.
    let r = hub
        .create_gate_yaml(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: cab}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - name: cab\n      kind: deny\n      calendar: {{url: \"http://{addr}/cab.ics\", refresh: 1h}}\n    - name: tea\n      kind: deny\n      schedule: \"0 16 * * *\"\n      duration: 1h\n"
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    let served = Served::start(with_feeds(Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        Grpc::opts(),
    )))
    .await;
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;

    // Never attempted (the replica's first fetch has not come back): notFetched everywhere,
    // neither stale nor failing.
    let g = hub.get("/api/v1/gates/cab").await;
    let status = &g.body["calendars"][0];
    assert_eq!(status["state"], "notFetched", "{}", g.text);
    assert_eq!(status["stale"], false, "{}", g.text);
    assert!(
        status.get("lastFetchAt").is_none_or(Value::is_null),
        "{status}"
    );
    assert!(status.get("error").is_none_or(Value::is_null), "{status}");
    let info = (served.grpc.admin())
        .get_gate(authed(
            pb::GetGateRequest { name: "cab".into() },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.calendars[0].state, "notFetched");
    assert!(!info.calendars[0].stale && info.calendars[0].last_fetch_at.is_none());
    let (initial, e) = feed_event(&mut watch, |_| true).await;
    assert!(initial);
    assert_eq!(
        (e.gate.as_str(), e.window.as_str(), e.state.as_str()),
        ("cab", "cab", "notFetched")
    );
    assert!(!e.content_changed && e.sha256.is_empty());

    hub.service.notify_scan(&[]).await.unwrap(); // the first scan starts the schedule at t0

    // The first fetch comes back: the content arrived.
    feed.released
        .store(true, std::sync::atomic::Ordering::SeqCst);
    feed.release.notify_waiters();
    let (initial, e) = feed_event(&mut watch, |c| c.content_changed).await;
    assert!(!initial);
    assert_eq!(
        (e.state.as_str(), e.previous_state.as_str(), e.occurrences),
        ("ok", "notFetched", 1)
    );
    assert_eq!(e.sha256.len(), 64);
    let first_sha = e.sha256.clone();
    let d = sse
        .next("calendarFeed", |d| d["contentChanged"] == true)
        .await;
    assert_eq!(
        (&d["gate"], &d["window"], &d["state"], &d["occurrences"]),
        (&json!("cab"), &json!("cab"), &json!("ok"), &json!(1)),
        "{d}"
    );
    assert_eq!(
        hub.get("/api/v1/gates/cab").await.body["calendars"][0]["state"],
        "ok"
    );

    // The feed's event closes the gate at 13:00 and opens it at 14:00: cause calendar; the
    // cron window's 16:00 edge: cause window.
    for h in [1, 2, 4, 5] {
        hub.clock
            .set(t0() + chrono::Duration::hours(h) + chrono::Duration::seconds(1));
        hub.service.notify_scan(&[]).await.unwrap();
    }
    let a = json!(["a"]);
    assert_eq!(
        edges(&hub).await,
        [
            (
                "gate.closed".into(),
                "13:00".into(),
                "calendar".into(),
                a.clone()
            ),
            (
                "gate.opened".into(),
                "14:00".into(),
                "calendar".into(),
                a.clone()
            ),
            (
                "gate.closed".into(),
                "16:00".into(),
                "window".into(),
                a.clone()
            ),
            (
                "gate.opened".into(),
                "17:00".into(),
                "window".into(),
                a.clone()
            ),
        ]
    );

    // The content changes: one more event, with the new occurrences.
    *feed.body.lock().await = ics(&[("CAB freeze", 18, 19), ("Patch night", 21, 23)]);
    hub.clock.advance(chrono::Duration::hours(1)); // the refresh is due
    let (_, e) = feed_event(&mut watch, |c| c.content_changed).await;
    assert_eq!((e.occurrences, e.previous_occurrences), (2, 1));
    assert_ne!(e.sha256, first_sha);
    sse.next("calendarFeed", |d| {
        d["contentChanged"] == true && d["occurrences"] == 2 && d["previousOccurrences"] == 1
    })
    .await;
    served.stop().await;
}
