//! Freeze beats everything: a cluster whose gates together are past the snapshot budget gets,
//! over real gRPC, a snapshot that holds everything (its gates replaced by a freeze by the hub)
//! instead of one its spoke could not decode, and a fleet freeze made meanwhile still reaches
//! it at once. A gate at the manifest budget is accepted; one byte past it is refused with 422.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_hub::service::freezes::FreezeRequest;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::budgets::{GATE_MANIFEST_MAX_BYTES, SNAPSHOT_MAX_BYTES};
use grpc_support::{Grpc, TestSpoke};
use serde_json::{Value, json};

/// A gate over cluster `a` whose manifest JSON is `bytes` long.
fn gate_of_size(name: &str, bytes: usize) -> Value {
    let mut g = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name, "annotations": {"pad": ""}},
        "spec": {"clusters": {"names": ["a"]}, "default": "open"}
    });
    let used = serde_json::to_vec(&g).unwrap().len();
    g["metadata"]["annotations"]["pad"] = json!("p".repeat(bytes - used));
    g
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_over_budget_cluster_is_held_closed_and_a_freeze_still_reaches_it() {
    let hub = Hub::new().await;
    let token = hub.register("a", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    // One byte over the manifest budget: 422 naming the budget.
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            gate_of_size("too-big", GATE_MANIFEST_MAX_BYTES + 1),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(r.text.contains("over the budget of"), "{}", r.text);

    // Gates at the budget (as the hub serialises them, with defaults written out) until the cluster's snapshot is past its budget.
    let n = SNAPSHOT_MAX_BYTES / GATE_MANIFEST_MAX_BYTES + 1;
    for i in 0..n {
        let r = hub
            .post_json(
                "/api/v1/gates",
                &hub.admin,
                gate_of_size(&format!("big-{i:02}"), GATE_MANIFEST_MAX_BYTES - 64),
            )
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    }

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "a", 0)
        .await
        .unwrap();
    let snap = spoke.snapshot().await;
    assert!(snap.gates.is_empty(), "{} gates sent", snap.gates.len());
    let held = snap
        .overrides
        .iter()
        .find(|o| o.id == "snapshot-over-budget")
        .expect("the hub's own freeze");
    assert_eq!(
        (held.gate.as_str(), held.state.as_str()),
        ("fleet-freeze", "closed")
    );
    assert!(
        held.reason.contains("over the budget of"),
        "{}",
        held.reason
    );
    assert_eq!(grpc.metrics.snapshots_over_budget.get(), 1);

    // A fleet freeze reaches the over-budget cluster.
    let admin = Actor::new("t", Role::Admin);
    hub.service
        .freeze(
            &admin,
            FreezeRequest {
                reason: "INC-47".into(),
                ..FreezeRequest::default()
            },
        )
        .await
        .unwrap();
    let snap = spoke.snapshot().await;
    assert!(
        snap.overrides
            .iter()
            .any(|o| o.gate == "fleet-freeze" && o.reason == "INC-47"),
        "{:?}",
        snap.overrides
    );
    assert!(snap.gates.is_empty());
    grpc.stop().await;
}
