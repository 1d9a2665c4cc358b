//! Snapshots follow REST writes: a gate or override change reaches the connected spoke
//! of the clusters it is for and no other; a spoke reconnecting with the current
//! revision gets a keepalive instead of a redundant snapshot.

use axum::http::StatusCode;
use fleetgate_proto::v1 as pb;
use serde_json::json;

use crate::common::{Hub, business_hours};
use crate::grpc_support::{Grpc, TestSpoke, gate_names};

#[tokio::test]
async fn gate_change_via_rest_reaches_connected_spoke_and_only_its_cluster() {
    let hub = Hub::new().await;
    let t1 = hub.register("prod-1", json!({"env": "prod"})).await;
    let _t2 = hub.register("dev-1", json!({"env": "dev"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &t1, "prod-1", 0)
        .await
        .unwrap();
    let s0 = spoke.snapshot().await;
    assert_eq!(s0.cluster, "prod-1");
    assert!(s0.gates.is_empty());
    assert!(s0.hub_time.is_some());

    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s1 = spoke.snapshot().await;
    assert_eq!(gate_names(&s1), vec!["bh"]);
    assert!(s1.revision > s0.revision);
    let gate = fleetgate_policy::parse_gate_json(
        serde_json::from_str(&s1.gates[0].manifest_json).unwrap(),
    )
    .unwrap();
    assert_eq!(gate.name(), "bh");
    assert_eq!(s1.gates[0].version, 1);

    // A gate for the dev clusters changes nothing for prod-1: the next
    // snapshot prod-1 gets is the one for the override below.
    let r = hub
        .create_gate_yaml(&business_hours("dev-hours", "dev"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = hub
        .post_json(
            "/api/v1/gates/bh/open",
            &hub.operator,
            json!({"for": "1h", "reason": "hotfix INC-42"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s2 = spoke.snapshot().await;
    assert_eq!(gate_names(&s2), vec!["bh"]);
    assert_eq!(s2.overrides.len(), 1);
    assert_eq!(s2.overrides[0].state, "open");
    assert_eq!(s2.overrides[0].reason, "hotfix INC-42");
    assert_eq!(s2.overrides[0].actor, "ops");
    assert!(s2.revision > s1.revision);
    grpc.stop().await;
}

#[tokio::test]
async fn reconnect_with_current_revision_gets_no_redundant_snapshot() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    drop(spoke);

    // Holding the current revision: the first message is a keepalive.
    let mut again = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    let k = again.expect_keepalive().await;
    assert_eq!(k.revision, s.revision);

    // Holding an older revision: the snapshot comes first.
    let mut old = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision - 1)
        .await
        .unwrap();
    match old.next().await {
        Ok(Some(pb::HubMessage {
            msg: Some(pb::hub_message::Msg::Snapshot(s2)),
        })) => assert_eq!(s2.revision, s.revision),
        other => panic!("expected a snapshot first, got {other:?}"),
    }
    grpc.stop().await;
}
