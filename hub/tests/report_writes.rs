//! Steady-state status costs what changes, not what is reported (real
//! PostgreSQL): a report equal to the stored one writes no row at all (the
//! spoke's liveness is its replica's lease, see `liveness.rs`), unless it
//! moves the report fence or the spoke's clock drifted; a changed report
//! writes only the objects that changed. A row's `xmin` (the
//! transaction that wrote its current version) tells whether it was
//! rewritten. The Flux inventory (impact preview) comes only with reports
//! where it changed: a report without it keeps the stored one.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use common::{Hub, t0};
use fleetgate_hub::db::held_objects::HeldObject;
use fleetgate_hub::db::report_batch::write_report;
use fleetgate_hub::db::reports::{CLOCK_DRIFT_MS, ClusterReport, ReportedObject};
use fleetgate_proto::v1::{self as pb, spoke_message};
use grpc_support::{Grpc, TestSpoke, kustomization, within};
use serde_json::json;

fn object(name: &str, revision: &str) -> ReportedObject {
    ReportedObject {
        kind: "Kustomization".into(),
        namespace: "apps".into(),
        name: name.into(),
        suspended: false,
        suspended_by: vec![],
        gates: vec!["g".into()],
        last_applied_revision: Some(revision.into()),
        newest_source_revision: Some(revision.into()),
        held: false,
        suspended_by_human: false,
        ignored: false,
        ..ReportedObject::default()
    }
}

fn held(name: &str) -> HeldObject {
    HeldObject {
        group: "apps".into(),
        kind: "Deployment".into(),
        namespace: "apps".into(),
        name: name.into(),
        kustomization_namespace: "flux-system".into(),
        kustomization_name: "apps".into(),
        gates: vec!["g".into()],
        held_by: vec!["g".into()],
        held_by_person: false,
        held_since_revision: Some("main@sha1:1".into()),
        held_since: Some(t0()),
        newer_revision_applied: false,
        not_permitted: false,
        ..HeldObject::default()
    }
}

fn report(objects: Vec<ReportedObject>, at: DateTime<Utc>, offset: i64) -> ClusterReport {
    ClusterReport {
        cluster: "c1".into(),
        objects,
        held_objects: vec![],
        local_gates: vec![],
        problems: vec![],
        inventory: None,
        revision: 1,
        clock_offset_ms: offset,
        received_at: at,
    }
}

