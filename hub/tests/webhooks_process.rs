//! Notifications across real `fleetgate-hub serve` processes on one
//! PostgreSQL, delivering to a real local HTTP receiver:
//! - two replicas both wake at a window's edges (real clock) and the
//!   receiver gets each edge's `gate.closed` / `gate.opened` exactly once;
//! - a hub SIGKILLed while the receiver holds its request open redelivers
//!   after a restart, with the same `webhook-id` (at-least-once).

use std::process::{Child, Stdio};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use chrono::{SubsecRound, Utc};
use fleetgate_tests::{ChildGuard, free_port, hub_serve, poll, test_db, wait_readyz};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

const ADMIN: &str = "fga_webhooks-process-admin-0123456789";

/// A bounded wait on `fut`, naming `what` when it runs out.
async fn within<T>(secs: u64, what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(secs), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {secs} s: {what}"))
}

/// One request the receiver got: its headers and JSON body.
struct Got {
    headers: HeaderMap,
    body: Value,
}

/// A receiver at `http://127.0.0.1:<port>/hook` sending every request to the
/// test. The first `hold` requests are held open (never answered: the
/// handler waits for a sender the test never fires); the rest get 204.
async fn receiver(hold: usize) -> (String, mpsc::UnboundedReceiver<Got>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: Bytes| {
            let (tx, seen) = (tx.clone(), seen.clone());
            async move {
                let n = seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let _ = tx.send(Got { headers, body });
                if n < hold {
                    // Held until the hub's side of the connection goes away.
                    let (_keep, never) = oneshot::channel::<()>();
                    let _ = never.await;
                }
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, rx)
}

/// A hub process serving with local plain-http webhooks allowed and a short
/// delivery lease (`lease`), as replica `id`, waited for until ready.
async fn hub(db: &str, id: &str, http: u16, lease: &str, client: &reqwest::Client) -> ChildGuard {
    let child: Child = hub_serve(db, http, free_port(), ADMIN)
        .args([
            "--replica-id",
            id,
            "--webhook-allow-private",
            "--webhook-allow-http",
            "--webhook-lease",
            lease,
            "--webhook-poll",
            "100ms",
        ])
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn fleetgate-hub");
    let mut guard = ChildGuard(child);
    wait_readyz(client, &format!("http://127.0.0.1:{http}"), 200, &mut guard).await;
    guard
}

async fn post_json(client: &reqwest::Client, http: u16, path: &str, body: Value) -> Value {
    let r = client
        .post(format!("http://127.0.0.1:{http}/api/v1{path}"))
        .bearer_auth(ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = r.status();
    let v: Value = r.json().await.unwrap_or(Value::Null);
    assert!(status.is_success(), "POST {path}: {status} {v}");
    v
}

async fn get_json(client: &reqwest::Client, http: u16, path: &str) -> Value {
    let r = client
        .get(format!("http://127.0.0.1:{http}/api/v1{path}"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "GET {path}: {}", r.status());
    r.json().await.unwrap()
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// Whether every delivery of `webhook` is delivered (none pending or leased).
async fn all_delivered(client: &reqwest::Client, http: u16, webhook: &str, n: usize) -> bool {
    let list = get_json(client, http, &format!("/webhooks/{webhook}/deliveries")).await;
    let list = list.as_array().cloned().unwrap_or_default();
    list.len() == n && list.iter().all(|d| d["state"] == "delivered")
}

#[tokio::test]
async fn two_hub_processes_send_each_window_edge_once() {
    let db = test_db().await;
    let c = client();
    let (a, b) = (free_port(), free_port());
    let _hub_a = hub(&db.url, "a", a, "30s", &c).await;
    let _hub_b = hub(&db.url, "b", b, "30s", &c).await;
    for name in ["c1", "c2"] {
        post_json(
            &c,
            a,
            "/clusters",
            json!({"name": name, "labels": {"env": "prod"}}),
        )
        .await;
    }
    let (url, mut rx) = receiver(0).await;
    post_json(
        &c,
        b,
        "/webhooks",
        json!({"name": "ops", "url": url, "events": ["gate.opened", "gate.closed"]}),
    )
    .await;
    // A deny window a few seconds ahead (past both schedulers' longest
    // sleep, so both wake for its edges), two seconds long.
    let start = Utc::now().trunc_subsecs(0) + chrono::Duration::seconds(7);
    let end = start + chrono::Duration::seconds(2);
    let f = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let yaml = format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: blip}}\nspec:\n  clusters: {{selector: {{matchLabels: {{env: prod}}}}}}\n  \
         timeZone: UTC\n  windows:\n    - {{name: blip, kind: deny, start: \"{}\", end: \"{}\"}}\n",
        f(start),
        f(end)
    );
    let r = c
        .post(format!("http://127.0.0.1:{a}/api/v1/gates"))
        .bearer_auth(ADMIN)
        .header("content-type", "application/yaml")
        .body(yaml)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());

    let mut got = Vec::new();
    for want in ["gate.closed", "gate.opened"] {
        let g = within(30, want, rx.recv()).await.expect("receiver open");
        assert_eq!(g.body["type"], want, "{}", g.body);
        assert_eq!(g.body["data"]["cause"], "window");
        assert_eq!(g.body["data"]["clusters"], json!(["c1", "c2"]));
        let at = if want == "gate.closed" { start } else { end };
        assert_eq!(g.body["data"]["at"], json!(at));
        got.push(g);
    }
    // Both deliveries recorded as delivered: any duplicate would have
    // reached the receiver before its record was written.
    poll("both deliveries delivered", || async {
        all_delivered(&c, a, "ops", 2).await.then_some(())
    })
    .await;
    assert!(
        rx.try_recv().is_err(),
        "no edge sent twice by the two replicas"
    );
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let (events,): (i64,) = sqlx::query_as(
        "select count(*) from notify_events where type in ('gate.opened', 'gate.closed')",
    )
    .fetch_one(&pool)
    .await
    .unwrap();
    assert_eq!(events, 2, "one outbox row per edge");
    assert_ne!(
        got[0].headers["webhook-id"], got[1].headers["webhook-id"],
        "two events, two ids"
    );
}

#[tokio::test]
async fn a_hub_killed_mid_delivery_redelivers_with_the_same_id_after_restart() {
    let db = test_db().await;
    let c = client();
    let http = free_port();
    let mut hub_1 = Some(hub(&db.url, "r1", http, "2s", &c).await);
    post_json(
        &c,
        http,
        "/clusters",
        json!({"name": "c1", "labels": {"env": "prod"}}),
    )
    .await;
    let r = c
        .post(format!("http://127.0.0.1:{http}/api/v1/gates"))
        .bearer_auth(ADMIN)
        .header("content-type", "application/yaml")
        .body(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: shut}\nspec:\n  clusters: {names: [c1]}\n  default: closed\n",
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap_or_default());
    let (url, mut rx) = receiver(1).await; // the first request is held open
    post_json(
        &c,
        http,
        "/webhooks",
        json!({"name": "pager", "url": url, "events": ["gate.opened"]}),
    )
    .await;
    // The write enqueues gate.opened in its transaction; the hub sends it.
    post_json(
        &c,
        http,
        "/gates/shut/open",
        json!({"for": "1h", "reason": "hotfix"}),
    )
    .await;
    let held = within(30, "the first attempt", rx.recv())
        .await
        .expect("receiver open");
    assert_eq!(held.body["type"], "gate.opened", "{}", held.body);
    // The hub dies with the request in flight: no response, no record.
    let mut dead = hub_1.take().unwrap();
    dead.0.kill().unwrap();
    dead.0.wait().unwrap();

    let _hub_2 = hub(&db.url, "r1", http, "2s", &c).await;
    let again = within(30, "the redelivery after restart", rx.recv())
        .await
        .expect("receiver open");
    assert_eq!(
        again.headers["webhook-id"], held.headers["webhook-id"],
        "the same webhook-id"
    );
    assert_eq!(again.body["id"], held.body["id"]);
    assert_eq!(again.body["data"], held.body["data"]);
    poll("the redelivery recorded", || async {
        all_delivered(&c, http, "pager", 1).await.then_some(())
    })
    .await;
    let list = get_json(&c, http, "/webhooks/pager/deliveries").await;
    let id = list[0]["id"].as_i64().unwrap();
    let one = get_json(&c, http, &format!("/webhooks/pager/deliveries/{id}")).await;
    assert_eq!(
        one["messageId"].as_str(),
        held.headers["webhook-id"].to_str().ok()
    );
    assert_eq!(one["attempts"], 2, "the killed attempt counts: {one}");
    assert!(rx.try_recv().is_err(), "delivered once after the restart");
}
