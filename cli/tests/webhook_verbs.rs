//! The real `fleetgate` binary against a real hub process and a real HTTP
//! receiver: `webhook create|list|get|test|deliveries|redeliver|delete` end
//! to end (the secret printed once, a failed test delivery exiting 10, signatures checked with the Standard
//! Webhooks reference library, a redelivery with the same webhook-id), and a
//! team's admin (a token scoped to the team) that sees and manages only its
//! team's subscriptions.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use common::{Hub, err, out, start_hub_with};
use serde_json::Value;

/// What the receiver got: each request's headers and body.
type Got = Arc<Mutex<Vec<(HeaderMap, Bytes)>>>;

/// A receiver at `http://127.0.0.1:<port>/hook` answering 204.
fn receiver(rt: &tokio::runtime::Runtime) -> (String, Got) {
    let got: Got = Arc::default();
    let seen = got.clone();
    let app = axum::Router::new().route(
        "/hook",
        post(move |h: HeaderMap, b: Bytes| {
            let seen = seen.clone();
            async move {
                seen.lock().unwrap().push((h, b));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    rt.spawn(async move { axum::serve(listener, app).await });
    (url, got)
}

/// Waits (20 s at most) for a request whose body has `"type": event_type`
/// beyond the first `skip`; checks its signature with `secret`; returns its
/// webhook-id and body.
fn wait_for(got: &Got, skip: usize, event_type: &str, secret: &str) -> (String, Value) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let found = got.lock().unwrap().iter().skip(skip).find_map(|(h, b)| {
            let v: Value = serde_json::from_slice(b).ok()?;
            (v["type"] == event_type).then(|| (h.clone(), b.clone(), v))
        });
        if let Some((h, b, v)) = found {
            standardwebhooks::Webhook::new(secret)
                .unwrap()
                .verify(&b, &h)
                .expect("signed with the secret the CLI printed");
            return (h["webhook-id"].to_str().unwrap().to_string(), v);
        }
        assert!(Instant::now() < deadline, "no {event_type} within 20 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the CLI as `token`: (exit code, stdout, stderr).
fn run_as(hub: &Hub, token: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let o = hub.cli_as(token, args);
    (o.status.code(), out(&o), err(&o))
}

/// The names `webhook list -o json` shows to `token`.
fn names_as(hub: &Hub, token: &str) -> Vec<String> {
    let (code, text, e) = run_as(hub, token, &["webhook", "list", "-o", "json"]);
    assert_eq!(code, Some(0), "{e}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v.as_array()
        .unwrap()
        .iter()
        .map(|w| w["spec"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn webhooks_end_to_end_and_a_team_admin_sees_only_its_team_s() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (url, got) = receiver(&rt);
    // The receiver is on loopback over plain http.
    let hub = start_hub_with(&[
        ("FLEETGATE_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("FLEETGATE_WEBHOOK_ALLOW_HTTP", "true"),
        ("FLEETGATE_WEBHOOK_POLL", "50ms"),
    ]);
    hub.ok(&["cluster", "register", "pay-1", "-L", "team=payments"]);
    hub.ok(&["cluster", "register", "web-1", "-L", "team=web"]);
    let dir = tempfile::tempdir().unwrap();
    let gate = dir.path().join("pay.yaml");
    std::fs::write(
        &gate,
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: pay, labels: {team: payments}}\n\
         spec: {clusters: {selector: {matchLabels: {team: payments}}}, default: open}\n",
    )
    .unwrap();
    hub.ok(&["gate", "apply", "-f", &gate.display().to_string()]);
    assert_eq!(hub.ok(&["webhook", "list"]), "No webhooks.\n");

    // Bad input names the field (exit 6) and creates nothing.
    let o = hub.cli(&["webhook", "create", "ops", "--url", "ftp://example.com/x"]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    assert!(err(&o).contains("url"), "{}", err(&o));
    let o = hub.cli(&[
        "webhook",
        "create",
        "ops",
        "--url",
        &url,
        "--event",
        "gate.nope",
    ]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    assert_eq!(hub.ok(&["webhook", "list"]), "No webhooks.\n");

    // Created: the secret printed once.
    let said = hub.ok(&[
        "webhook",
        "create",
        "ops",
        "--url",
        &url,
        "--event",
        "gate.*",
        "--event",
        "override.created",
        "--description",
        "platform on-call",
    ]);
    let lines: Vec<&str> = said.lines().collect();
    assert_eq!(
        lines[..2],
        ["webhook/ops created", "signing secret (shown once):"]
    );
    let secret = lines[2].to_string();
    assert!(secret.starts_with("whsec_"), "{said}");
    let table = hub.ok(&["webhook", "list"]);
    assert!(table.starts_with("NAME"), "{table}");
    assert!(
        table.contains("ops")
            && table.contains("standard")
            && table.contains("gate.*,override.created"),
        "{table}"
    );
    let one = hub.json(&["webhook", "get", "ops"]);
    let spec = &one["spec"];
    assert_eq!(spec["url"], url.as_str());
    assert_eq!(
        spec["events"],
        serde_json::json!(["gate.*", "override.created"])
    );
    assert_eq!(
        (&spec["format"], &spec["perCluster"], &spec["enabled"]),
        (&"standard".into(), &false.into(), &true.into())
    );
    assert!(
        !one.to_string().contains("whsec_"),
        "never shown again: {one}"
    );
    assert!(!hub.ok(&["webhook", "get", "ops"]).contains("whsec_"));

    // test: a signed webhook.test at once, and its answer.
    let said = hub.ok(&["webhook", "test", "ops"]);
    assert!(said.starts_with("delivered: HTTP 204 in "), "{said}");
    wait_for(&got, 0, "webhook.test", &secret);
    // A test delivery that fails (nothing listens there) says so and exits 10.
    let dead = format!("http://127.0.0.1:{}/hook", fleetgate_tests::free_port());
    hub.ok(&["webhook", "create", "dead", "--url", &dead]);
    let (code, said, e) = run_as(&hub, common::ADMIN, &["webhook", "test", "dead"]);
    assert_eq!(code, Some(10), "{said}{e}");
    assert!(said.starts_with("failed: no response in "), "{said}");
    assert!(
        e.contains("error: the test delivery to webhook dead failed"),
        "{e}"
    );
    hub.ok(&["webhook", "delete", "dead"]);

    // A real event: closing the gate sends gate.closed (and override.created).
    hub.ok(&["gate", "close", "pay", "--for", "1h", "--reason", "deploy"]);
    let (closed_id, closed) = wait_for(&got, 0, "gate.closed", &secret);
    assert_eq!(closed["data"]["clusters"], serde_json::json!(["pay-1"]));
    wait_for(&got, 0, "override.created", &secret);

    // deliveries: newest first, delivered; one with every attempt.
    let deadline = Instant::now() + Duration::from_secs(20);
    let list = loop {
        let v = hub.json(&["webhook", "deliveries", "ops"]);
        let all = v.as_array().unwrap().clone();
        if all.len() == 2 && all.iter().all(|d| d["state"] == "delivered") {
            break all;
        }
        assert!(Instant::now() < deadline, "two delivered within 20 s: {v}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let closed_delivery = list
        .iter()
        .find(|d| d["eventType"] == "gate.closed")
        .unwrap();
    let id = closed_delivery["id"].as_i64().unwrap().to_string();
    assert_eq!(closed_delivery["messageId"], closed_id.as_str());
    let table = hub.ok(&["webhook", "deliveries", "ops"]);
    assert!(
        table.starts_with("ID") && table.contains("gate/pay") && table.contains("delivered"),
        "{table}"
    );
    let attempts = hub.ok(&["webhook", "deliveries", "ops", &id]);
    assert!(
        attempts.starts_with(&format!(
            "delivery {id} (gate.closed), gate/pay delivered, webhook-id {closed_id}\n"
        )),
        "{attempts}"
    );
    assert!(
        attempts.lines().nth(2).is_some_and(|l| l.contains("204")),
        "{attempts}"
    );

    // redeliver: the same message again, same webhook-id.
    let before = got.lock().unwrap().len();
    assert_eq!(
        hub.ok(&["webhook", "redeliver", "ops", &id]),
        format!("delivery {id} queued again ({closed_id})\n")
    );
    let (again, _) = wait_for(&got, before, "gate.closed", &secret);
    assert_eq!(again, closed_id);

    // A team's admin: a token scoped to the payments team.
    let scope = "{clusters: {selector: {matchLabels: {team: payments}}}, \
                 gates: {selector: {matchLabels: {team: payments}}}}";
    let team = hub.json(&[
        "token",
        "create",
        "payments-admin",
        "--role",
        "admin",
        "--scope",
        scope,
    ])["secret"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, said, e) = run_as(
        &hub,
        &team,
        &[
            "webhook", "create", "pay-chat", "--url", &url, "--format", "slack",
        ],
    );
    assert_eq!(code, Some(0), "{e}");
    assert!(said.starts_with("webhook/pay-chat created\n"), "{said}");
    // The team's admin sees its own only; the platform's admin sees both.
    assert_eq!(names_as(&hub, &team), ["pay-chat"]);
    assert_eq!(names_as(&hub, common::ADMIN), ["ops", "pay-chat"]);
    let (code, said, _) = run_as(&hub, &team, &["webhook", "get", "pay-chat", "-o", "json"]);
    assert_eq!(code, Some(0));
    assert!(said.contains("\"format\": \"slack\""), "{said}");
    // Every verb on the platform's subscription answers "not found" (exit 3),
    // as if it did not exist, and changes nothing.
    for args in [
        vec!["webhook", "get", "ops"],
        vec!["webhook", "test", "ops"],
        vec!["webhook", "deliveries", "ops"],
        vec!["webhook", "deliveries", "ops", &id],
        vec!["webhook", "redeliver", "ops", &id],
        vec!["webhook", "delete", "ops"],
    ] {
        let (code, _, e) = run_as(&hub, &team, &args);
        assert_eq!(code, Some(3), "{args:?}: {e}");
    }
    // An operator manages no subscriptions (admin only).
    let operator = hub.json(&["token", "create", "op", "--role", "operator"])["secret"]
        .as_str()
        .unwrap()
        .to_string();
    let (code, _, e) = run_as(&hub, &operator, &["webhook", "list"]);
    assert_eq!(code, Some(5), "{e}");

    // delete: the team's admin its own; the platform's admin the rest.
    let (code, said, _) = run_as(&hub, &team, &["webhook", "delete", "pay-chat"]);
    assert_eq!(
        (code, said.as_str()),
        (Some(0), "webhook/pay-chat deleted\n")
    );
    assert_eq!(
        hub.ok(&["webhook", "delete", "ops"]),
        "webhook/ops deleted\n"
    );
    assert_eq!(hub.ok(&["webhook", "list"]), "No webhooks.\n");
}
