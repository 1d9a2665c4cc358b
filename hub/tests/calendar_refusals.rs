//! Calendar feeds that must be refused as a whole, against a real HTTP server on loopback: a
//! truncated copy of the last good feed, an HTML login page and the 253-byte FREQ=SECONDLY
//! feed each leave the feed `failing` with a reason a person understands, one more failure and
//! the attempt's time recorded, the last good copy (its deny window) in force and the
//! cluster's snapshot unchanged, and a fleet freeze still reaches the cluster. The feed
//! metrics read as documented while the feed is stale.

mod common;

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use chrono::TimeZone;
use common::Hub;
use fleetgate_api_types::records::CalendarFeedState;
use fleetgate_hub::calendar_sync::{CalendarMetrics, CalendarOptions, CalendarSync};
use fleetgate_hub::clock::Clock;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::service::calendars::Recorded;
use fleetgate_hub::service::freezes::FreezeRequest;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::GateState;
use tokio::sync::Mutex;

/// What the feed server answers: a body and its content type.
struct Feed(Mutex<(String, &'static str)>);

async fn serve_feed(State(feed): State<Arc<Feed>>) -> Response {
    let (body, kind) = feed.0.lock().await.clone();
    ([(header::CONTENT_TYPE, kind)], body).into_response()
}

const GOOD: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Quarter close freeze\r\nDTSTART:20261126T000000Z\r\nDTEND:20261126T060000Z\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nSUMMARY:Audit freeze\r\nDTSTART:20261127T000000Z\r\nDTEND:20261127T060000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

/// The 253-byte feed of the report: an event every other second.
const SECONDLY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//example.com//flood testxxxxxx//EN\r\nBEGIN:VEVENT\r\nUID:flood@example.com\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:20261101T000000Z\r\nDURATION:PT1S\r\nRRULE:FREQ=SECONDLY;INTERVAL=2\r\nSUMMARY:flood\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

const LOGIN: &str = "<!DOCTYPE html>\n<html><head><title>Sign in</title></head><body><form>...</form></body></html>\n";

fn sync(metrics: CalendarMetrics) -> CalendarSync {
    let opts = CalendarOptions {
        calendar_allow_private: true,
        calendar_allow_http: true,
        ..CalendarOptions::default()
    };
    let egress = EgressOptions {
        egress_timeout: std::time::Duration::from_secs(2),
        egress_connect_timeout: std::time::Duration::from_secs(2),
        ..EgressOptions::default()
    };
    CalendarSync::new(&opts, &egress, "r1".into(), metrics).unwrap()
}

#[tokio::test]
async fn refused_feeds_fail_visibly_and_the_last_good_copy_stays_in_force() {
    assert_eq!(SECONDLY.len(), 253);
    let hub = Hub::new().await;
    let feed = Arc::new(Feed(Mutex::new((GOOD.to_string(), "text/calendar"))));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route("/feed.ics", get(serve_feed))
        .with_state(feed.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });

    hub.register("a", serde_json::json!({})).await;
    let r = hub
        .create_gate_yaml(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: cab}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - name: cab\n      kind: deny\n      calendar: {{url: \"http://{addr}/feed.ics\", refresh: 1h, maxStale: 4h, onStale: keep}}\n"
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let admin = Actor::new("t", Role::Admin);
    // The gate's state on 27 November at 03:00 UTC, inside the good copy's second freeze.
    let in_second_freeze = || async {
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
        (p.initial.state, p.initial.reason)
    };

    let metrics = CalendarMetrics::default();
    let r1 = sync(metrics.clone());
    assert_eq!(r1.step(&hub.service).await.unwrap(), [Recorded::Changed]);
    let good_snapshot = hub.service.cluster_snapshot("a").await.unwrap();
    assert_eq!(good_snapshot.gates[0].calendars[0].occurrences.len(), 2);
    let (state, why) = in_second_freeze().await;
    assert_eq!(state, GateState::Closed, "{why}");

    // Each refused copy: failing, the reason, one more failure, the attempt's time; the deny
    // window of the last good copy stays in force and the snapshot does not change.
    let truncated = GOOD[..GOOD.rfind("DTEND").unwrap()].to_string();
    for (n, (body, kind, reason)) in [
        (truncated.as_str(), "text/calendar", "no END:VCALENDAR"),
        (LOGIN, "text/html", "an HTML page (a login or error page?)"),
        (
            SECONDLY,
            "text/calendar",
            "repeats more often than once an hour",
        ),
    ]
    .into_iter()
    .enumerate()
    {
        *feed.0.lock().await = (body.to_string(), kind);
        hub.clock.advance(chrono::Duration::hours(1));
        let rev = hub.revision().await;
        assert_eq!(
            r1.step(&hub.service).await.unwrap(),
            [Recorded::Failed],
            "{reason}"
        );
        let st = &hub.service.get_gate(&admin, "cab").await.unwrap().calendars[0];
        assert_eq!(st.state, CalendarFeedState::Failing, "{reason}: {st:?}");
        let error = st.error.clone().unwrap_or_default();
        assert!(error.contains(reason), "{reason}: {error}");
        assert_eq!(st.failures, i32::try_from(n + 1).unwrap(), "{st:?}");
        assert_eq!(st.last_attempt_at, Some(hub.clock.now()), "{st:?}");
        assert_eq!(st.occurrences, 2, "the last good copy stays");
        assert_eq!(hub.revision().await, rev, "nothing spokes see changed");
        let (state, why) = in_second_freeze().await;
        assert_eq!(state, GateState::Closed, "{reason}: {why}");
        assert_eq!(
            hub.service.cluster_snapshot("a").await.unwrap().gates,
            good_snapshot.gates
        );
    }
    assert_eq!(metrics.failing_now.get(), 1);

    // A fleet freeze reaches the cluster whose feed is failing.
    hub.service
        .freeze(
            &admin,
            FreezeRequest {
                reason: "INC-47".into(),
                ..FreezeRequest::default()
            },
        )
        .await
        .unwrap();
    let snap = hub.service.cluster_snapshot("a").await.unwrap();
    assert!(
        snap.overrides.iter().any(|o| o.is_freeze()),
        "{:?}",
        snap.overrides
    );

    // Past maxStale (4h) without a good copy: stale, and the metrics say so under their
    // documented names.
    hub.clock.advance(chrono::Duration::hours(4));
    r1.step(&hub.service).await.unwrap();
    let st = &hub.service.get_gate(&admin, "cab").await.unwrap().calendars[0];
    assert_eq!(st.state, CalendarFeedState::Stale, "{st:?}");
    let registry = fleetgate_hub::metrics::Metrics::new();
    registry.register(|r| metrics.register(r));
    let text = registry.encode().unwrap();
    for line in [
        "fleetgate_hub_calendar_feeds_stale 1",
        "fleetgate_hub_calendar_feeds_failing 0",
        "fleetgate_hub_calendar_stale_total 1",
        "fleetgate_hub_calendar_fetches_total{outcome=\"failed\"} 4",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "{line} missing in:\n{text}"
        );
    }
    assert!(!text.contains("fleetgate_hub_fleetgate_"), "{text}");
}
