//! A SIGKILLed replica's spokes read as disconnected once its lease expired
//! (real processes, real PostgreSQL, real gRPC): two `fleetgate-hub serve`
//! replicas share a database, a spoke streams from replica A, A is killed
//! (so nothing records the stream's end) and replica B reports the spoke
//! disconnected after A's lease ran out, "last seen" at A's last renewal.

mod grpc_support;

use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_tests::{ChildGuard, free_port, hub_serve, poll, test_db, wait_readyz};
use grpc_support::TestSpoke;
use serde_json::{Value, json};

const ADMIN: &str = "fga_lease-test-admin-secret-0000";

struct Replica {
    guard: ChildGuard,
    base: String,
    grpc: u16,
}

async fn replica(url: &str, id: &str, lease_every: &str, client: &reqwest::Client) -> Replica {
    let (http, grpc) = (free_port(), free_port());
    let child = hub_serve(url, http, grpc, ADMIN)
        .env("FLEETGATE_REPLICA_ID", id)
        .env("FLEETGATE_REPLICA_LEASE_EVERY", lease_every)
        .stderr(std::process::Stdio::inherit())
        .spawn()
        .expect("spawn hub");
    let mut guard = ChildGuard(child);
    let base = format!("http://127.0.0.1:{http}");
    wait_readyz(client, &base, 200, &mut guard).await;
    Replica { guard, base, grpc }
}

async fn cluster(client: &reqwest::Client, base: &str, name: &str) -> Value {
    client
        .get(format!("{base}/api/v1/clusters/{name}"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

fn last_seen(c: &Value) -> DateTime<Utc> {
    c["lastSeenAt"]
        .as_str()
        .expect("lastSeenAt")
        .parse()
        .unwrap()
}

#[tokio::test]
async fn a_killed_replicas_spokes_turn_disconnected_when_its_lease_expires() {
    let db = test_db().await;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    // A renews every 200 ms (its lease holds 1.2 s); B is the survivor.
    let a = replica(&db.url, "replica-a", "200ms", &client).await;
    let b = replica(&db.url, "replica-b", "5s", &client).await;
    let r = client
        .post(format!("{}/api/v1/clusters", b.base))
        .bearer_auth(ADMIN)
        .json(&json!({"name": "c1", "labels": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 201);
    let token = r.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_string();

    let channel = grpc_support::connect(&format!("http://127.0.0.1:{}", a.grpc)).await;
    let mut spoke = TestSpoke::connect(channel, &token, "c1", 0).await.unwrap();
    spoke.snapshot().await;
    let connected = poll("B to see the spoke connected to A", || async {
        let c = cluster(&client, &b.base, "c1").await;
        (c["connected"] == true).then_some(c)
    })
    .await;
    assert_eq!(connected["connectedReplica"], "replica-a", "{connected}");

    let Replica { mut guard, .. } = a;
    guard.0.kill().unwrap();
    guard.0.wait().unwrap();
    let killed = Utc::now();
    let c = poll("B to see the spoke disconnected", || async {
        let c = cluster(&client, &b.base, "c1").await;
        (c["connected"] == false).then_some(c)
    })
    .await;
    assert_eq!(c["connectedReplica"], "replica-a", "{c}");
    let seen = last_seen(&c);
    assert!(
        seen >= last_seen(&connected) && seen <= killed,
        "last seen {seen} is not A's last renewal (connected {connected}, killed {killed})"
    );
    // Nothing recorded the stream's end: the lease alone turned it.
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let (flag,): (bool,) =
        sqlx::query_as("select connected from cluster_connections where cluster = 'c1'")
            .fetch_one(&pool)
            .await
            .unwrap();
    assert!(flag, "the killed replica's stream was recorded closed");
    drop(b);
}
