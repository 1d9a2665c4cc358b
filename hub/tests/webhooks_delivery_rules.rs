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

mod common;
mod grpc_support;
mod notify_support;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse as _, Response};
use chrono::{DateTime, Utc};
use common::{Hub, t0};
use fleetgate_hub::clock::Clock as _;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::egress::EgressOptions;
use fleetgate_hub::notify::{NotifyOptions, deliver};
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1 as pb;
use grpc_support::served::Served;
use grpc_support::{Grpc, authed, within};
use notify_support::{
    Received, call, enqueue_numbered, next, receiver, receiver_answering, replica_with, subscribe,
    verify,
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

#[tokio::test]
async fn a_410_disables_the_endpoint_everywhere_and_nothing_more_is_sent() {
    let hub = Hub::new().await;
    let replica = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts())
        .with_notify(&notify_support::opts(), &EgressOptions::default())
        .unwrap();
    let served = Served::start(replica).await;
    let router = served.http.clone();
    // `gone` answers 410 once, then 204; `canary` always 204.
    let (gone_url, mut gone_rx) = receiver_answering(|n| {
        if n == 0 {
            (StatusCode::GONE, "this receiver was decommissioned").into_response()
        } else {
            StatusCode::NO_CONTENT.into_response()
        }
    })
    .await;
    let (canary_url, mut canary_rx) = receiver(0).await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "gone", "url": gone_url, "events": ["spoke.*"]}),
    )
    .await;
    enqueue_numbered(&hub, 0).await;
    enqueue_numbered(&hub, 1).await; // queued behind the first

    let (_, first, _) = next(&mut gone_rx).await;
    assert_eq!(first["data"]["n"], 0);
    until("the endpoint disabled", || async {
        let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/gone", None).await;
        got["spec"]["enabled"] == false
    })
    .await;

    // REST: disabled with the reason; the 410'd delivery failed, recorded.
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/gone", None).await;
    assert_eq!(
        got["disabledReason"], "the endpoint answered 410 Gone",
        "{got}"
    );
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/gone/deliveries",
        None,
    )
    .await;
    let states: Vec<(Value, Value)> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["state"].clone(), d["attempts"].clone()))
        .collect();
    assert_eq!(
        states,
        vec![(json!("pending"), json!(0)), (json!("failed"), json!(1))],
        "newest first: the second never tried, the first failed once: {list}"
    );
    let gone_id = list[1]["id"].as_i64().unwrap();
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/gone/deliveries/{gone_id}"),
        None,
    )
    .await;
    assert_eq!(one["attemptLog"][0]["status"], 410, "{one}");
    assert_eq!(
        one["attemptLog"][0]["responseExcerpt"], "this receiver was decommissioned",
        "{one}"
    );
    assert_eq!(one["lastError"], "HTTP 410", "{one}");

    // gRPC: the same.
    let mut admin = served.grpc.admin();
    let got = within(
        "GetWebhook",
        admin.get_webhook(authed(
            pb::GetWebhookRequest {
                name: "gone".into(),
            },
            &hub.admin,
        )),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(got.spec.as_ref().unwrap().enabled, Some(false), "{got:?}");
    assert_eq!(got.disabled_reason, "the endpoint answered 410 Gone");

    // Audit: one entry by the hub, naming the reason.
    let audit = served
        .get_json("/api/v1/audit?targetKind=webhook&target=gone", &hub.admin)
        .await;
    let disables: Vec<&Value> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["action"] == "webhook.disable")
        .collect();
    assert_eq!(disables.len(), 1, "{audit}");
    assert_eq!(disables[0]["actor"], "fleetgate-hub");
    assert_eq!(disables[0]["reason"], "the endpoint answered 410 Gone");
    assert_eq!(disables[0]["after"]["enabled"], false);

    // The per-endpoint metrics.
    assert_eq!(attempts_metric(&router, "gone", "gone").await, 1.0);
    let gone = [("webhook", "gone"), ("reason", "gone")];
    assert_eq!(
        metric(&router, "fleetgate_hub_webhooks_disabled_total", &gone).await,
        1.0
    );

    // Nothing more is sent to it: a canary subscribed after the disable
    // gets a new event, so the worker has claimed since; `gone` got nothing,
    // neither its queued event nor a delivery of the new one.
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "canary", "url": canary_url, "events": ["spoke.*"]}),
    )
    .await;
    enqueue_numbered(&hub, 2).await;
    let (_, seen, _) = next(&mut canary_rx).await;
    assert_eq!(seen["data"]["n"], 2);
    nothing_more(&mut gone_rx, "a disabled endpoint");
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/gone/deliveries",
        None,
    )
    .await;
    assert_eq!(
        list.as_array().unwrap().len(),
        2,
        "no delivery routed to a disabled endpoint: {list}"
    );

    // Disabled by a person over gRPC (already disabled: the hub's reason
    // stays), then enabled over REST: the reason and failure run are
    // cleared, the filters kept, and the queue goes on with the event that
    // waited; the 410'd one stays failed.
    let got = within(
        "SetWebhookEnabled",
        admin.set_webhook_enabled(authed(
            pb::SetWebhookEnabledRequest {
                name: "gone".into(),
                enabled: false,
            },
            &hub.admin,
        )),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(got.spec.as_ref().unwrap().enabled, Some(false));
    assert_eq!(got.disabled_reason, "the endpoint answered 410 Gone");
    let (status, body) = call(&router, Method::POST, "/api/v1/webhooks/gone/enable", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["spec"]["enabled"], true, "{body}");
    assert_eq!(body["spec"]["events"], json!(["spoke.*"]), "{body}");
    assert!(
        body["disabledReason"].is_null() && body["failingSince"].is_null(),
        "{body}"
    );
    let (_, resumed, _) = next(&mut gone_rx).await;
    assert_eq!(resumed["data"]["n"], 1);
    let audit = served
        .get_json("/api/v1/audit?targetKind=webhook&target=gone", &hub.admin)
        .await;
    let trail: Vec<(&str, &str)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["action"].as_str().unwrap(), i["actor"].as_str().unwrap()))
        .collect();
    assert_eq!(
        trail[..3],
        [
            ("webhook.enable", "bootstrap-admin"),
            ("webhook.disable", "bootstrap-admin"),
            ("webhook.disable", "fleetgate-hub"),
        ],
        "{audit}"
    );
    // Viewers and operators may not.
    let (status, _) = notify_support::call_as(
        &router,
        &hub.operator,
        Method::POST,
        "/api/v1/webhooks/gone/disable",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    served.grpc.stop().await;
}