/// The row versions of c1's object rows and of its connection row.
async fn versions(hub: &Hub) -> (Vec<String>, String) {
    let objects: Vec<(String,)> =
        sqlx::query_as("select xmin::text from object_status where cluster = 'c1' order by name")
            .fetch_all(&hub.pool)
            .await
            .unwrap();
    let (connection,): (String,) =
        sqlx::query_as("select xmin::text from cluster_connections where cluster = 'c1'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    (objects.into_iter().map(|(x,)| x).collect(), connection)
}

async fn write(hub: &Hub, r: &ClusterReport) {
    let mut tx = hub.pool.begin().await.unwrap();
    assert!(write_report(&mut tx, r).await.unwrap());
    tx.commit().await.unwrap();
}

async fn stamps(hub: &Hub) -> (DateTime<Utc>, DateTime<Utc>, i64) {
    sqlx::query_as(
        "select last_seen_at, reported_at, clock_offset_ms from cluster_connections \
         where cluster = 'c1'",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn unchanged_reports_write_nothing() {
    let hub = Hub::new().await;
    hub.register("c1", json!({})).await;
    let objects = vec![object("a", "main@sha1:1"), object("b", "main@sha1:1")];
    let t = t0();

    write(&hub, &report(objects.clone(), t, 5)).await;
    let first = versions(&hub).await;
    assert_eq!(first.0.len(), 2);
    assert_eq!(stamps(&hub).await, (t, t, 5));

    // The same content as heartbeats, for an hour, with round-trip jitter in
    // the clock offset: not one row version.
    for minutes in [1, 2, 10, 60] {
        let at = t + Duration::minutes(minutes);
        write(&hub, &report(objects.clone(), at, 5 + CLOCK_DRIFT_MS - 1)).await;
        assert_eq!(versions(&hub).await, first, "a heartbeat rewrote rows");
    }
    assert_eq!(stamps(&hub).await, (t, t, 5));

    // A clock that drifted by CLOCK_DRIFT_MS is written (the connection row
    // alone), with the report's time.
    let later = t + Duration::minutes(61);
    write(&hub, &report(objects.clone(), later, 5 + CLOCK_DRIFT_MS)).await;
    let stamped = versions(&hub).await;
    assert_eq!(
        stamped.0, first.0,
        "object rows rewritten for a clock offset"
    );
    assert_ne!(stamped.1, first.1, "the clock offset was not written");
    assert_eq!(stamps(&hub).await, (later, later, 5 + CLOCK_DRIFT_MS));
    // Disconnected, every object shows the time of the latest written report.
    let r = hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let objs = r.body["objects"].as_array().unwrap();
    assert_eq!(objs.len(), 2);
    for o in objs {
        let at: DateTime<Utc> = o["reportedAt"].as_str().unwrap().parse().unwrap();
        assert_eq!(at, later, "{o}");
    }
    let (t2, offset) = (later + Duration::seconds(1), 5 + CLOCK_DRIFT_MS);

    // A change in any object rewrites the report.
    let changed = vec![object("a", "main@sha1:1"), object("b", "main@sha1:2")];
    write(&hub, &report(changed, t2, offset)).await;
    let rewritten = versions(&hub).await;
    assert_ne!(rewritten.0, first.0);
    let r = hub.get("/api/v1/clusters/c1/status").await;
    let b = &r.body["objects"][1];
    assert_eq!(b["lastAppliedRevision"], "main@sha1:2", "{b}");
    assert_eq!(stamps(&hub).await, (t2, t2, offset));

    // A removed object is a change too.
    write(&hub, &report(vec![object("a", "main@sha1:1")], t2, offset)).await;
    assert_eq!(versions(&hub).await.0.len(), 1);

    // So is a held object (holdObjects gates), alone.
    let mut with_held = report(vec![object("a", "main@sha1:1")], t2, offset);
    with_held.held_objects = vec![held("web")];
    write(&hub, &with_held).await;
    let r = hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert!(
        r.text.contains("\"web\""),
        "held object not stored: {}",
        r.text
    );
}

/// c1's held rows' versions by name.
async fn held_versions(hub: &Hub) -> Vec<(String, String)> {
    sqlx::query_as("select name, xmin::text from held_objects where cluster = 'c1' order by name")
        .fetch_all(&hub.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_changed_report_rewrites_only_the_changed_rows() {
    let hub = Hub::new().await;
    hub.register("c1", json!({})).await;
    let names: Vec<String> = (0..100).map(|i| format!("app-{i:03}")).collect();
    let all = |changed: Option<(&str, &str)>| -> Vec<ReportedObject> {
        names
            .iter()
            .map(|n| match changed {
                Some((c, rev)) if c == n => object(n, rev),
                _ => object(n, "main@sha1:1"),
            })
            .collect()
    };
    let t = t0();
    let mut first = report(all(None), t, 0);
    first.held_objects = vec![held("web"), held("worker")];
    write(&hub, &first).await;
    let (before, _) = versions(&hub).await;
    let held_before = held_versions(&hub).await;
    assert_eq!(before.len(), 100);

    // One object of 100 applied a new revision: one row version, not 100.
    let t2 = t + Duration::minutes(1);
    let mut second = report(all(Some(("app-042", "main@sha1:2"))), t2, 0);
    second.held_objects = first.held_objects.clone();
    write(&hub, &second).await;
    let (after, _) = versions(&hub).await;
    let rewritten: Vec<&String> = names
        .iter()
        .zip(before.iter().zip(&after))
        .filter(|(_, (b, a))| b != a)
        .map(|(n, _)| n)
        .collect();
    assert_eq!(rewritten, vec!["app-042"]);
    assert_eq!(
        held_versions(&hub).await,
        held_before,
        "held rows rewritten"
    );

    // Every object still shows the changed report's content and time.
    let r = hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let objs = r.body["objects"].as_array().unwrap();
    assert_eq!(objs.len(), 100);
    for o in objs {
        let want = if o["name"] == "app-042" {
            "main@sha1:2"
        } else {
            "main@sha1:1"
        };
        assert_eq!(o["lastAppliedRevision"], want, "{o}");
        let at: DateTime<Utc> = o["reportedAt"].as_str().unwrap().parse().unwrap();
        assert_eq!(at, t2, "{o}");
    }

    // One held object changed (released): its row alone.
    let mut third = report(second.objects.clone(), t2 + Duration::minutes(1), 0);
    let mut released = held("worker");
    released.held_by = vec![];
    third.held_objects = vec![held("web"), released];
    write(&hub, &third).await;
    let held_after = held_versions(&hub).await;
    assert_eq!(
        held_after[0], held_before[0],
        "unchanged held row rewritten"
    );
    assert_ne!(
        held_after[1], held_before[1],
        "changed held row not written"
    );
    assert_eq!(versions(&hub).await.0, after, "object rows rewritten");
    let (held_by,): (Vec<String>,) =
        sqlx::query_as("select held_by from held_objects where cluster = 'c1' and name = 'worker'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    assert!(held_by.is_empty());
}

/// The cluster's stored report revision (the rollout health fence).
async fn report_revision(hub: &Hub) -> Option<i64> {
    let (r,): (Option<i64>,) =
        sqlx::query_as("select report_revision from cluster_connections where cluster = 'c1'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    r
}

#[tokio::test]
async fn an_unchanged_report_at_a_newer_revision_moves_the_fence_at_once() {
    let hub = Hub::new().await;
    hub.register("c1", json!({})).await;
    let objects = vec![object("a", "main@sha1:1")];
    let t = t0();
    write(&hub, &report(objects.clone(), t, 0)).await;
    let first = versions(&hub).await;
    assert_eq!(report_revision(&hub).await, Some(1));

    // Same content, same revision, 10 s later: nothing written.
    write(&hub, &report(objects.clone(), t + Duration::seconds(10), 0)).await;
    assert_eq!(versions(&hub).await, first);

    // Same content at a newer snapshot revision (the spoke saw a release): the
    // connection row takes it at once, no object row is rewritten.
    let mut newer = report(objects.clone(), t + Duration::seconds(20), 0);
    newer.revision = 2;
    write(&hub, &newer).await;
    let after = versions(&hub).await;
    assert_eq!(after.0, first.0, "object rows rewritten for a revision");
    assert_ne!(after.1, first.1, "the revision was not written");
    assert_eq!(report_revision(&hub).await, Some(2));
    let r = hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(r.body["objects"][0]["reportRevision"], 2, "{}", r.text);
}

#[test]
fn the_hash_covers_every_field_of_a_reported_object() {
    // Each JSON field of an object changed in turn changes the hash, so a
    // field added to ReportedObject is covered without touching the hash.
    let base = report(vec![object("a", "r")], t0(), 0);
    let hash = base.content_hash().unwrap();
    let json = serde_json::to_value(&base.objects[0]).unwrap();
    let fields = json.as_object().unwrap();
    assert!(fields.len() >= 11);
    for (key, value) in fields {
        let mut changed = json.clone();
        changed[key] = match value {
            serde_json::Value::Bool(b) => json!(!b),
            serde_json::Value::String(s) => json!(format!("{s}x")),
            serde_json::Value::Array(_) => json!(["other"]),
            serde_json::Value::Null => json!("set"),
            other => panic!("unexpected field type {key}: {other}"),
        };
        let Ok(obj) = serde_json::from_value::<ReportedObject>(changed) else {
            continue; // a value the type cannot hold (e.g. a kind enum)
        };
        let other = report(vec![obj], t0(), 0);
        assert_ne!(other.content_hash().unwrap(), hash, "field {key}");
    }
    // The same for held objects.
    let mut with_held = report(vec![object("a", "r")], t0(), 0);
    with_held.held_objects = vec![held("web")];
    let held_hash = with_held.content_hash().unwrap();
    assert_ne!(held_hash, hash);
    let json = serde_json::to_value(&with_held.held_objects[0]).unwrap();
    for (key, value) in json.as_object().unwrap() {
        let mut changed = json.clone();
        changed[key] = match value {
            serde_json::Value::Bool(b) => json!(!b),
            serde_json::Value::String(s) => json!(format!("{s}x")),
            serde_json::Value::Array(_) => json!(["other"]),
            serde_json::Value::Null => json!("set"),
            _ => continue,
        };
        let Ok(obj) = serde_json::from_value::<HeldObject>(changed) else {
            continue; // e.g. a time field given a string that is no time
        };
        let mut other = with_held.clone();
        other.held_objects = vec![obj];
        assert_ne!(other.content_hash().unwrap(), held_hash, "held field {key}");
    }
    // Arrival time and clock offset are not content.
    assert_eq!(
        report(vec![object("a", "r")], t0() + Duration::hours(1), 42)
            .content_hash()
            .unwrap(),
        hash
    );
}

/// An inventory object as a spoke sends it.
fn inventory_object(name: &str) -> pb::InventoryObject {
    pb::InventoryObject {
        kind: "Kustomization".into(),
        namespace: "apps".into(),
        name: name.into(),
        labels: [("tier".to_owned(), "prod".to_owned())].into(),
        ..Default::default()
    }
}

/// A report of Kustomization `object`, with `inventory` (`carried`: `has_inventory`).
async fn send_report(
    spoke: &TestSpoke,
    revision: u64,
    object: &str,
    inventory: &[&str],
    carried: bool,
) {
    let report = pb::StatusReport {
        revision,
        objects: vec![kustomization("apps", object, false, &[])],
        inventory: inventory.iter().map(|n| inventory_object(n)).collect(),
        has_inventory: carried,
        ..Default::default()
    };
    spoke
        .send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Report(report)),
        })
        .await;
}

/// c1's stored inventory, by name (`None`: none stored).
async fn stored_inventory(hub: &Hub) -> Option<Vec<String>> {
    let row: Option<(sqlx::types::Json<Vec<serde_json::Value>>,)> =
        sqlx::query_as("select objects from cluster_inventories where cluster = 'c1'")
            .fetch_optional(&hub.pool)
            .await
            .unwrap();
    row.map(|(o,)| {
        o.0.iter()
            .map(|o| o["name"].as_str().unwrap().to_owned())
            .collect()
    })
}

/// Waits until c1's stored objects are exactly `[name]` (its report was written).
async fn written(hub: &Hub, name: &str) {
    within("the report to be written", async {
        loop {
            let names: Vec<(String,)> =
                sqlx::query_as("select name from object_status where cluster = 'c1'")
                    .fetch_all(&hub.pool)
                    .await
                    .unwrap();
            if names == [(name.to_owned(),)] {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn a_report_without_the_inventory_keeps_the_stored_one() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let rev = spoke.snapshot().await.revision;

    send_report(&spoke, rev, "a", &["x", "y"], true).await;
    written(&hub, "a").await;
    assert_eq!(
        stored_inventory(&hub).await,
        Some(vec!["x".into(), "y".into()])
    );

    // A changed inventory right before a report without one (the batcher may keep
    // only the newer report): the change is stored, not lost.
    send_report(&spoke, rev, "a", &["x", "y", "z"], true).await;
    send_report(&spoke, rev, "b", &[], false).await;
    written(&hub, "b").await;
    let xyz = Some(vec!["x".into(), "y".into(), "z".into()]);
    assert_eq!(stored_inventory(&hub).await, xyz);

    // Heartbeats without it change nothing.
    send_report(&spoke, rev, "c", &[], false).await;
    written(&hub, "c").await;
    assert_eq!(stored_inventory(&hub).await, xyz);

    // Carried and empty: the cluster has no Flux object left.
    send_report(&spoke, rev, "d", &[], true).await;
    written(&hub, "d").await;
    assert_eq!(stored_inventory(&hub).await, Some(vec![]));

    // A spoke that predates `has_inventory` sends it with every report.
    send_report(&spoke, rev, "e", &["w"], false).await;
    written(&hub, "e").await;
    assert_eq!(stored_inventory(&hub).await, Some(vec!["w".into()]));

    // An inventory alone is no change of the report: no object row rewritten.
    let before = versions(&hub).await.0;
    send_report(&spoke, rev, "e", &["v"], true).await;
    within("the inventory to be stored", async {
        while stored_inventory(&hub).await != Some(vec!["v".into()]) {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_eq!(versions(&hub).await.0, before);
}

/// Cluster `name`'s `snapshotOverBudget` revision as REST shows it (`None`: not over).
async fn over_budget_revision(hub: &Hub, name: &str) -> Option<u64> {
    let r = hub.get(&format!("/api/v1/clusters/{name}")).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    r.body
        .get("snapshotOverBudget")
        .map(|o| o["revision"].as_u64().expect("a revision"))
}

/// The over-budget clears a flush writes (the first snapshot of every stream queues one: a
/// reconnect storm, one per spoke) go in one statement, beside a cluster set over its budget
/// in the same flush; each cluster ends as its last queued state says.
#[tokio::test]
async fn a_flush_clears_many_over_budget_records_beside_single_writes() {
    use fleetgate_api_types::SnapshotOverBudget;
    use fleetgate_hub::metrics::GrpcMetrics;
    use fleetgate_hub::service::reports::Reports;

    let hub = Hub::new().await;
    for c in ["a", "b", "c", "d"] {
        hub.register(c, json!({})).await;
    }
    let reports = Reports::new(
        hub.service.clone(),
        "test-replica".into(),
        std::time::Duration::from_millis(10),
        GrpcMetrics::default(),
    );
    let over = |revision| SnapshotOverBudget {
        bytes: 2_000_000,
        budget: 1_000_000,
        revision,
        since: Utc::now(),
    };
    for c in ["a", "b", "c"] {
        reports.snapshot_over_budget(c, Some(over(1)));
    }
    reports.flush_all().await;
    for c in ["a", "b", "c"] {
        assert_eq!(over_budget_revision(&hub, c).await, Some(1), "{c}");
    }

    // a and b fit again, d (never over) is cleared too, c goes over at a newer revision.
    for c in ["a", "b", "d"] {
        reports.snapshot_over_budget(c, None);
    }
    reports.snapshot_over_budget("c", Some(over(2)));
    reports.flush_all().await;
    for c in ["a", "b", "d"] {
        assert_eq!(over_budget_revision(&hub, c).await, None, "{c}");
    }
    assert_eq!(over_budget_revision(&hub, "c").await, Some(2));

    // Only clears: one statement, nothing else.
    reports.snapshot_over_budget("c", None);
    reports.flush_all().await;
    assert_eq!(over_budget_revision(&hub, "c").await, None);
}
