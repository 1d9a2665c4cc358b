//! "Connected" is derived from the serving replica's lease: a replica that
//! crashed leaves `connected = true` behind, but REST, the fleet summary and
//! the dashboard report its spokes disconnected once its lease expired
//! (injected clock, no sleeping), with "last seen" at its last renewal. A
//! live replica's renewals keep its streams connected while the streams
//! themselves write nothing (no row version for idle keepalives).

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_hub::clock::Clock as _;
use fleetgate_hub::db;
use fleetgate_hub::liveness::{CONNECTED_WITHIN, LEASE_TTL};
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

async fn last_seen(hub: &Hub, name: &str) -> chrono::DateTime<chrono::Utc> {
    let c = cluster(hub, name).await;
    c["lastSeenAt"]
        .as_str()
        .expect("lastSeenAt")
        .parse()
        .unwrap()
}

/// The version (`xmin`) of `cluster`'s connection row and of `replica`'s lease.
async fn row_versions(hub: &Hub, cluster: &str, replica: &str) -> (String, String) {
    let (connection,): (String,) =
        sqlx::query_as("select xmin::text from cluster_connections where cluster = $1")
            .bind(cluster)
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    let (lease,): (String,) =
        sqlx::query_as("select xmin::text from replica_leases where replica = $1")
            .bind(replica)
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    (connection, lease)
}

/// Options of a replica renewing its lease every 50 ms (real time; the
/// renewals stamp the injected clock).
fn fast_lease(replica: &str) -> fleetgate_hub::grpc::GrpcOptions {
    fleetgate_hub::grpc::GrpcOptions {
        replica_id: Some(replica.into()),
        replica_lease_every: std::time::Duration::from_millis(50),
        ..Grpc::opts()
    }
}

#[tokio::test]
async fn a_crashed_replicas_spokes_turn_disconnected_when_its_lease_expires() {
    let hub = Hub::new().await;
    hub.register("orphan", json!({})).await;
    // What a replica that crashed after accepting the stream leaves behind:
    // its lease, last renewed now, and the stream recorded open.
    let renewed = hub.clock.now() + chrono::Duration::seconds(20);
    let mut conn = hub.pool.acquire().await.unwrap();
    db::reports::mark_connected(&mut conn, "orphan", "crashed", "v1", hub.clock.now())
        .await
        .unwrap();
    db::leases::renew(&mut conn, "crashed", renewed, LEASE_TTL)
        .await
        .unwrap();
    drop(conn);

    assert_eq!(cluster(&hub, "orphan").await["connected"], true);
    assert_eq!(fleet_counts(&hub).await["connected"], 1);
    assert!(dashboard_connected(&hub, "orphan").await);
    // Seen as late as the replica holding its stream was alive.
    assert_eq!(last_seen(&hub, "orphan").await, renewed);

    hub.clock
        .set(renewed + LEASE_TTL - chrono::Duration::seconds(1));
    assert_eq!(cluster(&hub, "orphan").await["connected"], true);

    hub.clock.advance(chrono::Duration::seconds(2));
    let c = cluster(&hub, "orphan").await;
    assert_eq!(c["connected"], false, "{c}");
    assert_eq!(last_seen(&hub, "orphan").await, renewed);
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
async fn a_stream_of_a_replica_without_leases_counts_by_its_last_seen_stamp() {
    // A replica of the previous release (rolling upgrade) has no lease and
    // stamps `last_seen_at` instead.
    let hub = Hub::new().await;
    hub.register("old", json!({})).await;
    let mut conn = hub.pool.acquire().await.unwrap();
    db::reports::mark_connected(&mut conn, "old", "old-release", "v0", hub.clock.now())
        .await
        .unwrap();
    drop(conn);
    hub.clock.advance(CONNECTED_WITHIN);
    assert_eq!(cluster(&hub, "old").await["connected"], true);
    hub.clock.advance(chrono::Duration::seconds(1));
    assert_eq!(cluster(&hub, "old").await["connected"], false);
}

#[tokio::test]
async fn a_live_replicas_lease_keeps_idle_streams_connected_without_writing_them() {
    let hub = Hub::new().await;
    let token = hub.register("alive", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), fast_lease("live")).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "alive", 0)
        .await
        .unwrap();
    spoke.snapshot().await;
    within("the stream to be recorded", async {
        while cluster(&hub, "alive").await["connected"] != true {
            spoke.expect_keepalive().await;
        }
    })
    .await;
    let before = row_versions(&hub, "alive", "live").await;

    // Far beyond the lease time: only a renewal (at the new time) can make
    // it connected again.
    hub.clock.advance(chrono::Duration::minutes(10));
    within("a lease renewal", async {
        while cluster(&hub, "alive").await["connected"] != true {
            spoke.expect_keepalive().await;
        }
    })
    .await;
    assert_eq!(last_seen(&hub, "alive").await, hub.clock.now());
    // Several keepalives later the connection row was never rewritten; the
    // lease was.
    for _ in 0..3 {
        spoke.expect_keepalive().await;
    }
    let after = row_versions(&hub, "alive", "live").await;
    assert_eq!(
        after.0, before.0,
        "idle keepalives rewrote the connection row"
    );
    assert_ne!(after.1, before.1, "the lease was not renewed");

    // A drained replica records its streams' end at the drain.
    grpc.stop().await;
    let c = cluster(&hub, "alive").await;
    assert_eq!(c["connected"], false, "{c}");
    assert_eq!(last_seen(&hub, "alive").await, hub.clock.now());
}