#[tokio::test]
async fn retry_after_in_seconds_and_as_a_date_is_never_retried_before() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m,1m,1m,1m"));
    // Each answer asks for a wait: 120 s; an HTTP date 300 s ahead (of the
    // wall clock, the receiver's); 1 s (shorter than the schedule's 1 m);
    // ten days (capped at one). Then 204.
    let date = Utc::now() + chrono::Duration::seconds(300);
    let http_date = date.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
    let (url, rx) = receiver_answering(move |n| match n {
        0 => with_header(StatusCode::SERVICE_UNAVAILABLE, "retry-after", "120".into()),
        1 => with_header(
            StatusCode::TOO_MANY_REQUESTS,
            "retry-after",
            http_date.clone(),
        ),
        2 => with_header(StatusCode::SERVICE_UNAVAILABLE, "retry-after", "1".into()),
        3 => with_header(
            StatusCode::SERVICE_UNAVAILABLE,
            "retry-after",
            "864000".into(),
        ),
        _ => StatusCode::NO_CONTENT.into_response(),
    })
    .await;
    let secret = subscribe(&router, common::ADMIN, json!({"name": "slow", "url": url})).await;
    enqueue_numbered(&hub, 0).await;

    let mut slow = Slow {
        hub: &hub,
        r: &r,
        router: &router,
        rx,
        secret,
        id: None,
    };
    let s = chrono::Duration::seconds;
    slow.fails_then_waits(s(120), s(120), "Retry-After: 120")
        .await;
    // The date was taken before the attempt: 300 s less the time since.
    slow.fails_then_waits(s(240), s(300), "Retry-After: <HTTP date>")
        .await;
    // A shorter Retry-After does not bring the schedule's wait forward (1 m ±20 %).
    slow.fails_then_waits(s(48), s(72), "Retry-After: 1").await;
    slow.fails_then_waits(
        s(24 * 3600),
        s(24 * 3600),
        "Retry-After: ten days (a day at most)",
    )
    .await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (_, v, _) = next(&mut slow.rx).await;
    assert_eq!(v["data"]["n"], 0);
    let d = newest(&router, "slow").await;
    assert_eq!(d["state"], "delivered", "{d}");
    let statuses: Vec<Value> = d["attemptLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        vec![json!(503), json!(429), json!(503), json!(503), json!(204)]
    );
    assert_eq!(attempts_metric(&router, "slow", "retry").await, 4.0);
    assert_eq!(attempts_metric(&router, "slow", "delivered").await, 1.0);
}

