//! The events other hub writes put in the outbox, delivered to a real local
//! HTTP receiver and checked with the Standard Webhooks reference library:
//! `gate.opened`/`gate.closed` of manifest writes (create, replace,
//! delete: only the clusters whose state changed now, once per write), and
//! a rollout's `started`, `wave_released`, `halted` and `completed`; a fleet
//! freeze's `freeze.started` and `freeze.ended`.

mod common;
mod notify_support;
mod rollout_support;

use axum::http::{Method, StatusCode};
use common::Hub;
use notify_support::{Received, next, receiver, replica, subscribe, verify};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// `name` on `clusters`, closed unless an allow window (Wednesdays 13:00 UTC
/// for an hour: t0 is Wed 12:00) or `default` opens it.
fn gate(name: &str, clusters: &str, default: &str, description: &str) -> String {
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}}}\nspec:\n  \
         description: {description}\n  clusters: {clusters}\n  default: {default}\n  timeZone: UTC\n  \
         windows: [{{name: wed, kind: allow, schedule: \"0 13 * * 3\", duration: 1h}}]\n"
    )
}

async fn put_gate(hub: &Hub, name: &str, yaml: String) {
    let r = hub
        .call(
            Method::PUT,
            &format!("/api/v1/gates/{name}"),
            Some(&hub.admin),
            Some(("application/yaml", yaml)),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

/// The next delivery, verified: its JSON body.
async fn delivered(rx: &mut Received, secret: &str) -> Value {
    let (h, v, raw) = next(rx).await;
    verify(secret, &h, &raw);
    v
}

#[tokio::test]
async fn manifest_writes_announce_the_clusters_whose_state_they_change() {
    let hub = Hub::new().await;
    for (c, env) in [("a", "prod"), ("b", "prod"), ("c", "dev")] {
        hub.register(c, json!({"env": env})).await;
    }
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["gate.opened", "gate.closed"]}),
    )
    .await;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    tokio::spawn(r1.notifier.clone().run(hub.service.clone(), stop.clone()));

    // A new gate, closed now, on the prod clusters: they close.
    let prod = "{selector: {matchLabels: {env: prod}}}";
    let r = hub
        .create_gate_yaml(&gate("g", prod, "closed", "first"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "gate.closed", "{v}");
    assert_eq!(v["data"]["cause"], "manifest");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]));
    assert_eq!(v["data"]["actor"], "bootstrap-admin", "{v}");
    assert!(
        v["data"]["reason"].as_str().unwrap().contains("default"),
        "{v}"
    );
    assert_eq!(
        v["data"]["nextTransition"],
        json!(common::t0() + chrono::Duration::hours(1)),
        "the allow window's start"
    );

    // Only the description changes: no state changes, no event. The
    // selector narrowed to `a`: `b` is no longer held by this gate.
    put_gate(&hub, "g", gate("g", prod, "closed", "second")).await;
    put_gate(&hub, "g", gate("g", "{names: [a]}", "closed", "third")).await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(
        v["type"], "gate.opened",
        "the description-only PUT sent nothing: {v}"
    );
    assert_eq!(v["data"]["clusters"], json!(["b"]));
    assert_eq!(
        v["data"]["reason"],
        "gate 'g' no longer selects this cluster"
    );

    // Default open: `a` opens.
    put_gate(&hub, "g", gate("g", "{names: [a]}", "open", "fourth")).await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(
        (v["type"].as_str(), &v["data"]["clusters"]),
        (Some("gate.opened"), &json!(["a"])),
        "{v}"
    );

    // Back to closed on every cluster, then deleted: every cluster opens.
    put_gate(
        &hub,
        "g",
        gate("g", "{names: [a, b, c]}", "closed", "fifth"),
    )
    .await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["data"]["clusters"], json!(["a", "b", "c"]), "{v}");
    let r = hub
        .call(Method::DELETE, "/api/v1/gates/g", Some(&hub.admin), None)
        .await;
    assert_eq!(r.status, StatusCode::NO_CONTENT, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "gate.opened", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b", "c"]));
    assert_eq!(v["data"]["reason"], "gate 'g' was deleted");

    // Each write made one event per new state: five in all.
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from notify_events where type in ('gate.opened', 'gate.closed')",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!(n, 5);
}

