//! Calendar feeds against a real local HTTP server: the first fetch is a gate change (audit by
//! calendar-sync, revision bump), a conditional GET answered 304 changes nothing, failures
//! (500, timeout, oversize body, redirect loop) keep the last good copy and say why, two
//! replicas stepping at once fetch a due feed once, a replica that dies holding a claim loses
//! nothing (another takes over when the lease runs out, also after a restart), and a feed not
//! fetched for maxStale turns stale: `onStale: closed` closes the gate and `calendar.stale` is
//! enqueued.

mod common;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::TimeZone;
use common::{Hub, t0};
use fleetgate_hub::calendar_sync::{CalendarMetrics, CalendarOptions, CalendarSync};
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::service::calendars::Recorded;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::GateState;
use tokio::sync::Mutex;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Ok,
    Error,
    Slow,
    Huge,
    RedirectLoop,
}

struct Feed {
    mode: Mutex<Mode>,
    body: Mutex<String>,
    requests: AtomicUsize,
    conditional: AtomicUsize,
}

fn ics(summary: &str, day: u32) -> String {
    format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:{summary}\r\nDTSTART:202611{day:02}T000000Z\r\nDTEND:202611{day:02}T060000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )
}

async fn serve_feed(State(feed): State<Arc<Feed>>, headers: HeaderMap) -> Response {
    feed.requests.fetch_add(1, Ordering::SeqCst);
    let mode = *feed.mode.lock().await;
    let body = feed.body.lock().await.clone();
    let etag = format!("\"{}\"", body.len());
    match mode {
        Mode::Ok => {
            if headers
                .get(header::IF_NONE_MATCH)
                .is_some_and(|v| v.to_str().ok() == Some(etag.as_str()))
            {
                feed.conditional.fetch_add(1, Ordering::SeqCst);
                return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
            }
            ([(header::ETAG, etag)], body).into_response()
        }
        Mode::Error => (StatusCode::INTERNAL_SERVER_ERROR, "boom").into_response(),
        Mode::Slow => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            body.into_response()
        }
        Mode::Huge => "X".repeat(200 * 1024).into_response(),
        Mode::RedirectLoop => {
            (StatusCode::FOUND, [(header::LOCATION, "/feed.ics")]).into_response()
        }
    }
}

fn sync(replica: &str) -> CalendarSync {
    let opts = CalendarOptions {
        calendar_allow_private: true,
        calendar_allow_http: true,
        ..CalendarOptions::default()
    };
    let egress = EgressOptions {
        egress_timeout: Duration::from_secs(1),
        egress_connect_timeout: Duration::from_secs(1),
        egress_max_response_bytes: 64 * 1024,
        ..EgressOptions::default()
    };
    CalendarSync::new(&opts, &egress, replica.into(), CalendarMetrics::default()).unwrap()
}

async fn audits(hub: &Hub, action: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from audit_log where action = $1 and actor = 'calendar-sync'",
    )
    .bind(action)
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    n
}

