//! Spokes connecting all at once (a reconnect storm) are served as one by
//! one: their token checks and first snapshot reads are batched, yet every
//! spoke gets its own cluster's snapshot and its connection recorded, and a
//! bad token among them is refused on its own (real PostgreSQL, real gRPC).

mod common;
mod grpc_support;

use common::Hub;
use futures::future::join_all;
use grpc_support::{Grpc, TestSpoke, within};
use serde_json::json;

#[tokio::test]
async fn spokes_connecting_together_are_each_checked_and_served() {
    let hub = Hub::new().await;
    let mut tokens = Vec::new();
    for i in 0..40 {
        let name = format!("c{i:02}");
        let token = hub.register(&name, json!({})).await;
        tokens.push((name, token));
    }
    hub.simple_gate("g", &["c00", "c39"], "closed").await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let connects = tokens.iter().map(|(name, token)| {
        let channel = grpc.channel.clone();
        async move {
            let mut spoke = TestSpoke::connect(channel, token, name, 0).await.unwrap();
            let snapshot = spoke.snapshot().await;
            (name.clone(), snapshot, spoke)
        }
    });
    // Another cluster's name with a valid token, and an unknown token, in the
    // same storm.
    let wrong_cluster = TestSpoke::connect(grpc.channel.clone(), &tokens[1].1, "c02", 0);
    let unknown = TestSpoke::connect(
        grpc.channel.clone(),
        "fgc_not-a-token-000000000000",
        "c03",
        0,
    );
    let (served, wrong_cluster, unknown) = tokio::join!(join_all(connects), wrong_cluster, unknown);

    for (name, snapshot, _) in &served {
        assert_eq!(&snapshot.cluster, name);
        let gates: Vec<&str> = snapshot.gates.iter().map(|g| g.name.as_str()).collect();
        let expected: &[&str] = if name == "c00" || name == "c39" {
            &["g"]
        } else {
            &[]
        };
        assert_eq!(gates, expected, "{name}");
    }
    let status = match unknown {
        Err(status) => status,
        Ok(_) => panic!("an unknown token was accepted"),
    };
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    let mut wrong_cluster = wrong_cluster.unwrap();
    assert_eq!(
        wrong_cluster.error().await.code(),
        tonic::Code::PermissionDenied
    );

    // Every served spoke's connection is recorded (with the next flush).
    within("every connection to be recorded", async {
        loop {
            let r = hub.get("/api/v1/status").await;
            if r.body["clusters"]["connected"] == 40 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    drop(served);
    grpc.stop().await;
}
