//! Notifications end to end inside one test process: a real local HTTP
//! receiver (axum over TCP) verifying Standard Webhooks signatures with the
//! reference `standardwebhooks` crate and reading CloudEvents; window edges
//! found by the scheduler under the injected clock, exactly once across two
//! "replicas"; override events from the write's transaction; a receiver
//! down then up getting every event in order; a dead replica's lease taken
//! over with the same `webhook-id`; refused URLs.

mod common;
mod notify_support;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::{Hub, t0};
use fleetgate_hub::Service;
use fleetgate_hub::clock::Clock as _;
use notify_support::{call, enqueue_numbered, next, receiver, replica, run_notifier, verify};
use serde_json::{Value, json};

fn freeze_gate(name: &str) -> String {
    let start = (t0() + chrono::Duration::hours(2)).format("%Y-%m-%dT%H:%M:%S");
    let end = (t0() + chrono::Duration::hours(5)).format("%Y-%m-%dT%H:%M:%S");
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}}}\nspec:\n  clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  \
         timeZone: UTC\n  windows:\n    - {{name: freeze, kind: deny, start: \"{start}\", end: \"{end}\"}}\n"
    )
}

#[tokio::test]
async fn window_edges_once_signed_and_as_cloudevents() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "prod"})).await;
    hub.register("c", json!({"env": "dev"})).await;
    let (r1, router) = replica(&hub, "r1");

    // Refused: private destination through the default (strict) hub, bad URLs.
    for (url, why) in [
        ("https://127.0.0.1/hook", "loopback"),
        ("https://169.254.169.254/latest", "metadata"),
        ("https://10.0.0.1/x", "private"),
        ("not a url", "bad url"),
        ("ftp://example.com/x", "scheme"),
    ] {
        let r = hub
            .post_json(
                "/api/v1/webhooks",
                &hub.admin,
                json!({"name": "x", "url": url}),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{why}: {}",
            r.text
        );
        assert_eq!(r.body["error"]["field"], "url", "{why}");
    }
    let (status, body) = call(
        &router,
        Method::POST,
        "/api/v1/webhooks",
        Some(json!({"name": "m", "url": "https://169.254.169.254/"})),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::UNPROCESSABLE_ENTITY,
        "metadata stays refused with --webhook-allow-private: {body}"
    );

    let (std_url, mut std_rx) = receiver(0).await;
    let (ce_url, mut ce_rx) = receiver(0).await;
    let (status, std_hook) = call(
        &router,
        Method::POST,
        "/api/v1/webhooks",
        Some(json!({"name": "ops", "url": std_url, "events": ["gate.*"]})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{std_hook}");
    let std_secret = std_hook["secret"].as_str().unwrap().to_string();
    assert!(std_secret.starts_with("whsec_"));
    let (status, ce_hook) = call(&router, Method::POST, "/api/v1/webhooks",
        Some(json!({"name": "bus", "url": ce_url, "format": "cloudevents", "events": ["gate.closed"]}))).await;
    assert_eq!(status, StatusCode::CREATED, "{ce_hook}");
    let ce_secret = ce_hook["secret"].as_str().unwrap().to_string();
    let (_, got) = call(&router, Method::GET, "/api/v1/webhooks/ops", None).await;
    assert!(
        got.get("secret").is_none() && !got.to_string().contains("whsec_"),
        "secret never shown again: {got}"
    );

    let r = hub.create_gate_yaml(&freeze_gate("xmas")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let leads = [chrono::Duration::hours(1)];
    // A second replica: its own service over the same database and clock.
    let other = Service::with_clock(hub.pool.clone(), Arc::new(hub.clock.clone()));
    hub.service.notify_scan(&leads).await.unwrap(); // first scan: starts at t0

    // One hour before: gate.upcoming.
    hub.clock
        .set(t0() + chrono::Duration::hours(1) + chrono::Duration::seconds(1));
    let out = hub.service.notify_scan(&leads).await.unwrap();
    assert_eq!(out.inserted, 1, "one gate.upcoming");
    assert_eq!(
        out.next_due,
        Some(t0() + chrono::Duration::hours(2)),
        "wakes at the edge"
    );
    // The edge, scanned by both replicas at once: one event.
    hub.clock.set(t0() + chrono::Duration::hours(2));
    let (x, y) = tokio::join!(hub.service.notify_scan(&leads), other.notify_scan(&leads));
    assert_eq!(
        x.unwrap().inserted + y.unwrap().inserted,
        1,
        "exactly one gate.closed"
    );
    let (n,): (i64,) =
        sqlx::query_as("select count(*) from notify_events where type = 'gate.closed'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    assert_eq!(n, 1);

    let _notifier = run_notifier(&r1, &hub);

    let (h, up, raw) = next(&mut std_rx).await;
    verify(&std_secret, &h, &raw);
    assert_eq!(up["type"], "gate.upcoming", "{up}");
    assert_eq!(up["data"]["clusters"], json!(["a", "b"]));
    assert_eq!(up["data"]["state"], "closed");
    let (h, closed, raw) = next(&mut std_rx).await;
    verify(&std_secret, &h, &raw);
    assert_eq!(closed["type"], "gate.closed", "{closed}");
    assert_eq!(closed["data"]["gate"], "xmas");
    assert_eq!(closed["data"]["cause"], "window");
    assert_eq!(closed["data"]["clusters"], json!(["a", "b"]));
    assert_eq!(
        closed["data"]["at"],
        json!(t0() + chrono::Duration::hours(2))
    );
    assert_eq!(
        closed["data"]["nextTransition"],
        json!(t0() + chrono::Duration::hours(5))
    );
    assert!(
        closed["sequence"].as_i64().unwrap() > up["sequence"].as_i64().unwrap(),
        "per-subject sequence grows"
    );
    assert_eq!(h["webhook-id"], closed["id"].as_str().unwrap());

    let (h, ce, raw) = next(&mut ce_rx).await;
    verify(&ce_secret, &h, &raw);
    assert_eq!(h["content-type"], "application/cloudevents+json");
    assert_eq!(ce["specversion"], "1.0");
    assert_eq!(ce["type"], "io.fleetgate.gate.closed");
    assert_eq!(ce["subject"], "gate/xmas");
    assert!(ce["source"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(ce["id"], h["webhook-id"].to_str().unwrap());
    assert_eq!(ce["data"]["clusters"], json!(["a", "b"]));

    // An override opening the frozen gate on `a`: override.created and
    // gate.opened from the write itself, cause override.
    let r = hub
        .post_json(
            "/api/v1/gates/xmas/open",
            &hub.operator,
            json!({"for": "30m", "reason": "hotfix", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (_, opened, _) = next(&mut std_rx).await;
    assert_eq!(opened["type"], "gate.opened", "{opened}");
    assert_eq!(opened["data"]["cause"], "override");
    assert_eq!(opened["data"]["clusters"], json!(["a"]));
    assert!(
        ce_rx.try_recv().is_err(),
        "the CloudEvents subscription takes gate.closed only"
    );

    // Deliveries and attempts are visible.
    let (status, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/ops/deliveries",
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    // gate.closed was recorded before gate.opened (received above) was
    // claimed: one endpoint's deliveries go one at a time, in order.
    let first = list
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["eventType"] == "gate.closed")
        .expect("the gate.closed delivery");
    assert_eq!(first["state"], "delivered", "{list}");
    let id = first["id"].as_i64().unwrap();
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/ops/deliveries/{id}"),
        None,
    )
    .await;
    assert_eq!(one["attemptLog"][0]["status"], 204, "{one}");
    // Redeliver: the same webhook-id again.
    let message_id = one["messageId"].as_str().unwrap().to_string();
    let (status, _) = call(
        &router,
        Method::POST,
        &format!("/api/v1/webhooks/ops/deliveries/{id}/redeliver"),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (h, _, _) = next(&mut std_rx).await;
    assert_eq!(h["webhook-id"].to_str().unwrap(), message_id);
}

#[tokio::test]
async fn receiver_down_then_up_gets_every_event_in_order_and_leases_move() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(3).await; // down for three requests
    let (status, hook) = call(
        &router,
        Method::POST,
        "/api/v1/webhooks",
        Some(json!({"name": "pager", "url": url})),
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{hook}");
    let secret = hook["secret"].as_str().unwrap().to_string();
    for n in 0..4 {
        enqueue_numbered(&hub, n).await;
    }
    // A replica that claims the head and dies before sending: its lease
    // (500 ms) runs out and a live replica sends the same message.
    let mut conn = hub.pool.acquire().await.unwrap();
    let stolen = fleetgate_hub::db::webhooks::claim(&mut conn, "dead", 0.5, 10, hub.clock.now())
        .await
        .unwrap();
    assert_eq!(
        stolen.len(),
        1,
        "only the head of the endpoint's queue is claimable"
    );
    let _notifier = run_notifier(&r1, &hub);

    let mut delivered = Vec::new();
    let mut first_id = None;
    while delivered.len() < 4 {
        let (h, v, raw) = next(&mut rx).await;
        // Retries are due on the hub's clock: move it past the next one
        // (the attempt took its time before sending, so this is later).
        hub.clock.advance(chrono::Duration::seconds(1));
        verify(&secret, &h, &raw);
        let id = h["webhook-id"].to_str().unwrap().to_string();
        if v["data"]["n"] == 0 {
            assert_eq!(
                first_id.get_or_insert(id.clone()),
                &id,
                "retries keep the webhook-id"
            );
            assert_eq!(
                id, stolen[0].message_id,
                "the dead replica's delivery, same id"
            );
        }
        if delivered.last() != Some(&v["data"]["n"]) {
            delivered.push(v["data"]["n"].clone());
        }
    }
    assert_eq!(
        delivered,
        vec![json!(0), json!(1), json!(2), json!(3)],
        "in order"
    );
    let (_, list) = call(
        &router,
        Method::GET,
        "/api/v1/webhooks/pager/deliveries",
        None,
    )
    .await;
    let oldest = list.as_array().unwrap().last().unwrap().clone();
    let (_, one) = call(
        &router,
        Method::GET,
        &format!("/api/v1/webhooks/pager/deliveries/{}", oldest["id"]),
        None,
    )
    .await;
    let statuses: Vec<Value> = one["attemptLog"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["status"].clone())
        .collect();
    assert_eq!(
        statuses,
        vec![json!(503), json!(503), json!(503), json!(204)],
        "{one}"
    );
}
