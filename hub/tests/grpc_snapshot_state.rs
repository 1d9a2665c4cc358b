//! The cluster's snapshot state on the hub, over real gRPC and REST: a cluster whose gates are
//! past the snapshot budget shows `snapshotOverBudget` (size, budget, revision) while the hub
//! holds it closed, and what its spoke reports of its persisted snapshot shows as
//! `snapshotPersistence` (a persistence failure with its error); both clear when the cluster
//! recovers (its gates fit, its spoke persists again). Watchers hear of each transition once,
//! at once (WatchFleet's `SnapshotStateChanged`, the event stream's `snapshotState`, woken by
//! a change notification naming no cluster); a report that only persists another revision
//! announces nothing.

mod common;
mod grpc_support;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_policy::budgets::{GATE_MANIFEST_MAX_BYTES, SNAPSHOT_MAX_BYTES};
use fleetgate_proto::v1 as pb;
use grpc_support::served::{Served, Sse, next_event};
use grpc_support::{TestSpoke, within};
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

/// Cluster `a` as REST shows it once `ready` holds. Polled: the state is written by the
/// replica's flush and announces no event of its own (bounded by `within`). A state queued
/// before another is written no later than it.
async fn cluster_when(hub: &Hub, what: &str, ready: impl Fn(&Value) -> bool) -> Value {
    within(what, async {
        loop {
            let r = hub.get("/api/v1/clusters/a").await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            if ready(&r.body) {
                return r.body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The next WatchFleet `SnapshotStateChanged` and the event stream's `snapshotState` (of
/// cluster `a`); both must say the same.
async fn snapshot_event(
    watch: &mut tonic::Streaming<pb::FleetEvent>,
    sse: &mut Sse,
    what: &str,
) -> pb::SnapshotStateChanged {
    let e = next_event(watch, what, |e| match e.event {
        Some(pb::fleet_event::Event::SnapshotState(s)) => Some(s),
        _ => None,
    })
    .await;
    assert_eq!(e.cluster, "a");
    let d = sse.next("snapshotState", |_| true).await;
    assert_eq!(d["cluster"], "a", "{d}");
    let state = e.persistence.as_ref().map(|p| p.state.as_str());
    assert_eq!(d["persistence"]["state"].as_str(), state, "{what}: {d}");
    assert_eq!(
        d["overBudget"].is_object(),
        e.over_budget.is_some(),
        "{what}: {d}"
    );
    assert_eq!(d["wasOverBudget"], e.was_over_budget, "{what}: {d}");
    let previous = d["previousPersistenceState"].as_str().unwrap_or_default();
    assert_eq!(previous, e.previous_persistence_state, "{what}: {d}");
    e
}

/// Waits for a change notification naming no cluster (a state change, not a snapshot's).
async fn nudged(changes: &mut sqlx::postgres::PgListener) {
    within("a change notification naming no cluster", async {
        while common::next_change(changes).await.clusters != Some(vec![]) {}
    })
    .await;
}

/// A report of spoke `a` at `revision` with `persistence`.
fn report(revision: u64, persistence: pb::SnapshotPersistence) -> pb::StatusReport {
    pb::StatusReport {
        revision,
        snapshot_persistence: Some(persistence),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_and_persistence_failures_show_on_the_cluster_and_clear() {
    let hub = Hub::new().await;
    let token = hub.register("a", json!({})).await;
    let served = Served::of(hub.service.clone()).await;
    let grpc = &served.grpc;
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
    let before = hub.get("/api/v1/clusters/a").await.body;
    assert!(before.get("snapshotOverBudget").is_none(), "{before}");
    assert!(before.get("snapshotPersistence").is_none(), "{before}");
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;

    // Over its budget: held closed, and the cluster says so.
    let mut spoke = TestSpoke::connect(served.grpc.channel.clone(), &token, "a", 0)
        .await
        .unwrap();
    let snap = spoke.snapshot().await;
    assert!(snap.gates.is_empty(), "{} gates sent", snap.gates.len());
    let c = cluster_when(&hub, "snapshotOverBudget", |c| {
        c.get("snapshotOverBudget").is_some()
    })
    .await;
    let over = &c["snapshotOverBudget"];
    assert!(
        over["bytes"].as_u64().unwrap() > SNAPSHOT_MAX_BYTES as u64,
        "{over}"
    );
    assert_eq!(over["budget"], json!(SNAPSHOT_MAX_BYTES), "{over}");
    assert_eq!(over["revision"], json!(snap.revision), "{over}");
    assert!(over["since"].is_string(), "{over}");
    let e = snapshot_event(&mut watch, &mut sse, "over its budget").await;
    let o = e.over_budget.as_ref().expect("over_budget");
    assert_eq!(
        (o.budget, o.revision),
        (SNAPSHOT_MAX_BYTES as u64, snap.revision)
    );
    assert!(!e.was_over_budget && e.persistence.is_none(), "{e:?}");

    // The spoke cannot persist what it enforces: the failure and its error show.
    let mut changes = common::changes_listener(&hub).await;
    spoke
        .send_report(report(
            snap.revision,
            pb::SnapshotPersistence {
                state: "failing".into(),
                persisted_revision: 0,
                error: "configmaps is forbidden".into(),
                failing_revision: snap.revision,
                failing_since: Some(fleetgate_proto::time::to_timestamp(chrono::Utc::now())),
                ..Default::default()
            },
        ))
        .await;
    let c = cluster_when(&hub, "snapshotPersistence failing", |c| {
        c["snapshotPersistence"]["state"] == "failing"
    })
    .await;
    let p = &c["snapshotPersistence"];
    assert_eq!(p["error"], "configmaps is forbidden", "{p}");
    assert_eq!(p["failingRevision"], json!(snap.revision), "{p}");
    assert!(p["failingSince"].is_string(), "{p}");
    assert!(c.get("snapshotOverBudget").is_some(), "{c}");
    nudged(&mut changes).await;
    let e = snapshot_event(&mut watch, &mut sse, "persistence failing").await;
    let p = e.persistence.as_ref().expect("persistence");
    assert_eq!(
        (p.state.as_str(), p.error.as_str()),
        ("failing", "configmaps is forbidden")
    );
    assert!(e.previous_persistence_state.is_empty(), "{e:?}");
    assert!(e.was_over_budget && e.over_budget.is_some(), "{e:?}");

    // One that does not convert is left out: the stored one stays.
    spoke
        .send_report(report(
            snap.revision,
            pb::SnapshotPersistence {
                state: "sideways".into(),
                ..Default::default()
            },
        ))
        .await;
    within("the hub to take the second report", async {
        while grpc.metrics.reports_received.get() < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    })
    .await;

    // The spoke goes (the snapshots on the way down are past what the test client decodes)
    // and the gates go: the first snapshot of its next stream fits and clears the state.
    spoke.close();
    spoke.clean_end("the stream's end").await;
    for i in 0..n {
        let r = hub
            .call(
                Method::DELETE,
                &format!("/api/v1/gates/big-{i:02}"),
                Some(&hub.admin),
                None,
            )
            .await;
        assert!(r.status.is_success(), "{} {}", r.status, r.text);
    }
    let mut spoke = TestSpoke::connect(served.grpc.channel.clone(), &token, "a", 0)
        .await
        .unwrap();
    let fits = spoke.snapshot().await;
    assert!(
        !fits
            .overrides
            .iter()
            .any(|o| o.id == "snapshot-over-budget"),
        "{:?}",
        fits.overrides
    );
    let c = cluster_when(&hub, "snapshotOverBudget cleared", |c| {
        c.get("snapshotOverBudget").is_none()
    })
    .await;
    assert_eq!(c["snapshotPersistence"]["state"], "failing", "{c}");
    let e = snapshot_event(&mut watch, &mut sse, "within its budget again").await;
    assert!(e.was_over_budget && e.over_budget.is_none(), "{e:?}");
    assert_eq!(e.previous_persistence_state, "failing");

    // The spoke persists again: the failure clears.
    spoke
        .send_report(report(
            fits.revision,
            pb::SnapshotPersistence {
                state: "persisted".into(),
                persisted_revision: fits.revision,
                stored_bytes: 300,
                json_bytes: 900,
                config_maps: 1,
                ..Default::default()
            },
        ))
        .await;
    let c = cluster_when(&hub, "snapshotPersistence persisted", |c| {
        c["snapshotPersistence"]["state"] == "persisted"
    })
    .await;
    let p = &c["snapshotPersistence"];
    assert_eq!(p["persistedRevision"], json!(fits.revision), "{p}");
    assert_eq!(p["configMaps"], json!(1), "{p}");
    assert!(p.get("error").is_none(), "{p}");
    assert!(p.get("failingSince").is_none(), "{p}");
    let e = snapshot_event(&mut watch, &mut sse, "persisted again").await;
    assert_eq!(
        e.persistence.as_ref().map(|p| p.state.as_str()),
        Some("persisted")
    );
    assert_eq!(e.previous_persistence_state, "failing");

    // Another copy persisted (a new size): stored, not announced. The next event the
    // watchers get is the failure after it, from `persisted`.
    spoke
        .send_report(report(
            fits.revision,
            pb::SnapshotPersistence {
                state: "persisted".into(),
                persisted_revision: fits.revision,
                stored_bytes: 400,
                json_bytes: 1200,
                config_maps: 1,
                ..Default::default()
            },
        ))
        .await;
    cluster_when(&hub, "the new persisted copy", |c| {
        c["snapshotPersistence"]["storedBytes"] == 400
    })
    .await;
    // Two fleet views read after it was stored: had it been announced, it would be by now.
    let reads = served.replica.fleet.reads();
    within("two more fleet view reads", async {
        while served.replica.fleet.reads() < reads + 2 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    spoke
        .send_report(report(
            fits.revision,
            pb::SnapshotPersistence {
                state: "failing".into(),
                persisted_revision: fits.revision,
                error: "etcdserver: request is too large".into(),
                failing_revision: fits.revision,
                ..Default::default()
            },
        ))
        .await;
    let e = snapshot_event(&mut watch, &mut sse, "failing after the new copy").await;
    assert_eq!(e.previous_persistence_state, "persisted");
    assert_eq!(
        e.persistence.map(|p| p.error).as_deref(),
        Some("etcdserver: request is too large")
    );
    served.stop().await;
}
