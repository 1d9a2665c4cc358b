//! The change-notification contract the gRPC fan-out consumes: each write
//! bumps the fleet revision, moves the snapshot revision of exactly the
//! affected clusters (a stamp per cluster row, or one fleet-wide revision
//! when every cluster is affected), and notifies `fleetgate_changes` with
//! `{"revision":N,"clusters":[..]}` — only when the write commits.

mod common;

use axum::http::{Method, StatusCode};
use common::{Hub, business_hours, changes_listener, next_change, simple_gate};
use fleetgate_hub::db::revision::EFFECTIVE_REVISION;
use serde_json::json;

/// The cluster's snapshot revision (what its spoke is sent).
async fn desired(hub: &Hub, cluster: &str) -> i64 {
    let (r,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select {EFFECTIVE_REVISION} from clusters c cross join fleet_revision f \
         where c.name = $1"
    )))
    .bind(cluster)
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    let rest = hub
        .call(
            Method::GET,
            &format!("/api/v1/clusters/{cluster}"),
            Some(&hub.admin),
            None,
        )
        .await;
    assert_eq!(
        rest.body["desiredRevision"], r,
        "REST shows the snapshot revision"
    );
    r
}

/// The cluster row's own stamp (written only by changes that did not affect
/// every cluster).
async fn stamp(hub: &Hub, cluster: &str) -> i64 {
    let (r,): (i64,) = sqlx::query_as("select desired_revision from clusters where name = $1")
        .bind(cluster)
        .fetch_one(&hub.pool)
        .await
        .unwrap();
    r
}

#[tokio::test]
async fn writes_notify_the_affected_clusters() {
    let hub = Hub::new().await;
    hub.register("p1", json!({"env": "prod"})).await;
    hub.register("s1", json!({"env": "staging"})).await;
    let mut l = changes_listener(&hub).await;

    // Gate for env=prod → p1 only.
    let rev0 = hub.revision().await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let n = next_change(&mut l).await;
    assert_eq!(n.revision, rev0 + 1);
    assert_eq!(n.clusters, Some(vec!["p1".to_string()]));
    assert_eq!(desired(&hub, "p1").await, rev0 + 1);
    assert!(desired(&hub, "s1").await < rev0 + 1);

    // Relabelling s1 into prod → s1.
    let r = hub
        .call(
            Method::PUT,
            "/api/v1/clusters/s1/labels",
            Some(&hub.admin),
            Some((
                "application/json",
                json!({"labels": {"env": "prod"}}).to_string(),
            )),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(
        next_change(&mut l).await.clusters,
        Some(vec!["s1".to_string()])
    );

    // Moving the gate to staging → old scope (p1, s1) ∪ new scope (none).
    let r = hub
        .call(
            Method::PUT,
            "/api/v1/gates/bh",
            Some(&hub.admin),
            Some(("application/yaml", business_hours("bh", "staging"))),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let n = next_change(&mut l).await;
    assert_eq!(n.clusters, Some(vec!["p1".to_string(), "s1".to_string()]));
    assert_eq!(desired(&hub, "p1").await, n.revision);
    assert_eq!(desired(&hub, "s1").await, n.revision);
    // Every cluster was affected: one fleet-wide revision, no row stamped.
    assert!(stamp(&hub, "p1").await < n.revision);
    assert!(stamp(&hub, "s1").await < n.revision);

    // An override for one named cluster → that cluster.
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("named", &["p1", "s1"], "closed"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED);
    next_change(&mut l).await;
    let r = hub
        .post_json(
            "/api/v1/gates/named/open",
            &hub.operator,
            json!({"for": "1h", "reason": "r", "clusters": {"names": ["s1"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(
        next_change(&mut l).await.clusters,
        Some(vec!["s1".to_string()])
    );

    // A rejected write notifies nothing: the next notification is the next
    // successful write's, one revision later.
    let rev = hub.revision().await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            simple_gate("named", &["p1"], "closed"),
        )
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert_eq!(hub.revision().await, rev);
    let r = hub
        .call(
            Method::POST,
            "/api/v1/clusters/p1/rotate-token",
            Some(&hub.admin),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::OK);
    let n = next_change(&mut l).await;
    assert_eq!(n.revision, rev + 1);
    assert_eq!(n.clusters, Some(vec!["p1".to_string()]));
}

#[tokio::test]
async fn huge_cluster_lists_become_recompute_all() {
    let hub = Hub::new().await;
    let mut names = Vec::new();
    for i in 0..300 {
        let name = format!("cluster-with-a-rather-long-name-{i:04}");
        hub.register(&name, json!({"env": "prod"})).await;
        names.push(name);
    }
    let mut l = changes_listener(&hub).await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let n = next_change(&mut l).await;
    assert_eq!(
        n.clusters, None,
        "payload over the NOTIFY limit → recompute all"
    );
    // Every affected cluster's snapshot revision moved, without a stamp on
    // any row (all 300 clusters were affected: one fleet-wide revision).
    let (moved, stamped): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select count(*) filter (where {EFFECTIVE_REVISION} = $1), \
                count(*) filter (where c.desired_revision = $1) \
         from clusters c cross join fleet_revision f"
    )))
    .bind(n.revision)
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!((moved, stamped), (300, 0));

    // One more cluster outside the gate's scope: the next change affects 300
    // of 301, so each of those rows is stamped and the new one is not moved.
    hub.register("elsewhere", json!({"env": "staging"})).await;
    next_change(&mut l).await;
    let r = hub.create_gate_yaml(&business_hours("bh2", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let n = next_change(&mut l).await;
    let (moved, stamped): (i64, i64) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select count(*) filter (where {EFFECTIVE_REVISION} = $1), \
                count(*) filter (where c.desired_revision = $1) \
         from clusters c cross join fleet_revision f"
    )))
    .bind(n.revision)
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!((moved, stamped), (300, 300));
    assert!(desired(&hub, "elsewhere").await < n.revision);
}
