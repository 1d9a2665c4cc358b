//! What changes while a rollout runs: a freeze closes every cluster at once and a new
//! opening starts from wave 1, a cluster coming into scope joins a wave not yet started,
//! a cluster-scoped open override bypasses its wave (audited), and a freeze made in a
//! cluster fences that cluster's opening when it ends.

use axum::http::StatusCode;
use serde_json::json;

use crate::rollout_support::{THREE_WAVES, fleet};

#[tokio::test]
async fn a_freeze_mid_rollout_closes_everything_at_once() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(10);
    f.step().await;
    assert_eq!(f.released().await.len(), 3);
    let r = f
        .hub
        .post_json(
            "/api/v1/gates/waves/close",
            &f.hub.operator,
            json!({"for": "1h", "reason": "freeze"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(f.step().await, ["rollout.end"]);
    assert!(f.released().await.is_empty());
    assert_eq!(f.status().await["state"], "ended");
    // The freeze expires inside the window: a new opening, a new rollout from wave 1.
    f.advance(60);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn late_joiners_and_bypass() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    // c7 comes into scope while wave 2 has not started: it joins wave 2.
    f.hub.register("c7", json!({"env": "prod"})).await;
    assert_eq!(f.step().await, ["rollout.join"]);
    let s = f.status().await;
    let wave2: Vec<&str> = s["waves"][1]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(wave2.contains(&"c7"), "{s}");
    // A cluster-scoped open override opens c6 ahead of its wave (audited).
    let r = f
        .hub
        .post_json(
            "/api/v1/gates/waves/open",
            &f.hub.operator,
            json!({"for": "1h", "reason": "hotfix", "clusters": {"names": ["c6"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(f.step().await, ["rollout.bypass"]);
    assert_eq!(f.released().await, ["c1", "c6"]);
    assert_eq!(f.audit("rollout.bypass").await, 1);
}

#[tokio::test]
async fn a_freeze_ended_in_a_cluster_fences_its_opening() {
    use fleetgate_hub::clock::Clock as _;
    use fleetgate_hub::service::freezes::LocalFreeze;
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    let (_, opening) = f.release("c6").await.unwrap();
    let frozen_at = f.hub.clock.now();
    f.hub
        .service
        .record_local_freeze(
            "c6",
            Some(LocalFreeze {
                requested_at: frozen_at,
                expires_at: None,
                reason: "INC-9".into(),
                requested_by: "bob".into(),
            }),
        )
        .await
        .unwrap();
    assert_eq!(f.gate_state("c6").await.0, "closed");
    f.advance(5);
    let ended_at = f.hub.clock.now();
    f.hub.service.record_local_freeze("c6", None).await.unwrap();
    // c6's snapshot now fences the opening at the freeze's end: the release it holds is for
    // the earlier opening, so its spoke keeps the gate closed until a release for this one.
    let s = f.hub.service.cluster_snapshot("c6").await.unwrap();
    let g = s.gates.iter().find(|g| g.name == "waves").unwrap();
    assert_eq!(g.opening_fence, Some(ended_at));
    assert!(opening < ended_at);
    // Other clusters are not fenced by c6's freeze.
    let s = f.hub.service.cluster_snapshot("c5").await.unwrap();
    let g = s.gates.iter().find(|g| g.name == "waves").unwrap();
    assert_eq!(g.opening_fence, None);
}
