//! Fleet freezes (the emergency stop) through REST with an injected clock: a freeze
//! closes every gate above every override (a newer open override too), reaches the
//! snapshots once per cluster (also clusters without gates), expires by itself, ends by
//! unfreeze, is audited, refuses bad input naming the field and changes nothing then.

mod common;

use axum::http::StatusCode;
use chrono::Duration;
use common::{gate_state, prod_pair_gated};
use serde_json::json;

#[tokio::test]
async fn a_freeze_closes_above_a_newer_open_override_and_ends_by_unfreeze() {
    let hub = prod_pair_gated().await;
    // Opened for a hotfix; then the incident: freeze every cluster.
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "4h", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "a").await.0, "open");
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.operator,
            json!({"reason": "INC-123", "for": "2h"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["actor"], "ops");
    assert_eq!(r.body["expiresAt"], "2026-11-25T14:00:00Z");
    assert!(
        r.body.get("clusters").is_none(),
        "every cluster: {}",
        r.text
    );

    let (state, reason) = gate_state(&hub, "a").await;
    assert_eq!(state, "closed");
    assert_eq!(reason, "fleet freeze by ops until 14:00 UTC: INC-123");
    // A newer open override does not reopen a frozen cluster.
    hub.clock.advance(Duration::minutes(5));
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "please"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "b").await.0, "closed");

    // The snapshots carry the freeze once, also to c (no gate there: its spoke holds every
    // Kustomization/HelmRelease).
    for c in ["a", "b", "c"] {
        let s = hub.service.cluster_snapshot(c).await.unwrap();
        let freezes: Vec<_> = s.overrides.iter().filter(|o| o.is_freeze()).collect();
        assert_eq!(freezes.len(), 1, "{c}: {:?}", s.overrides);
        assert_eq!(freezes[0].reason, "INC-123");
    }
    // The fleet status names it (the CLI's banner).
    let r = hub.get("/api/v1/status/clusters").await;
    assert_eq!(r.body["freezes"][0]["reason"], "INC-123", "{}", r.text);

    // Unfreeze: a viewer may not; an operator ends it; the newest override decides again.
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.viewer,
            json!({"reason": "resolved"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.operator,
            json!({"reason": "resolved"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body[0]["endedBy"], "ops");
    assert_eq!(r.body[0]["endReason"], "resolved");
    assert_eq!(gate_state(&hub, "a").await.0, "open");
    assert!(
        hub.get("/api/v1/freezes")
            .await
            .body
            .as_array()
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        hub.get("/api/v1/freezes?all=true")
            .await
            .body
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Nothing left to end.
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.operator,
            json!({"reason": "again"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Audited, with the reasons.
    let r = hub.get("/api/v1/audit?limit=20").await;
    let actions: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert!(actions.contains(&"freeze.start"), "{actions:?}");
    assert!(actions.contains(&"freeze.end"), "{actions:?}");
}

#[tokio::test]
async fn a_selected_freeze_expires_by_the_clock() {
    let hub = prod_pair_gated().await;
    hub.post_json(
        "/api/v1/gates/g/open",
        &hub.operator,
        json!({"reason": "open all day"}),
    )
    .await;
    let r = hub
        .post_json(
            "/api/v1/freezes",
            &hub.operator,
            json!({"reason": "INC-9", "for": "30m", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "a").await.0, "closed");
    assert_eq!(gate_state(&hub, "b").await.0, "open", "b not selected");
    assert!(
        hub.service
            .cluster_snapshot("b")
            .await
            .unwrap()
            .overrides
            .iter()
            .all(|o| !o.is_freeze())
    );
    hub.clock.advance(Duration::minutes(30));
    assert_eq!(gate_state(&hub, "a").await.0, "open", "expired by itself");
    assert!(
        hub.get("/api/v1/freezes")
            .await
            .body
            .as_array()
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn bad_freezes_name_the_field_and_change_nothing() {
    let hub = prod_pair_gated().await;
    let before = hub.fingerprint().await;
    for (body, field) in [
        (json!({"reason": ""}), "reason"),
        (json!({"reason": "x", "for": "soon"}), "for"),
        (json!({"reason": "x", "for": "-1h"}), "for"),
        (
            json!({"reason": "x", "until": "2020-01-01T00:00:00Z"}),
            "until",
        ),
        (
            json!({"reason": "x", "for": "1h", "until": "2030-01-01T00:00:00Z"}),
            "until",
        ),
        (json!({"reason": "x", "clusters": {}}), "clusters"),
        (
            json!({"reason": "x", "clusters": {"names": ["nope"]}}),
            "clusters.names[0]",
        ),
    ] {
        let r = hub
            .post_json("/api/v1/freezes", &hub.operator, body.clone())
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.text
        );
        assert_eq!(r.body["error"]["field"], field, "{body}: {}", r.text);
    }
    let r = hub
        .post_json("/api/v1/freezes", &hub.viewer, json!({"reason": "x"}))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = hub
        .post_json(
            "/api/v1/freezes/end",
            &hub.operator,
            json!({"reason": "x", "id": "nope"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "id");
    assert_eq!(hub.fingerprint().await, before);
    // No gate may take the reserved name.
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            common::simple_gate("fleet-freeze", &["a"], "open"),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "metadata.name");
}