#[tokio::test]
async fn a_rollout_announces_its_start_waves_halt_and_completion() {
    let f = rollout_support::fleet("", rollout_support::THREE_WAVES).await;
    let (r1, router) = replica(&f.hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "ops", "url": url, "events": ["rollout.*"], "format": "standard"}),
    )
    .await;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    tokio::spawn(r1.notifier.clone().run(f.hub.service.clone(), stop.clone()));

    f.complete().await;
    let mut seen = Vec::new();
    while seen.last().map(|v: &Value| v["type"].clone()) != Some(json!("rollout.completed")) {
        seen.push(delivered(&mut rx, &secret).await);
    }
    let kinds: Vec<(String, Value, Value)> = seen
        .iter()
        .map(|v| {
            (
                v["type"].as_str().unwrap().to_string(),
                v["data"]["wave"].clone(),
                v["data"]["clusters"].clone(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("rollout.started".to_string(), json!(1), json!([])),
            ("rollout.wave_released".into(), json!(1), json!(["c1"])),
            (
                "rollout.wave_released".into(),
                json!(2),
                json!(["c2", "c3"])
            ),
            (
                "rollout.wave_released".into(),
                json!(3),
                json!(["c4", "c5", "c6"])
            ),
            ("rollout.completed".into(), json!(4), json!([])),
        ]
    );
    assert!(seen.iter().all(|v| v["subject"] == "rollout/waves"));
    let seqs: Vec<i64> = seen
        .iter()
        .map(|v| v["sequence"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");

    // The next day's rollout: the canary never turns healthy, so it halts.
    f.hub.clock.advance(chrono::Duration::days(1));
    f.at(13, 0);
    f.hub.clock.advance(chrono::Duration::days(1));
    f.step().await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "rollout.started", "{v}");
    assert_ne!(v["data"]["rolloutId"], seen[0]["data"]["rolloutId"]);
    assert_eq!(
        delivered(&mut rx, &secret).await["type"],
        "rollout.wave_released"
    );
    f.hub.clock.advance(chrono::Duration::minutes(31));
    f.step().await;
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "rollout.halted", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["c1"]));
    assert!(
        v["data"]["detail"]
            .as_str()
            .unwrap()
            .contains("wave 1 failed"),
        "{v}"
    );
}

#[tokio::test]
async fn freezes_announce_their_start_and_end() {
    let hub = Hub::new().await;
    for (c, env) in [("a", "prod"), ("b", "prod"), ("c", "dev")] {
        hub.register(c, json!({"env": env})).await;
    }
    let (r1, router) = replica(&hub, "r1");
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(
        &router,
        common::ADMIN,
        json!({"name": "incidents", "url": url, "events": ["freeze.*"]}),
    )
    .await;
    let stop = CancellationToken::new();
    let _guard = stop.clone().drop_guard();
    tokio::spawn(r1.notifier.clone().run(hub.service.clone(), stop.clone()));

    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.operator,
            json!({"reason": "INC-7", "clusters": {"selector": {"matchLabels": {"env": "prod"}}}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "freeze.started", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]), "{v}");
    assert_eq!(v["data"]["freeze"]["id"], id.as_str());
    assert_eq!(v["data"]["freeze"]["reason"], "INC-7");
    assert_eq!(v["data"]["freeze"]["actor"], "ops");

    hub.clock.advance(chrono::Duration::minutes(30));
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.operator,
            json!({"reason": "INC-7 fixed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let v = delivered(&mut rx, &secret).await;
    assert_eq!(v["type"], "freeze.ended", "{v}");
    assert_eq!(v["data"]["clusters"], json!(["a", "b"]), "{v}");
    assert_eq!(v["data"]["freeze"]["id"], id.as_str());
    assert_eq!(v["data"]["freeze"]["endedBy"], "ops");
    assert_eq!(v["data"]["freeze"]["endReason"], "INC-7 fixed");
}