/// One delivery retried by the `retry_after_…` test.
struct Slow<'a> {
    hub: &'a Hub,
    r: &'a Replica,
    router: &'a Router,
    rx: Received,
    secret: String,
    /// Its `webhook-id`, the same on every attempt.
    id: Option<String>,
}

impl Slow<'_> {
    /// An attempt now that fails: sent (signed, same id), recorded at the
    /// hub's clock, the next one scheduled `min..=max` later; not claimable
    /// a second before that, and the clock then moves to it.
    async fn fails_then_waits(
        &mut self,
        min: chrono::Duration,
        max: chrono::Duration,
        label: &str,
    ) {
        let now = self.hub.clock.now();
        assert_eq!(
            tick(self.hub, self.r).await,
            1,
            "{label}: the delivery is due"
        );
        let (h, _, raw) = next(&mut self.rx).await;
        verify(&self.secret, &h, &raw);
        let msg = h["webhook-id"].to_str().unwrap().to_string();
        assert_eq!(
            self.id.get_or_insert(msg.clone()),
            &msg,
            "retries keep the id"
        );
        let d = newest(self.router, "slow").await;
        assert_eq!(d["state"], "pending", "{label}: {d}");
        let last = d["attemptLog"].as_array().unwrap().last().unwrap().clone();
        assert_eq!(
            instant(&last["at"]),
            now,
            "{label}: attempt at the hub's clock"
        );
        let next_at = instant(&d["nextAttemptAt"]);
        let wait = next_at - now;
        assert!(
            wait >= min && wait <= max,
            "{label}: next attempt {wait} after this one, expected {min}..={max}: {d}"
        );
        self.hub.clock.set(next_at - chrono::Duration::seconds(1));
        assert_eq!(tick(self.hub, self.r).await, 0, "{label}: not before it");
        nothing_more(&mut self.rx, label);
        self.hub.clock.set(next_at);
    }
}

#[tokio::test]
async fn a_3xx_is_a_failure_and_no_redirect_is_followed() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m,1m"));
    // Where the redirects point: must never be contacted.
    let (target_url, mut target_rx) = receiver(0).await;
    let port = target_url
        .trim_start_matches("http://127.0.0.1:")
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let cross_host = format!("http://localhost:{port}/hook");
    let (url, mut rx) = receiver_answering(move |n| match n {
        // Same origin: following it would reach this receiver again at once.
        0 => with_header(
            StatusCode::TEMPORARY_REDIRECT,
            "location",
            "/hook?moved".into(),
        ),
        // Another host.
        1 => with_header(StatusCode::FOUND, "location", cross_host.clone()),
        2 => with_header(
            StatusCode::PERMANENT_REDIRECT,
            "location",
            target_url.clone(),
        ),
        _ => StatusCode::NO_CONTENT.into_response(),
    })
    .await;
    subscribe(&router, common::ADMIN, json!({"name": "moved", "url": url})).await;
    enqueue_numbered(&hub, 0).await;

    for (status, label) in [
        (307, "same origin"),
        (302, "another host"),
        (308, "another port"),
    ] {
        assert_eq!(tick(&hub, &r).await, 1, "{label}");
        next(&mut rx).await;
        nothing_more(&mut rx, &format!("{label}: one request per attempt"));
        nothing_more(&mut target_rx, &format!("{label}: the redirect target"));
        let d = newest(&router, "moved").await;
        assert_eq!(d["state"], "pending", "{label}: a failure, retried: {d}");
        assert_eq!(d["lastStatus"], status, "{label}: {d}");
        assert_eq!(d["lastError"], format!("HTTP {status}"), "{label}: {d}");
        hub.clock.set(instant(&d["nextAttemptAt"]));
    }
    assert_eq!(tick(&hub, &r).await, 1);
    next(&mut rx).await;
    assert_eq!(newest(&router, "moved").await["state"], "delivered");
    nothing_more(&mut target_rx, "the redirect target");
    assert_eq!(attempts_metric(&router, "moved", "retry").await, 3.0);
}

