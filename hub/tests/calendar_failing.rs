//! A calendar feed that starts and stops failing, as people and watchers learn of it: a real
//! feed server on loopback, the replica's own refresher, real webhook receivers and the
//! replica's WatchFleet and dashboard event stream (issue 47):
//! - the first failed fetch is one `calendar.failing` (gate, the feed's URL without its query,
//!   the reason, failures 1, when the copy in force was fetched), delivered as Standard
//!   Webhooks, CloudEvents and Slack; a second failed fetch announces nothing more; a good
//!   fetch is one `calendar.recovered`; a subscription to `calendar.failing` gets no
//!   `calendar.recovered` (filtered by type);
//! - the failure, recorded outside any write (no revision, no snapshot changed), is sent as a
//!   change notification at once, so WatchFleet's `CalendarFeedChanged` and the event stream's
//!   `calendarFeed` show `failing` (and `ok` again) without waiting for the next change;
//! - the feed's URL (a user and password, a key in its query) leaves the hub only as
//!   notifications show it, without credentials or query: in the gate's feed status over REST
//!   and gRPC, in WatchFleet and the event stream, and in the audit log (the gate's audited
//!   manifest, `calendar.change`); the stored gate keeps the URL it fetches.

mod common;
mod grpc_support;
mod notify_support;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use common::{Hub, t0};
use fleetgate_api_types::records::CalendarFeedState;
use fleetgate_hub::calendar_sync::CalendarOptions;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{Actor, Role};
use fleetgate_proto::v1 as pb;
use grpc_support::Grpc;
use grpc_support::served::{Served, next_event};
use notify_support::{call, next_of, receiver};
use serde_json::{Value, json};
use tokio::sync::Mutex;

const GOOD: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Quarter close freeze\r\nDTSTART:20261126T000000Z\r\nDTEND:20261126T060000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

const LOGIN: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>...</form></body></html>\n";

struct Feed(Mutex<(&'static str, &'static str)>);

async fn serve_feed(State(feed): State<Arc<Feed>>) -> Response {
    let (body, kind) = *feed.0.lock().await;
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

/// The replica's own refresher (plain http from loopback, a short tick) and notifier.
fn replica(hub: &Hub) -> Replica {
    let opts = CalendarOptions {
        calendar_allow_private: true,
        calendar_allow_http: true,
        calendar_tick: Duration::from_millis(100),
        ..CalendarOptions::default()
    };
    let egress = EgressOptions {
        egress_timeout: Duration::from_secs(10),
        egress_connect_timeout: Duration::from_secs(5),
        ..EgressOptions::default()
    };
    Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts())
        .with_notify(&notify_support::opts(), &EgressOptions::default())
        .unwrap()
        .with_calendars(&opts, &egress)
        .unwrap()
}

/// The next WatchFleet `CalendarFeedChanged` in `state`.
async fn feed_state(
    s: &mut tonic::Streaming<pb::FleetEvent>,
    state: &str,
) -> pb::CalendarFeedChanged {
    next_event(
        s,
        &format!("a CalendarFeedChanged to {state}"),
        |e| match e.event {
            Some(pb::fleet_event::Event::CalendarFeed(c)) if c.state == state => Some(c),
            _ => None,
        },
    )
    .await
}

async fn events_of(hub: &Hub, event_type: &str) -> Vec<Value> {
    let rows: Vec<(Value,)> =
        sqlx::query_as("select data from notify_events where type = $1 order by id")
            .bind(event_type)
            .fetch_all(&hub.pool)
            .await
            .unwrap();
    rows.into_iter().map(|r| r.0).collect()
}

