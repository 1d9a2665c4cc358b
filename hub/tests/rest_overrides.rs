//! Overrides and status with an injected clock: open/close for some
//! clusters, expiry without sleeping, cancel, the snapshot inputs the gRPC
//! side reads, cluster status with held objects, and the fleet summary.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{gate_state, prod_pair_gated, t0};
use serde_json::json;

#[tokio::test]
async fn override_opens_for_selected_clusters_and_expires() {
    let hub = prod_pair_gated().await;
    assert_eq!(gate_state(&hub, "a").await.0, "closed");
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "hotfix INC-42", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["actor"], "ops");
    assert_eq!(r.body["expiresAt"], "2026-11-25T13:00:00Z");

    let (s, reason) = gate_state(&hub, "a").await;
    assert_eq!(s, "open");
    assert!(reason.contains("INC-42"), "{reason}");
    assert_eq!(gate_state(&hub, "b").await.0, "closed", "b not selected");

    // The snapshot inputs the gRPC side sends: only a gets the override.
    let a = hub.service.cluster_snapshot("a").await.unwrap();
    assert_eq!(a.gates.len(), 1);
    assert_eq!(a.overrides.len(), 1);
    assert_eq!(a.overrides[0].reason, "hotfix INC-42");
    let b = hub.service.cluster_snapshot("b").await.unwrap();
    assert!(b.overrides.is_empty());
    let c = hub.service.cluster_snapshot("c").await.unwrap();
    assert!(c.gates.is_empty(), "c is not in the gate's scope");

    let r = hub.get("/api/v1/overrides?gate=g").await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);

    // 61 minutes later the override is over, by itself.
    hub.clock.advance(Duration::minutes(61));
    assert_eq!(gate_state(&hub, "a").await.0, "closed");
    let r = hub.get("/api/v1/overrides").await;
    assert!(r.body["items"].as_array().unwrap().is_empty(), "{}", r.text);
    let r = hub.get("/api/v1/overrides?all=true").await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1);
    assert!(
        hub.service
            .cluster_snapshot("a")
            .await
            .unwrap()
            .overrides
            .is_empty()
    );
    // Cancelling an expired override is a conflict, and writes nothing.
    let id = r.body["items"][0]["id"].as_str().unwrap().to_string();
    let before = hub.fingerprint().await;
    let r = hub.cancel_override(&id).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert_eq!(hub.fingerprint().await, before);
}

#[tokio::test]
async fn override_until_cancelled_newest_wins_and_future_start() {
    let hub = prod_pair_gated().await;
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"reason": "release train"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert!(r.body["expiresAt"].is_null());
    let open_id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(gate_state(&hub, "b").await.0, "open", "whole gate scope");

    // A newer close beats the open.
    hub.clock.advance(Duration::minutes(1));
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &hub.operator,
            json!({"for": "30m", "reason": "incident"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(gate_state(&hub, "b").await.0, "closed");
    hub.clock.advance(Duration::minutes(31));
    assert_eq!(
        gate_state(&hub, "b").await.0,
        "open",
        "close expired, open remains"
    );

    let r = hub
        .call(
            Method::DELETE,
            &format!("/api/v1/overrides/{open_id}?reason=done"),
            Some(&hub.operator),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["cancelledBy"], "ops");
    assert_eq!(gate_state(&hub, "b").await.0, "closed");
    let r = hub.cancel_override(&open_id).await;
    assert_eq!(r.status, StatusCode::CONFLICT);

    // A scheduled override is in the snapshot before it starts.
    let starts = t0() + Duration::hours(5);
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "window", "startsAt": starts}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let a = hub.service.cluster_snapshot("a").await.unwrap();
    assert_eq!(a.overrides.len(), 1);
    assert_eq!(gate_state(&hub, "a").await.0, "closed", "not yet");
    hub.clock.set(starts + Duration::minutes(1));
    assert_eq!(gate_state(&hub, "a").await.0, "open");

    // Each write audited with its actor and reason.
    let r = hub.get("/api/v1/audit?actor=ops").await;
    let actions: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["action"].as_str().unwrap())
        .collect();
    assert_eq!(
        actions,
        [
            "override.open",
            "override.cancel",
            "override.close",
            "override.open"
        ]
    );
    // Time-range filter: only entries from the first minute.
    let r = hub
        .get("/api/v1/audit?actor=ops&since=2026-11-25T12:00:00Z&until=2026-11-25T12:00:30Z")
        .await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1, "{}", r.text);
}

