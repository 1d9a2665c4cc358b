//! The budgets of an admission webhook's answer, against a real local HTTP server: an answer
//! over `ADMISSION_ANSWER_MAX_BYTES` that says `allowed: true` denies the override, under
//! `failurePolicy: Fail` and `Ignore` alike, with a reason naming the budget (before the
//! budget the shared 1 MiB egress cap let it through); one just within the budget is read;
//! an answer whose body trickles past the webhook's `timeout` is a failed call, which denies
//! under `Fail`. Nothing is created when denied, and the audit entry says why.

mod admission_support;
mod common;

use std::net::SocketAddr;
use std::time::Duration;

use admission_support::{hub, last_audit, live_overrides, webhook};
use axum::Router;
use axum::body::Body;
use axum::http::{StatusCode, header};
use axum::response::Response;
use axum::routing::post;
use common::Hub;
use fleetgate_policy::budgets::ADMISSION_ANSWER_MAX_BYTES;
use serde_json::{Value, json};

/// `{"allowed": true, "message": "xxx…"}` of exactly `len` bytes.
fn allow_of_len(len: usize) -> String {
    let shell = json!({"allowed": true, "message": ""}).to_string();
    let pad = "x".repeat(len - shell.len());
    let body = json!({"allowed": true, "message": pad}).to_string();
    assert_eq!(body.len(), len);
    body
}

/// An answer that allows, sent 16 bytes every 300 ms: its headers come at once, its body
/// only after several seconds.
fn trickle() -> Response {
    let body = allow_of_len(256).into_bytes();
    let chunks: Vec<Vec<u8>> = body.chunks(16).map(<[u8]>::to_vec).collect();
    let stream = futures::stream::unfold(chunks.into_iter(), |mut rest| async move {
        let chunk = rest.next()?;
        tokio::time::sleep(Duration::from_millis(300)).await;
        Some((Ok::<_, std::io::Error>(chunk), rest))
    });
    Response::builder()
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from_stream(stream))
        .unwrap()
}

/// The webhook server: `/huge` allows with an answer one byte over the budget, `/fits` with
/// one at the budget, `/trickle` allows too slowly.
async fn server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route(
            "/huge",
            post(|| async { allow_of_len(ADMISSION_ANSWER_MAX_BYTES + 1) }),
        )
        .route(
            "/fits",
            post(|| async { allow_of_len(ADMISSION_ANSWER_MAX_BYTES) }),
        )
        .route("/trickle", post(|| async { trickle() }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// `cms` as the only admission webhook.
async fn only_webhook(hub: &Hub, url: String, extra: Value) {
    sqlx::query("delete from admission_webhooks")
        .execute(&hub.pool)
        .await
        .unwrap();
    let r = webhook(hub, "cms", url, extra).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

async fn open(hub: &Hub) -> common::Resp {
    admission_support::open(hub, Some("CHG-1")).await
}

#[tokio::test]
async fn an_answer_over_its_size_budget_denies_whatever_the_failure_policy() {
    let hub = hub().await;
    let addr = server().await;
    let budget = format!("larger than the budget of {ADMISSION_ANSWER_MAX_BYTES} bytes");
    for policy in ["Fail", "Ignore"] {
        only_webhook(
            &hub,
            format!("http://{addr}/huge"),
            json!({"failurePolicy": policy}),
        )
        .await;
        let r = open(&hub).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{policy}: {}", r.text);
        let message = r.body["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("admission webhook 'cms'") && message.contains(&budget),
            "{policy}: {message}"
        );
        assert_eq!(live_overrides(&hub).await, 0, "{policy}");
        let (action, after) = last_audit(&hub).await;
        assert_eq!(action, "admission.deny", "{policy}");
        let outcome = &after["admission"][0];
        assert_eq!(outcome["outcome"], "denied", "{policy}: {after}");
        assert!(
            outcome["message"]
                .as_str()
                .unwrap_or_default()
                .contains(&budget),
            "{policy}: {after}"
        );
    }

    // At the budget: read, and it allows.
    only_webhook(&hub, format!("http://{addr}/fits"), json!({})).await;
    let r = open(&hub).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(live_overrides(&hub).await, 1);
}

#[tokio::test]
async fn an_answer_slower_than_its_time_budget_denies_under_fail() {
    let hub = hub().await;
    let addr = server().await;
    only_webhook(
        &hub,
        format!("http://{addr}/trickle"),
        json!({"timeout": "1s"}),
    )
    .await;
    let r = open(&hub).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let message = r.body["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("admission webhook 'cms' failed: no answer within 1s"),
        "{message}"
    );
    assert_eq!(live_overrides(&hub).await, 0);
    let (action, after) = last_audit(&hub).await;
    assert_eq!(action, "admission.deny");
    assert_eq!(after["admission"][0]["outcome"], "failed", "{after}");
}
