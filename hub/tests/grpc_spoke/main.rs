//! The spoke stream over a real socket on a real database: snapshots follow
//! REST writes, isolation between clusters, no redundant snapshot on
//! reconnect, the auth matrix, token rotation and cluster deletion while
//! connected, report ingestion visible through REST, listener loss + resync.
//!
//! One module per topic: `snapshots`, `auth`, `reports`, `resync` (the
//! replica's LISTEN connection lost) and `stream_end` (drain and age limit).

#[path = "../common/mod.rs"]
mod common;
#[path = "../grpc_support/mod.rs"]
mod grpc_support;

mod auth;
mod reports;
mod resync;
mod snapshots;
mod stream_end;

use std::time::Duration;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_hub::{Actor, Role};
use grpc_support::within;
use serde_json::Value;

fn root() -> Actor {
    Actor::new("bootstrap-admin", Role::Admin)
}

/// Polls the REST status of `cluster` until `done` holds (bounded).
async fn status_until(hub: &Hub, cluster: &str, done: impl Fn(&Value) -> bool) -> Value {
    within("REST status to reflect the report", async {
        loop {
            let r = hub.get(&format!("/api/v1/clusters/{cluster}/status")).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            if done(&r.body) {
                return r.body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}
