//! Local gates (Gate objects made in a hub-connected cluster): the hub's
//! `--local-gates` setting reaches spokes in their snapshots — also a spoke
//! that holds the current revision with the other setting (a hub restarted
//! with another flag).

mod common;
mod grpc_support;

use common::Hub;
use fleetgate_hub::config::LocalGates;
use fleetgate_hub::grpc::GrpcOptions;
use grpc_support::{Grpc, TestSpoke};
use serde_json::json;

fn opts(local_gates: LocalGates) -> GrpcOptions {
    GrpcOptions {
        local_gates,
        ..Grpc::opts()
    }
}

#[tokio::test]
async fn the_setting_reaches_spokes_in_snapshots() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    hub.simple_gate("g", &["c1"], "open").await;

    // Default: ignore.
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    assert!(!s.local_gates_enforced);
    drop(spoke);
    grpc.stop().await;

    // The hub restarts with `--local-gates enforce`: a spoke holding the
    // current revision (Hello says not enforced, or is an old spoke's, which
    // never says) is sent the snapshot again, now enforcing.
    let grpc = Grpc::start(hub.service.clone(), opts(LocalGates::Enforce)).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    let again = spoke.snapshot().await;
    assert_eq!(again.revision, s.revision);
    assert!(again.local_gates_enforced);
    drop(spoke);
    grpc.stop().await;
}