#[tokio::test]
async fn an_endpoint_failing_for_days_is_disabled_with_its_reason() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1h,1h,1h,1h,1h"));
    let h = chrono::Duration::hours;
    let (down_url, mut down_rx) =
        receiver_answering(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response()).await;
    // `flaky` fails, recovers once, fails again: its failure run restarts.
    let (flaky_url, mut flaky_rx) = receiver_answering(|n| {
        if n == 1 {
            StatusCode::NO_CONTENT.into_response()
        } else {
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }
    })
    .await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "down", "url": down_url}),
    )
    .await;
    subscribe(
        &router,
        common::ADMIN,
        json!({"name": "flaky", "url": flaky_url}),
    )
    .await;
    enqueue_numbered(&hub, 0).await;

    // t0: both fail; their failure runs start.
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/down", None).await;
    assert_eq!(instant(&got["failingSince"]), t0(), "{got}");

    // t0 + 119 h: `down` fails again (short of the 120 h default), `flaky`
    // is delivered, then fails its next event.
    hub.clock.set(t0() + h(119));
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    enqueue_numbered(&hub, 1).await;
    assert_eq!(
        tick(&hub, &r).await,
        1,
        "flaky's next event; down's retry is not due"
    );
    next(&mut flaky_rx).await;
    for name in ["down", "flaky"] {
        let (_, got) = call(
            &router,
            Method::GET,
            &format!("/api/v1/webhooks/{name}"),
            None,
        )
        .await;
        assert_eq!(got["spec"]["enabled"], true, "{name}: {got}");
    }
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/flaky", None).await;
    assert_eq!(instant(&got["failingSince"]), t0() + h(119), "{got}");

    // t0 + 121 h: `down` has failed for more than 120 h: disabled; `flaky`
    // for 2 h only.
    hub.clock.set(t0() + h(121));
    assert_eq!(tick(&hub, &r).await, 2);
    next(&mut down_rx).await;
    next(&mut flaky_rx).await;
    let (_, down) = call(&router, Method::GET, "/api/v1/webhooks/down", None).await;
    assert_eq!(down["spec"]["enabled"], false, "{down}");
    let reason = "every delivery attempt failed since 2026-11-25T12:00:00Z";
    assert_eq!(down["disabledReason"], reason, "{down}");
    let (_, flaky) = call(&router, Method::GET, "/api/v1/webhooks/flaky", None).await;
    assert_eq!(flaky["spec"]["enabled"], true, "{flaky}");
    let audit = hub
        .get("/api/v1/audit?targetKind=webhook&target=down")
        .await;
    let entry = &audit.body["items"][0];
    assert_eq!(entry["action"], "webhook.disable", "{}", audit.text);
    assert_eq!(entry["reason"], reason);
    assert_eq!(entry["actor"], "fleetgate-hub");
    assert_eq!(instant(&entry["at"]), t0() + h(121));
    let audit = hub
        .get("/api/v1/audit?targetKind=webhook&target=flaky")
        .await;
    assert!(
        !audit.text.contains("webhook.disable"),
        "flaky stays enabled: {}",
        audit.text
    );
    // The per-endpoint metric shows the failures.
    assert_eq!(attempts_metric(&router, "down", "retry").await, 3.0);
    assert_eq!(attempts_metric(&router, "flaky", "retry").await, 3.0);
    assert_eq!(attempts_metric(&router, "flaky", "delivered").await, 1.0);
    let disabled = |webhook| [("webhook", webhook), ("reason", "failing")];
    let name = "fleetgate_hub_webhooks_disabled_total";
    assert_eq!(metric(&router, name, &disabled("down")).await, 1.0);
    assert_eq!(metric(&router, name, &disabled("flaky")).await, 0.0);

    // Disabled: nothing more goes to it, however late.
    hub.clock.set(t0() + h(200));
    tick(&hub, &r).await;
    nothing_more(&mut down_rx, "a disabled endpoint");
}

/// The `v1,` signatures of a message.
fn signatures(h: &HeaderMap) -> usize {
    h["webhook-signature"]
        .to_str()
        .unwrap()
        .split(' ')
        .filter(|s| s.starts_with("v1,"))
        .count()
}

