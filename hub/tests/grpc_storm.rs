//! Spokes connecting all at once (a reconnect storm) are served as one by
//! one: their token checks and first snapshot reads are batched, yet every
//! spoke gets its own cluster's snapshot and its connection recorded, and a
//! bad token among them is refused on its own (real PostgreSQL, real gRPC). Half the
//! clusters exist before the replica starts (its warm start may know them), half are
//! registered after it (checked and read in batches).

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
    let mut grpc = None;
    for i in 0..40 {
        if i == 20 {
            grpc = Some(Grpc::start(hub.service.clone(), Grpc::opts()).await);
        }
        let name = format!("c{i:02}");
        let token = hub.register(&name, json!({})).await;
        tokens.push((name, token));
    }
    let grpc = grpc.expect("started");
    hub.simple_gate("g", &["c00", "c39"], "closed").await;

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
    let (mut served, wrong_cluster, unknown) =
        tokio::join!(join_all(connects), wrong_cluster, unknown);

    for (name, snapshot, spoke) in &mut served {
        assert_eq!(&snapshot.cluster, name);
        let gates = |s: &fleetgate_proto::v1::Snapshot| -> Vec<String> {
            s.gates.iter().map(|g| g.name.clone()).collect()
        };
        let expected: Vec<String> = if name == "c00" || name == "c39" {
            vec!["g".into()]
        } else {
            vec![]
        };
        // Signed in from the warm start before the gate's notification was applied, a
        // spoke is sent its cluster's state before the gate, then the gate (as a spoke
        // connected before the change is).
        let mut got = gates(snapshot);
        while got != expected {
            let next = spoke.snapshot().await;
            assert_eq!(&next.cluster, name);
            got = gates(&next);
        }
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
