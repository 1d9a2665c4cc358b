//! Which clusters a write affects is computed from cluster names and labels
//! alone (`db::clusters::scoped`, not the full rows with connection state):
//! for every kind of gate and override write, the notification names exactly
//! the clusters whose snapshot changed, and their snapshot revision (and only
//! theirs) moved.

mod common;

use std::collections::BTreeSet;

use axum::http::{Method, StatusCode};
use common::{Hub, changes_listener, next_change};
use fleetgate_hub::service::fleet::Snapshot;
use serde_json::{Value, json};
use sqlx::postgres::PgListener;

const CLUSTERS: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

fn names() -> Vec<String> {
    CLUSTERS.iter().map(|c| c.to_string()).collect()
}

/// a, b: prod; c, d: staging; e: no labels; f: dev. a, c, f: tier=web; b: tier=db.
async fn fleet() -> Hub {
    let hub = Hub::new().await;
    for (name, labels) in [
        ("a", json!({"env": "prod", "tier": "web"})),
        ("b", json!({"env": "prod", "tier": "db"})),
        ("c", json!({"env": "staging", "tier": "web"})),
        ("d", json!({"env": "staging"})),
        ("e", json!({})),
        ("f", json!({"env": "dev", "tier": "web"})),
    ] {
        hub.register(name, labels).await;
    }
    hub
}

fn gate(name: &str, clusters: Value) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1",
        "kind": "Gate",
        "metadata": {"name": name},
        "spec": {"clusters": clusters, "default": "open"}
    })
}

/// Every cluster's snapshot now, by name (`None`: no such cluster).
async fn snapshots(hub: &Hub) -> Vec<(String, Option<Snapshot>)> {
    let found = hub.service.snapshots(&names()).await.unwrap();
    names()
        .into_iter()
        .map(|n| {
            let s = found.iter().find(|s| s.cluster == n).cloned();
            (n, s)
        })
        .collect()
}

/// Watches the notifications and the snapshots around each write.
struct Watch {
    listener: PgListener,
    before: Vec<(String, Option<Snapshot>)>,
}

impl Watch {
    async fn new(hub: &Hub) -> Self {
        Self {
            listener: changes_listener(hub).await,
            before: snapshots(hub).await,
        }
    }

    /// After a successful write: its notification names exactly `expected`,
    /// which are exactly the clusters whose snapshot content changed; their
    /// revision is the write's, the others' did not move.
    async fn changed(&mut self, hub: &Hub, what: &str, expected: &[&str]) {
        let notice = next_change(&mut self.listener).await;
        let after = snapshots(hub).await;
        let mut changed = BTreeSet::new();
        for ((name, old), (_, new)) in self.before.iter().zip(&after) {
            let content_moved = match (old, new) {
                (Some(o), Some(n)) => !o.same_content(n),
                (o, n) => o.is_some() != n.is_some(),
            };
            if content_moved {
                changed.insert(name.as_str());
            }
            let rev = new.as_ref().map_or(0, |s| s.revision);
            let expect_moved = expected.contains(&name.as_str());
            assert_eq!(
                i64::try_from(rev).unwrap() == notice.revision,
                expect_moved,
                "{what}: revision of {name} is {rev}, the write's {}",
                notice.revision
            );
        }
        let expected: BTreeSet<&str> = expected.iter().copied().collect();
        assert_eq!(changed, expected, "{what}: clusters whose snapshot changed");
        let notified: BTreeSet<String> = notice.clusters.unwrap().into_iter().collect();
        let notified: BTreeSet<&str> = notified.iter().map(String::as_str).collect();
        assert_eq!(notified, expected, "{what}: clusters notified");
        self.before = after;
    }
}

