//! "Connected" is derived from a fresh heartbeat: a replica that crashed
//! leaves `clusters.connected = true`, but REST, the fleet summary and the
//! dashboard report the spoke disconnected once `last_seen_at` is older than
//! `CONNECTED_WITHIN` (injected clock, no sleeping); a live stream's keepalives keep it fresh.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_hub::clock::Clock as _;
use fleetgate_hub::db;
use grpc_support::{Grpc, TestSpoke, within};
use serde_json::{Value, json};

async fn cluster(hub: &Hub, name: &str) -> Value {
    let r = hub.get(&format!("/api/v1/clusters/{name}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
}

async fn fleet_counts(hub: &Hub) -> Value {
    let r = hub.get("/api/v1/status").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body["clusters"].clone()
}

async fn dashboard_connected(hub: &Hub, name: &str) -> bool {
    let r = hub.get("/api/v1/dashboard/fleet").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let rows = r.body["clusters"].as_array().expect("clusters").clone();
    let row = rows.iter().find(|c| c["name"] == name).expect("row");
    row["connected"].as_bool().expect("connected")
}

#[tokio::test]
async fn a_crashed_replicas_spokes_turn_disconnected_after_the_grace_period() {
    let hub = Hub::new().await;
    hub.register("orphan", json!({})).await;
    // What a replica that crashed after accepting the stream leaves behind.
    let mut conn = hub.pool.acquire().await.unwrap();
    db::reports::mark_connected(&mut conn, "orphan", "crashed", "v1", hub.clock.now())
        .await
        .unwrap();
    drop(conn);

    assert_eq!(cluster(&hub, "orphan").await["connected"], true);
    assert_eq!(fleet_counts(&hub).await["connected"], 1);
    assert!(dashboard_connected(&hub, "orphan").await);

    let grace = fleetgate_hub::service::liveness::CONNECTED_WITHIN;
    hub.clock.advance(grace - chrono::Duration::seconds(1));
    assert_eq!(cluster(&hub, "orphan").await["connected"], true);

    hub.clock.advance(chrono::Duration::seconds(2));
    let c = cluster(&hub, "orphan").await;
    assert_eq!(c["connected"], false, "{c}");
    // The replica is still named: it tells an operator where it was served.
    assert_eq!(c["connectedReplica"], "crashed");
    let counts = fleet_counts(&hub).await;
    assert_eq!(counts["connected"], 0, "{counts}");
    assert_eq!(counts["disconnected"], 1, "{counts}");
    assert!(!dashboard_connected(&hub, "orphan").await);
    let r = hub.get("/api/v1/clusters").await;
    assert_eq!(r.body["items"][0]["connected"], false, "{}", r.text);
}

#[tokio::test]
async fn keepalives_keep_a_live_stream_connected() {
    let hub = Hub::new().await;
    let token = hub.register("alive", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "alive", 0)
        .await
        .unwrap();
    spoke.snapshot().await;
    assert_eq!(cluster(&hub, "alive").await["connected"], true);

    // Far beyond the grace period without a single report: only the
    // stream's keepalives can make it connected again.
    hub.clock.advance(chrono::Duration::minutes(10));
    assert_eq!(cluster(&hub, "alive").await["connected"], false);
    spoke.expect_keepalive().await;
    within("a keepalive to refresh last_seen_at", async {
        while cluster(&hub, "alive").await["connected"] != true {
            spoke.expect_keepalive().await;
        }
    })
    .await;
    let c = cluster(&hub, "alive").await;
    assert_eq!(c["lastSeenAt"], json!(hub.clock.now()), "{c}");
    grpc.stop().await;
}
