//! A burst of writes queues inside the hub, not on database connections:
//! while many writes wait (here: on a held fleet-revision lock), reads and
//! authentication still get connections and answer.

mod common;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::Hub;
use serde_json::json;
use sqlx::Connection as _;
use tower::ServiceExt as _;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn reads_answer_while_writes_queue() {
    let hub = Hub::new().await; // a pool of 10 connections
    let mut blocker = hub.pool.begin().await.unwrap();
    sqlx::query("select revision from fleet_revision for update")
        .execute(&mut *blocker)
        .await
        .unwrap();
    let mut writes = Vec::new();
    for i in 0..20 {
        let app = hub.app.clone();
        let admin = hub.admin.clone();
        writes.push(tokio::spawn(async move {
            let req = axum::http::Request::post("/api/v1/clusters")
                .header("authorization", format!("Bearer {admin}"))
                .header("content-type", "application/json")
                .body(axum::body::Body::from(
                    json!({"name": format!("c{i}")}).to_string(),
                ))
                .unwrap();
            app.oneshot(req).await.unwrap().status()
        }));
    }
    // Wait until writes are blocked in the database (the hub lets 4 through
    // at a time; the rest wait in the hub).
    // (A connection of its own, outside any transaction: statistics views
    // are frozen within one.)
    let mut watcher = sqlx::PgConnection::connect(&hub.url).await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (waiting,): (i64,) = sqlx::query_as(
            "select count(*) from pg_stat_activity \
             where datname = current_database() and wait_event_type = 'Lock'",
        )
        .fetch_one(&mut watcher)
        .await
        .unwrap();
        if waiting >= 4 {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "writes never blocked");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Reads still get connections and answer.
    for uri in ["/api/v1/status", "/api/v1/gates", "/readyz"] {
        let r = tokio::time::timeout(
            Duration::from_secs(5),
            hub.call(Method::GET, uri, Some(&hub.admin), None),
        )
        .await
        .unwrap_or_else(|_| panic!("{uri} starved while writes queue"));
        assert_eq!(r.status, StatusCode::OK, "{uri}: {}", r.text);
    }
    blocker.rollback().await.unwrap();
    for w in writes {
        let status = tokio::time::timeout(Duration::from_secs(30), w)
            .await
            .expect("queued write finished")
            .unwrap();
        assert_eq!(status, StatusCode::CREATED);
    }
    let r = hub.get("/api/v1/clusters?limit=100").await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 20);
}