#[tokio::test]
async fn status_shows_held_objects_and_fleet_counts() {
    let hub = prod_pair_gated().await;
    for (cluster, name, held) in [
        ("a", "apps", true),
        ("a", "infra", false),
        ("b", "apps", false),
    ] {
        sqlx::query(
            "insert into object_status (cluster, kind, namespace, name, suspended, suspended_by, \
             gates, last_applied_revision, newest_source_revision, held, reported_at) \
             values ($1, 'Kustomization', 'flux-system', $2, $3, $4, '{g}', 'main@sha1:aaa', $5, $3, $6)",
        )
        .bind(cluster)
        .bind(name)
        .bind(held)
        .bind(if held { vec!["g".to_string()] } else { vec![] })
        .bind(if held { "main@sha1:bbb" } else { "main@sha1:aaa" })
        .bind(t0())
        .execute(&hub.pool)
        .await
        .unwrap();
    }
    let r = hub.get("/api/v1/clusters/a/status").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["open"], false);
    assert_eq!(r.body["closedBy"], json!(["g"]));
    assert_eq!(r.body["counts"]["held"], 1);
    assert_eq!(r.body["gates"][0]["held"], 1);
    assert_eq!(r.body["gates"][0]["objects"].as_array().unwrap().len(), 2);
    let held: Vec<&str> = r.body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["held"] == true)
        .map(|o| o["name"].as_str().unwrap())
        .collect();
    assert_eq!(held, ["apps"]);

    let r = hub.get("/api/v1/status").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let s = &r.body;
    assert_eq!(s["clusters"]["total"], 3);
    assert_eq!(s["clusters"]["disconnected"], 3);
    assert_eq!(
        s["clusters"]["closed"], 2,
        "a and b are behind the closed gate"
    );
    assert_eq!(s["clusters"]["open"], 1, "c has no gate");
    assert_eq!(s["clusters"]["withHeld"], 1);
    assert_eq!(s["objects"]["held"], 1);
    assert_eq!(s["objects"]["governed"], 3);
    assert_eq!(s["gates"][0]["clusters"], 2);
    assert_eq!(s["gates"][0]["closed"], 2);

    // Opening for b flips the counts.
    hub.post_json(
        "/api/v1/gates/g/open",
        &hub.operator,
        json!({"for": "1h", "reason": "r", "clusters": {"selector": {"matchLabels": {"env": "prod"}}}}),
    )
    .await;
    let r = hub.get("/api/v1/status").await;
    assert_eq!(r.body["gates"][0]["open"], 2);
    assert_eq!(r.body["clusters"]["open"], 3);
}

#[tokio::test]
async fn preview_counts_overrides() {
    let hub = prod_pair_gated().await;
    let preview = |q: &'static str| {
        let hub = &hub;
        async move {
            let r = hub
                .get(&format!(
                    "/api/v1/gates/g/preview?from=2026-11-25T12:00:00Z&to=2026-11-26T12:00:00Z{q}"
                ))
                .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            r.body
        }
    };
    let p = preview("").await;
    assert_eq!(p["initial"]["state"], "closed");
    assert!(p["transitions"].as_array().unwrap().is_empty());

    // An override for one cluster shows only in that cluster's preview.
    hub.post_json(
        "/api/v1/gates/g/open",
        &hub.operator,
        json!({"for": "2h", "reason": "a only", "clusters": {"names": ["a"]}}),
    )
    .await;
    assert_eq!(preview("").await["initial"]["state"], "closed");
    let p = preview("&cluster=a").await;
    assert_eq!(p["initial"]["state"], "open");
    assert_eq!(p["transitions"][0]["at"], "2026-11-25T14:00:00Z");
    assert_eq!(p["transitions"][0]["state"], "closed");
    assert_eq!(preview("&cluster=b").await["initial"]["state"], "closed");

    // A whole-gate override shows in the gate's preview.
    hub.post_json(
        "/api/v1/gates/g/open",
        &hub.operator,
        json!({"for": "1h", "reason": "all"}),
    )
    .await;
    let p = preview("").await;
    assert_eq!(p["initial"]["state"], "open");
    assert_eq!(p["transitions"][0]["at"], "2026-11-25T13:00:00Z");
    assert_eq!(p["gate"], "g");
    let r = hub.get("/api/v1/gates/g/preview?cluster=ghost").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
}