#[tokio::test]
async fn a_rotated_secret_signs_beside_the_new_one_for_the_overlap_only() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &notify_support::opts());
    let (url, mut rx) = receiver(0).await;
    let old = subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    let (status, rotated) = call(
        &router,
        Method::POST,
        "/api/v1/webhooks/ops/rotate-secret",
        Some(json!({"overlap": "1h"})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{rotated}");
    let new = rotated["secret"].as_str().unwrap().to_string();
    assert_ne!(new, old);
    assert_eq!(
        instant(&rotated["webhook"]["previousSecretExpiresAt"]),
        t0() + chrono::Duration::hours(1)
    );

    // During the overlap: two signatures; the reference library accepts
    // the message with either secret.
    enqueue_numbered(&hub, 0).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 2, "{h:?}");
    verify(&new, &h, &raw);
    verify(&old, &h, &raw);

    // A second before its end: still both.
    hub.clock
        .set(t0() + chrono::Duration::hours(1) - chrono::Duration::seconds(1));
    enqueue_numbered(&hub, 1).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 2, "{h:?}");
    verify(&old, &h, &raw);

    // After the overlap: the new secret only; the old one no longer verifies.
    hub.clock.set(t0() + chrono::Duration::hours(1));
    enqueue_numbered(&hub, 2).await;
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    assert_eq!(signatures(&h), 1, "{h:?}");
    verify(&new, &h, &raw);
    assert!(
        standardwebhooks::Webhook::new(&old)
            .unwrap()
            .verify(&raw, &h)
            .is_err(),
        "the old secret no longer signs"
    );
}

#[tokio::test]
async fn after_the_last_retry_the_delivery_fails_the_queue_moves_on_and_redeliver_sends_it() {
    // The default is the Standard Webhooks schedule.
    let standard = deliver::parse_schedule(deliver::DEFAULT_SCHEDULE).unwrap();
    let secs: Vec<u64> = standard.iter().map(Duration::as_secs).collect();
    assert_eq!(secs, [5, 300, 1800, 7200, 18_000, 36_000, 36_000]);

    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &opts_with("1m,1m"));
    let (url, mut rx) = receiver(3).await; // three 503s, then 204
    subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    enqueue_numbered(&hub, 0).await;
    enqueue_numbered(&hub, 1).await;

    // Three attempts of the first event (the first and two retries), the
    // second waiting behind it.
    let mut first_id = String::new();
    for attempt in 1..=3 {
        assert_eq!(tick(&hub, &r).await, 1, "attempt {attempt}");
        let (h, v, _) = next(&mut rx).await;
        assert_eq!(v["data"]["n"], 0, "attempt {attempt}: in order");
        first_id = h["webhook-id"].to_str().unwrap().to_string();
        let (_, list) = call(
            &router,
            Method::GET,
            "/api/v1/webhooks/ops/deliveries",
            None,
        )
        .await;
        let first = &list[1];
        if attempt < 3 {
            assert_eq!(first["state"], "pending", "{list}");
            hub.clock.set(instant(&first["nextAttemptAt"]));
        } else {
            assert_eq!(
                first["state"], "failed",
                "no retry after the schedule's last: {list}"
            );
            assert_eq!(first["attempts"], 3);
        }
    }
    assert_eq!(attempts_metric(&router, "ops", "retry").await, 2.0);
    assert_eq!(attempts_metric(&router, "ops", "failed").await, 1.0);

    // The queue moves on to the second event; the failed one is not tried again.
    assert_eq!(tick(&hub, &r).await, 1);
    let (_, v, _) = next(&mut rx).await;
    assert_eq!(v["data"]["n"], 1);
    hub.clock.set(t0() + chrono::Duration::days(3));
    assert_eq!(tick(&hub, &r).await, 0);
    nothing_more(&mut rx, "a failed delivery");

    // Redelivered on demand: due at once, the same webhook-id.
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/ops/deliveries",
        None,
    )
    .await;
    let id = list[1]["id"].as_i64().unwrap();
    let (status, body) = call(
        &router,
        Method::POST,
        &format!("/api/v1/webhooks/ops/deliveries/{id}/redeliver"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, v, _) = next(&mut rx).await;
    assert_eq!(v["data"]["n"], 0);
    assert_eq!(h["webhook-id"].to_str().unwrap(), first_id);
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/ops/deliveries/{id}"),
        None,
    )
    .await;
    assert_eq!(one["state"], "delivered", "{one}");
    assert_eq!(one["attempts"], 4, "{one}");
}