/// Waits (10 s at most) until the feed's status has `failures` failures.
async fn failures_reach(hub: &Hub, failures: i32) {
    let admin = Actor::new("t", Role::Admin);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let st = hub.service.get_gate(&admin, "cab").await.unwrap().calendars[0].clone();
        if st.failures == failures {
            return;
        }
        assert!(tokio::time::Instant::now() < deadline, "{st:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_feed_is_announced_once_and_watchers_see_it_at_once() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    let feed = Arc::new(Feed(Mutex::new((GOOD, "text/calendar"))));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/feed.ics", get(serve_feed))
        .with_state(feed.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    let replica = replica(&hub);
    let router = fleetgate_hub::app(fleetgate_hub::AppState::from_replica(replica.clone()));
    let (std_url, mut std_rx) = receiver(0).await;
    let (ce_url, mut ce_rx) = receiver(0).await;
    let (slack_url, mut slack_rx) = receiver(0).await;
    for (name, url, format, events) in [
        ("ops", &std_url, "standard", json!(["calendar.*"])),
        ("bus", &ce_url, "cloudevents", json!(["calendar.failing"])),
        ("chat", &slack_url, "slack", json!(["calendar.failing"])),
    ] {
        let (status, body) = call(
            &router,
            Method::POST,
            "/api/v1/webhooks",
            Some(json!({"name": name, "url": url, "format": format, "events": events})),
        )
        .await;
        assert_eq!(status, StatusCode::CREATED, "{name}: {body}");
    }
    // The feed's key is in its query: no notification shows it.
    let r = hub
        .create_gate_yaml(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: cab}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - name: cab\n      kind: deny\n      calendar: {{url: \"http://{addr}/feed.ics?key=s3cret\", refresh: 1h, maxStale: 4h, onStale: keep}}\n"
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    let served = Served::start(replica).await;
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;
    let shown = format!("http://{addr}/feed.ics?…");
    let e = feed_state(&mut watch, "ok").await;
    assert_eq!(e.url, shown);
    let first_fetch = t0();
    feed_url_shown_without_secrets(&hub, &served, &shown).await;

    // The feed serves a login page: failing. The failure is recorded outside any write, and
    // still sent as a change notification (naming no cluster: no snapshot changed).
    let mut changes = common::changes_listener(&hub).await;
    let rev = hub.revision().await;
    *feed.0.lock().await = (LOGIN, "text/html");
    hub.clock.advance(chrono::Duration::hours(1));
    let notice = common::next_change(&mut changes).await;
    assert_eq!(notice.clusters, Some(vec![]), "{notice:?}");
    assert_eq!(hub.revision().await, rev, "no new revision");
    let e = feed_state(&mut watch, "failing").await;
    assert_eq!((e.gate.as_str(), e.previous_state.as_str()), ("cab", "ok"));
    assert_eq!(e.url, shown);
    let d = sse.next("calendarFeed", |d| d["state"] == "failing").await;
    assert_eq!(d["url"], shown.as_str(), "{d}");

    let (_, msg, raw) = next_of(&mut std_rx, "calendar.failing").await;
    let d = &msg["data"];
    assert_eq!(d["gate"], "cab");
    assert_eq!(d["window"], "cab");
    assert_eq!(d["url"], shown.as_str());
    assert!(
        d["reason"].as_str().unwrap().contains("an HTML page"),
        "{d}"
    );
    assert_eq!(d["failures"], 1);
    assert_eq!(
        d["lastGoodAt"]
            .as_str()
            .map(|s| s.parse::<chrono::DateTime<chrono::Utc>>().unwrap()),
        Some(first_fetch),
        "{d}"
    );
    assert!(!String::from_utf8_lossy(&raw).contains("s3cret"));
    assert_eq!(msg["subject"], "gate/cab");
    let (_, ce, _) = notify_support::next(&mut ce_rx).await;
    assert_eq!(ce["type"], "io.fleetgate.calendar.failing", "{ce}");
    assert_eq!(ce["data"]["failures"], 1, "{ce}");
    let (_, slack, _) = notify_support::next(&mut slack_rx).await;
    assert!(
        slack["text"]
            .as_str()
            .unwrap_or_default()
            .contains("Calendar of gate cab is failing"),
        "{slack}"
    );

    // A second failed fetch: recorded (failures 2), not announced again.
    hub.clock.advance(chrono::Duration::minutes(2));
    failures_reach(&hub, 2).await;
    assert_eq!(events_of(&hub, "calendar.failing").await.len(), 1);

    // The feed is back: one calendar.recovered; watchers see ok at once.
    *feed.0.lock().await = (GOOD, "text/calendar");
    hub.clock.advance(chrono::Duration::minutes(5));
    let e = feed_state(&mut watch, "ok").await;
    assert_eq!(e.previous_state, "failing");
    sse.next("calendarFeed", |d| d["state"] == "ok").await;
    let (_, msg, _) = next_of(&mut std_rx, "calendar.recovered").await;
    assert_eq!(msg["data"]["failures"], 2, "{msg}");
    assert_eq!(msg["data"]["url"], shown.as_str());
    assert_eq!(events_of(&hub, "calendar.recovered").await.len(), 1);
    assert_eq!(
        hub.service
            .get_gate(&Actor::new("t", Role::Admin), "cab")
            .await
            .unwrap()
            .calendars[0]
            .state,
        CalendarFeedState::Ok
    );
    // Filtered by type: the CloudEvents and Slack subscriptions got no calendar.recovered.
    let (routed,): (i64,) = sqlx::query_as(
        "select count(*) from webhook_deliveries d join webhooks w on w.id = d.webhook_id \
         join notify_events e on e.id = d.event_id \
         where e.type = 'calendar.recovered' and w.name <> 'ops'",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!(routed, 0);
    feed_url_shown_without_secrets(&hub, &served, &shown).await;
    served.stop().await;
}

/// The feed's URL as REST, gRPC and the audit log show it: `shown`, no secret anywhere;
/// the stored gate keeps the URL it fetches.
async fn feed_url_shown_without_secrets(hub: &Hub, served: &Served, shown: &str) {
    let secret = |text: &str| text.contains("s3cret") || text.contains("pa55word");
    let gate = served.get_json("/api/v1/gates/cab", &hub.viewer).await;
    assert_eq!(gate["calendars"][0]["url"], shown, "{gate}");
    assert!(!secret(&gate["calendars"].to_string()), "{gate}");
    let stored = gate["manifest"]["spec"]["windows"][0]["calendar"]["url"].to_string();
    assert!(secret(&stored), "the stored URL changed: {stored}");
    let req = pb::GetGateRequest { name: "cab".into() };
    let info = grpc_support::within(
        "GetGate",
        served
            .grpc
            .admin()
            .get_gate(grpc_support::authed(req, &hub.viewer)),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(info.calendars[0].url, shown);
    assert!(!secret(&format!("{:?}", info.calendars)), "{info:?}");
    let audit: Vec<(String, String)> = sqlx::query_as(
        "select action, concat_ws(' ', before::text, after::text, reason) from audit_log \
         where target_kind = 'gate' and target_name = 'cab' order by id",
    )
    .fetch_all(&hub.pool)
    .await
    .unwrap();
    let actions: Vec<&str> = audit.iter().map(|(a, _)| a.as_str()).collect();
    assert!(actions.contains(&"calendar.change"), "{actions:?}");
    for (action, text) in &audit {
        assert!(!secret(text), "{action}: {text}");
    }
}