#[tokio::test]
async fn feed_refresh_conditional_get_failures_replicas_and_staleness() {
    let hub = Hub::new().await;
    let feed = Arc::new(Feed {
        mode: Mutex::new(Mode::Ok),
        body: Mutex::new(ics("Quarter close freeze", 26)),
        requests: AtomicUsize::new(0),
        conditional: AtomicUsize::new(0),
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/feed.ics", get(serve_feed))
        .with_state(feed.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    hub.register("a", serde_json::json!({})).await;
    let r = hub
        .create_gate_yaml(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: cab}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - name: cab\n      kind: deny\n      calendar: {{url: \"http://{addr}/feed.ics\", refresh: 1h, maxStale: 48h, onStale: closed}}\n"
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let admin = Actor::new("t", Role::Admin);
    let (hub_ref, admin_ref) = (&hub, &admin);
    let state_at = move |h: u32| async move {
        let at = chrono::Utc.with_ymd_and_hms(2026, 11, 26, h, 0, 0).unwrap();
        let p = hub_ref
            .service
            .preview_gate(
                admin_ref,
                "cab",
                Some(at),
                Some(at + chrono::Duration::minutes(1)),
                None,
            )
            .await
            .unwrap();
        (p.initial.state, p.initial.reason)
    };
    // Never fetched, onStale: closed: closed.
    let (s, why) = state_at(12).await;
    assert_eq!(s, GateState::Closed, "{why}");
    assert!(why.contains("never fetched"), "{why}");

    // First fetch: a gate change.
    let r1 = sync("r1");
    let rev = hub.revision().await;
    assert_eq!(r1.step(&hub.service).await.unwrap(), [Recorded::Changed]);
    assert_eq!(feed.requests.load(Ordering::SeqCst), 1);
    assert_eq!(audits(&hub, "calendar.change").await, 1);
    assert!(hub.revision().await > rev);
    let (s, why) = state_at(3).await;
    assert_eq!(s, GateState::Closed);
    assert!(
        why.starts_with("deny window 'cab' (Quarter close freeze) until"),
        "{why}"
    );
    assert_eq!(state_at(12).await.0, GateState::Open);
    let rec = hub.service.get_gate(&admin, "cab").await.unwrap();
    assert_eq!(rec.calendars.len(), 1);
    let st = &rec.calendars[0];
    assert_eq!(
        (st.last_fetch_at, st.occurrences, st.stale),
        (Some(t0()), 1, false)
    );

    // Not due yet: nothing fetched.
    assert_eq!(r1.step(&hub.service).await.unwrap(), []);
    // Due: a conditional GET, answered 304, changes nothing.
    hub.clock.advance(chrono::Duration::hours(1));
    let rev = hub.revision().await;
    assert_eq!(r1.step(&hub.service).await.unwrap(), [Recorded::Unchanged]);
    assert_eq!(feed.conditional.load(Ordering::SeqCst), 1);
    assert_eq!(hub.revision().await, rev);

    // Two replicas at once: one fetch.
    hub.clock.advance(chrono::Duration::hours(1));
    let r2 = sync("r2");
    let before = feed.requests.load(Ordering::SeqCst);
    let (a, b) = tokio::join!(r1.step(&hub.service), r2.step(&hub.service));
    assert_eq!(a.unwrap().len() + b.unwrap().len(), 1);
    assert_eq!(feed.requests.load(Ordering::SeqCst), before + 1);

    // Failures keep the last good copy and say why.
    for (mode, why) in [
        (Mode::Error, "HTTP 500"),
        (Mode::Slow, "timed out"),
        (Mode::Huge, "larger than"),
        (Mode::RedirectLoop, "redirect"),
    ] {
        *feed.mode.lock().await = mode;
        hub.clock.advance(chrono::Duration::hours(1));
        assert_eq!(r1.step(&hub.service).await.unwrap(), [Recorded::Failed]);
        let st = &hub.service.get_gate(&admin, "cab").await.unwrap().calendars[0];
        let error = st.error.clone().unwrap_or_default();
        assert!(error.contains(why), "{why}: {error}");
        assert_eq!(st.occurrences, 1);
        assert_eq!(state_at(3).await.0, GateState::Closed);
    }

    // A replica dies holding a claim: the feed waits for its lease, then another fetches it;
    // a restarted hub (a new service on the same database) carries on from PostgreSQL.
    *feed.mode.lock().await = Mode::Ok;
    *feed.body.lock().await = ics("Moved freeze", 27);
    hub.clock.advance(chrono::Duration::hours(1));
    let claimed = hub
        .service
        .claim_due_feeds("dead", chrono::Duration::minutes(2), 16)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(r2.step(&hub.service).await.unwrap(), []);
    hub.clock.advance(chrono::Duration::minutes(3));
    let restarted =
        fleetgate_hub::Service::with_clock(hub.pool.clone(), Arc::new(hub.clock.clone()));
    assert_eq!(
        sync("r3").step(&restarted).await.unwrap(),
        [Recorded::Changed]
    );
    assert_eq!(audits(&hub, "calendar.change").await, 2);
    assert_eq!(state_at(3).await.0, GateState::Open);
    let at = chrono::Utc.with_ymd_and_hms(2026, 11, 27, 3, 0, 0).unwrap();
    let p = hub
        .service
        .preview_gate(
            &admin,
            "cab",
            Some(at),
            Some(at + chrono::Duration::minutes(1)),
            None,
        )
        .await
        .unwrap();
    assert_eq!(p.initial.state, GateState::Closed);
    // The dead replica's late record is refused (its lease was taken over).
    assert_eq!(
        hub.service
            .record_feed_fetch("dead", &claimed[0], Err("late".into()))
            .await
            .unwrap(),
        Recorded::Lost
    );

    // Unreachable past maxStale (48h): stale, closed, announced once.
    *feed.mode.lock().await = Mode::Error;
    for _ in 0..5 {
        hub.clock.advance(chrono::Duration::hours(12));
        r1.step(&hub.service).await.unwrap();
    }
    let st = &hub.service.get_gate(&admin, "cab").await.unwrap().calendars[0];
    assert!(st.stale, "{st:?}");
    let p = hub
        .service
        .preview_gate(&admin, "cab", None, None, None)
        .await
        .unwrap();
    assert_eq!(p.initial.state, GateState::Closed);
    assert!(
        p.initial.reason.contains("stale since"),
        "{}",
        p.initial.reason
    );
    let (n,): (i64,) =
        sqlx::query_as("select count(*) from notify_events where type = 'calendar.stale'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    assert_eq!(n, 1);
}
