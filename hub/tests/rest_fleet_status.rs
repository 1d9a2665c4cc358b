//! `GET /api/v1/status/clusters`: the fleet in one response agrees with the
//! per-cluster status of every cluster (gate states, reasons, next
//! transitions, held counts per gate, when the cluster's own state next
//! changes), honours overrides and `selector`, and rejects bad query input
//! naming the field.

mod common;

use axum::http::StatusCode;
use chrono::Utc;
use common::{Hub, business_hours};
use fleetgate_hub::db::report_batch::write_report;
use fleetgate_hub::db::reports::{ClusterReport, ReportedObject};
use serde_json::{Value, json};

fn held_object(name: &str, gates: &[&str]) -> ReportedObject {
    ReportedObject {
        kind: "Kustomization".into(),
        namespace: "apps".into(),
        name: name.into(),
        suspended: true,
        suspended_by: gates.iter().map(|g| g.to_string()).collect(),
        gates: gates.iter().map(|g| g.to_string()).collect(),
        last_applied_revision: Some("main@sha1:aaa".into()),
        newest_source_revision: Some("main@sha1:bbb".into()),
        held: true,
        suspended_by_human: false,
        ignored: false,
        ready: Some("True".into()),
        ready_reason: Some("ReconciliationSucceeded".into()),
        ready_message: Some("Applied revision: main@sha1:aaa".into()),
        generation: Some(1),
        observed_generation: Some(1),
        last_attempted_revision: Some("main@sha1:aaa".into()),
        ..ReportedObject::default()
    }
}

/// The fields both views share: a cluster's gates without objects.
fn comparable(c: &Value) -> Value {
    let gates: Vec<Value> = c["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            json!({"gate": g["gate"], "state": g["state"], "reason": g["reason"],
                "nextTransition": g["nextTransition"], "held": g["held"]})
        })
        .collect();
    json!({"name": c["cluster"]["name"], "connected": c["cluster"]["connected"],
        "open": c["open"], "closedBy": c["closedBy"], "nextTransition": c["nextTransition"],
        "gates": gates, "counts": c["counts"]})
}

#[tokio::test]
async fn one_response_matches_every_clusters_own_status() {
    let hub = Hub::new().await;
    for (name, env) in [("p1", "prod"), ("p2", "prod"), ("d1", "dev")] {
        hub.register(name, json!({"env": env})).await;
    }
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub.simple_gate("approval", &["p1", "d1"], "closed").await;
    let r = hub
        .post_json(
            "/api/v1/gates/approval/open",
            &hub.operator,
            json!({"for": "1h", "reason": "CHG-7", "clusters": {"names": ["d1"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let mut conn = hub.pool.acquire().await.unwrap();
    let report = ClusterReport {
        cluster: "p1".into(),
        objects: vec![
            held_object("a", &["bh", "approval"]),
            // Flux failed to apply b's newest revision: its health comes with the status.
            ReportedObject {
                ready: Some("False".into()),
                ready_reason: Some("ReconciliationFailed".into()),
                ready_message: Some("Deployment/apps/b dry-run failed".into()),
                stalled: true,
                generation: Some(4),
                observed_generation: Some(3),
                last_attempted_revision: Some("main@sha1:bbb".into()),
                ..held_object("b", &["approval"])
            },
            // Annotated fleetgate.io/ignore: targeted, never governed, not counted.
            ReportedObject {
                suspended: false,
                suspended_by: vec![],
                held: false,
                ignored: true,
                ..held_object("own", &["approval"])
            },
        ],
        revision: 7,
        local_gates: vec![],
        problems: vec![],
        inventory: None,
        held_objects: vec![],
        clock_offset_ms: 0,
        received_at: Utc::now(),
    };
    assert!(write_report(&mut conn, &report).await.unwrap());
    drop(conn);

    let r = hub.get("/api/v1/status/clusters").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let fleet = r.body;
    assert_eq!(fleet["summary"]["clusters"]["total"], 3);
    let rows = fleet["clusters"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|c| c["cluster"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["d1", "p1", "p2"]);
    for row in rows {
        let name = row["cluster"]["name"].as_str().unwrap();
        let own = hub.get(&format!("/api/v1/clusters/{name}/status")).await;
        assert_eq!(own.status, StatusCode::OK, "{}", own.text);
        assert_eq!(comparable(row), comparable(&own.body), "{name}");
        assert!(row.get("objects").is_none(), "no objects in the fleet view");
    }
    // Spot checks on what the comparison covers.
    let p1 = &rows[1];
    // t0 is a Wednesday noon: business hours are open.
    assert_eq!(p1["closedBy"], json!(["approval"]));
    assert_eq!(p1["counts"]["held"], 2);
    assert_eq!(
        p1["counts"]["governed"], 2,
        "the ignored object is not governed"
    );
    let own = hub.get("/api/v1/clusters/p1/status").await.body;
    let ignored: Vec<&Value> = own["objects"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["ignored"] == true)
        .collect();
    assert_eq!(ignored.len(), 1, "{own}");
    let b = own["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "b")
        .unwrap();
    assert_eq!(
        (
            &b["ready"],
            &b["readyReason"],
            &b["readyMessage"],
            &b["stalled"]
        ),
        (
            &json!("False"),
            &json!("ReconciliationFailed"),
            &json!("Deployment/apps/b dry-run failed"),
            &json!(true)
        ),
        "{b}"
    );
    assert_eq!(
        (
            &b["generation"],
            &b["observedGeneration"],
            &b["lastAttemptedRevision"]
        ),
        (&json!(4), &json!(3), &json!("main@sha1:bbb"))
    );
    assert_eq!(b["reportRevision"], 7);
    assert_eq!(ignored[0]["name"], "own");
    let held: Vec<(&str, i64)> = p1["gates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| (g["gate"].as_str().unwrap(), g["held"].as_i64().unwrap()))
        .collect();
    assert_eq!(held, [("approval", 2), ("bh", 1)]);
    // "Next change" is the cluster's: `approval` has no windows and keeps p1 closed, so there
    // is none, although business hours close on Thursday.
    assert_eq!(p1["nextTransition"], Value::Null, "{p1}");
    assert!(p1["gates"][1]["nextTransition"].is_string(), "{p1}");
    // p2 has only business hours: the cluster closes when they do.
    assert_eq!(
        rows[2]["nextTransition"],
        rows[2]["gates"][0]["nextTransition"]
    );
    assert!(rows[2]["nextTransition"].is_string());
    let d1 = &rows[0];
    assert_eq!(d1["open"], true);
    // d1 is open by CHG-7's hour: it closes when that ends.
    assert_eq!(
        d1["nextTransition"], d1["gates"][0]["nextTransition"],
        "{d1}"
    );
    assert!(d1["nextTransition"].is_string(), "{d1}");
    assert!(
        d1["gates"][0]["reason"].as_str().unwrap().contains("CHG-7"),
        "{d1}"
    );

    let prod = hub.get("/api/v1/status/clusters?selector=env%3Dprod").await;
    assert_eq!(prod.status, StatusCode::OK, "{}", prod.text);
    assert_eq!(prod.body["clusters"].as_array().unwrap().len(), 2);
    assert_eq!(
        prod.body["summary"]["clusters"]["total"], 3,
        "summary is fleet-wide"
    );

    let bad = hub
        .get("/api/v1/status/clusters?selector=env%20in%20(")
        .await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.text);
    assert_eq!(bad.body["error"]["field"], "selector");
    let unknown = hub.get("/api/v1/status/clusters?bogus=3").await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.text);
}