async fn override_id(hub: &Hub, gate: &str, state: &str, body: Value) -> String {
    let r = hub
        .post_json(
            &format!("/api/v1/gates/{gate}/{state}"),
            &hub.operator,
            body,
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    r.body["id"].as_str().unwrap().to_string()
}

async fn cancel(hub: &Hub, id: &str) {
    let r = hub.cancel_override(id).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
}

#[tokio::test]
async fn every_write_notifies_exactly_the_clusters_whose_snapshot_changed() {
    let hub = fleet().await;
    let mut w = Watch::new(&hub).await;
    let admin = hub.admin.clone();

    let in_prod_or_staging = json!({"selector": {"matchExpressions": [
        {"key": "env", "operator": "In", "values": ["prod", "staging"]}]}});
    let r = hub
        .post_json("/api/v1/gates", &admin, gate("g1", in_prod_or_staging))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    w.changed(&hub, "create g1", &["a", "b", "c", "d"]).await;

    let web_or_e = json!({"names": ["a", "e"], "selector": {"matchLabels": {"tier": "web"}}});
    let r = hub
        .post_json("/api/v1/gates", &admin, gate("g2", web_or_e))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    w.changed(&hub, "create g2", &["a", "c", "e", "f"]).await;

    let r = hub
        .post_json("/api/v1/gates", &admin, gate("g3", json!({"selector": {}})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    w.changed(&hub, "create g3 (every cluster)", &CLUSTERS)
        .await;

    let gate_wide = override_id(&hub, "g1", "close", json!({"for": "1h", "reason": "r"})).await;
    w.changed(&hub, "close g1", &["a", "b", "c", "d"]).await;

    let named = json!({"for": "1h", "reason": "r", "clusters": {"names": ["e"]}});
    override_id(&hub, "g2", "open", named).await;
    w.changed(&hub, "open g2 for e", &["e"]).await;

    let env_exists = json!({"for": "1h", "reason": "r", "clusters": {"selector": {
        "matchExpressions": [{"key": "env", "operator": "Exists"}]}}});
    let by_selector = override_id(&hub, "g2", "close", env_exists).await;
    w.changed(&hub, "close g2 where env exists", &["a", "c", "f"])
        .await;

    let no_tier = json!({"for": "1h", "reason": "r", "clusters": {"selector": {
        "matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}}});
    override_id(&hub, "g3", "close", no_tier).await;
    w.changed(&hub, "close g3 without tier", &["d", "e"]).await;

    let not_db = json!({"for": "1h", "reason": "r", "clusters": {"names": ["b"], "selector": {
        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web", "db"]}]}}});
    override_id(&hub, "g3", "open", not_db).await;
    w.changed(
        &hub,
        "open g3 for b and tier not in web/db",
        &["b", "d", "e"],
    )
    .await;

    cancel(&hub, &by_selector).await;
    w.changed(&hub, "cancel the selector override", &["a", "c", "f"])
        .await;
    cancel(&hub, &gate_wide).await;
    w.changed(&hub, "cancel the gate-wide override", &["a", "b", "c", "d"])
        .await;

    // Moving g2 to env=dev: the old scope (a, c, e, f) and the new one (f).
    let r = hub
        .call(
            Method::PUT,
            "/api/v1/gates/g2",
            Some(&admin),
            Some((
                "application/json",
                gate("g2", json!({"selector": {"matchLabels": {"env": "dev"}}})).to_string(),
            )),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    w.changed(&hub, "replace g2", &["a", "c", "e", "f"]).await;

    let r = hub
        .call(Method::DELETE, "/api/v1/gates/g1", Some(&admin), None)
        .await;
    assert!(r.status.is_success(), "{}", r.text);
    w.changed(&hub, "delete g1", &["a", "b", "c", "d"]).await;

    // Scopes naming clusters outside the gate, or unknown ones: 422, naming
    // the field, and nothing written.
    let rev = hub.revision().await;
    for (cluster, problem) in [("a", "not in the gate's scope"), ("zz", "not registered")] {
        let body = json!({"for": "1h", "reason": "r", "clusters": {"names": ["f", cluster]}});
        let r = hub
            .post_json("/api/v1/gates/g2/close", &hub.operator, body)
            .await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
        assert!(r.text.contains("clusters.names[1]"), "{}", r.text);
        assert!(r.text.contains(problem), "{}", r.text);
    }
    assert_eq!(hub.revision().await, rev);

    override_id(&hub, "g3", "close", json!({"for": "1h", "reason": "r"})).await;
    w.changed(&hub, "close g3 everywhere", &CLUSTERS).await;
}
