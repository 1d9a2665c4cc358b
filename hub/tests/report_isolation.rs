//! Reports are the clusters' own data, never refused for one object's text
//! (issue 40):
//! - one flush holding, among many good reports, two the database refuses
//!   (U+0000 that bypassed the per-object repair, a key past the index size
//!   limit) writes every other cluster's report in that same flush, records
//!   the refusal on the two clusters, counts it, and the next good report
//!   clears it;
//! - over gRPC, a report whose object has U+0000 in its Ready message is
//!   stored with U+FFFD, its other objects keep updating, and the problem is
//!   listed in the cluster's REST and gRPC status, announced on WatchFleet and
//!   the dashboard's event stream (`reportProblems`) and counted in its grid,
//!   and a clean report clears it everywhere;
//! - AdminService calls with U+0000 in any field are INVALID_ARGUMENT naming
//!   the field, and write nothing.

mod common;
mod grpc_support;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::Hub;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::db::reports::ReportedObject;
use fleetgate_hub::grpc::GrpcOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::service::reports::Assembled;
use fleetgate_hub::{AppState, app};
use fleetgate_proto::v1 as pb;
use grpc_support::served::{Served, next_event};
use grpc_support::{Grpc, authed, kustomization, within};
use serde_json::{Value, json};
use tonic::Code;
use tower::ServiceExt as _;

fn apps(message: &str) -> ReportedObject {
    ReportedObject {
        kind: "Kustomization".into(),
        namespace: "flux-system".into(),
        name: "apps".into(),
        ready: Some("True".into()),
        ready_message: Some(message.into()),
        ..ReportedObject::default()
    }
}

/// `n` pseudo-random letters: PostgreSQL cannot compress them into an
/// index entry (its limit is ~2.7 KB).
fn incompressible(n: usize) -> String {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect()
}

async fn stored(hub: &Hub) -> Vec<(String, String)> {
    sqlx::query_as("select cluster, ready_message from object_status order by cluster, name")
        .fetch_all(&hub.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn one_refused_report_does_not_hold_up_its_batch() {
    let hub = Hub::new().await;
    let names: Vec<String> = (0..40).map(|i| format!("c{i:02}")).collect();
    for n in &names {
        hub.register(n, json!({})).await;
    }
    let replica = Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        GrpcOptions::default(),
    );
    let reports = &replica.reports;
    for (i, n) in names.iter().enumerate() {
        // `submit` takes checked reports: these two bypass the per-object
        // repair, as a bug or a new field would.
        let object = match i {
            7 => apps("bad \u{0} byte"),
            19 => ReportedObject {
                name: incompressible(4000),
                ..apps("too long a key")
            },
            _ => apps(&format!("applied {n}")),
        };
        let report = Assembled {
            objects: vec![object],
            ..Assembled::default()
        };
        reports.submit(n, 1, report, 0);
    }
    assert_eq!(reports.backlog(), 40);
    reports.flush_all().await;
    assert_eq!(reports.backlog(), 0, "the refused reports are set aside");
    let rows = stored(&hub).await;
    let want: Vec<(String, String)> = (names.iter().enumerate())
        .filter(|(i, _)| ![7, 19].contains(i))
        .map(|(_, n)| (n.clone(), format!("applied {n}")))
        .collect();
    assert_eq!(rows, want, "every other cluster's report in the same flush");
    for bad in ["c07", "c19"] {
        let st = hub
            .get(&format!("/api/v1/clusters/{bad}/status"))
            .await
            .body;
        let p = &st["reportProblems"];
        assert!(
            p["writeError"].as_str().is_some_and(|e| !e.is_empty()),
            "{st}"
        );
        assert!(p["writeErrorAt"].is_string(), "{st}");
        assert_eq!(st["objects"], json!([]), "{st}");
    }
    let good = hub.get("/api/v1/clusters/c08/status").await.body;
    assert_eq!(good["reportProblems"]["writeError"], Value::Null, "{good}");
    let metrics = metrics(&replica).await;
    assert!(
        metrics.contains("fleetgate_hub_grpc_report_write_failures_total 2"),
        "{metrics}"
    );

    // The cluster's next report is stored and clears the error.
    let report = Assembled {
        objects: vec![apps("applied again")],
        ..Assembled::default()
    };
    reports.submit("c07", 2, report, 0);
    reports.flush_all().await;
    let st = hub.get("/api/v1/clusters/c07/status").await.body;
    assert_eq!(st["reportProblems"]["writeError"], Value::Null, "{st}");
    assert_eq!(st["objects"][0]["readyMessage"], "applied again", "{st}");
}

async fn metrics(replica: &Replica) -> String {
    let resp = app(AppState::from_replica(replica.clone()))
        .oneshot(Request::get("/metrics").body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The next `reportProblems` WatchFleet event that satisfies `want`.
async fn problems_event(
    s: &mut tonic::Streaming<pb::FleetEvent>,
    want: impl Fn(&pb::ReportProblemsChanged) -> bool,
) -> pb::ReportProblemsChanged {
    next_event(s, "a ReportProblemsChanged event", |e| match e.event {
        Some(pb::fleet_event::Event::ReportProblems(p)) if want(&p) => Some(p),
        _ => None,
    })
    .await
}

/// Polls the cluster's status until `done` holds (bounded).
async fn status_until(hub: &Hub, cluster: &str, done: impl Fn(&Value) -> bool) -> Value {
    within("the cluster's status to reflect the report", async {
        loop {
            let r = hub.get(&format!("/api/v1/clusters/{cluster}/status")).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            if done(&r.body) {
                return r.body;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn nul_in_a_ready_message_is_stored_replaced_and_listed() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    hub.simple_gate("g", &["c1"], "open").await;
    let served = Served::of(hub.service.clone()).await;
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;
    let mut spoke = served.spoke(&token, "c1").await;
    let rev = spoke.snapshot().await.revision;
    let mut odd = kustomization("flux-system", "odd", false, &["g"]);
    odd.ready = "False".into();
    odd.ready_message = "kustomize build failed: bad byte \u{0} here".into();
    let mut other = kustomization("flux-system", "other", false, &["g"]);
    spoke.report(rev, vec![odd.clone(), other.clone()]).await;
    let body = status_until(&hub, "c1", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 2)
    })
    .await;
    let object = |b: &Value, name: &str| {
        b["objects"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing: {b}"))
    };
    assert_eq!(
        object(&body, "odd")["readyMessage"],
        "kustomize build failed: bad byte \u{FFFD} here"
    );
    assert_eq!(object(&body, "odd")["ready"], "False");
    let p = &body["reportProblems"];
    assert_eq!(p["total"], 1, "{body}");
    assert_eq!(p["items"][0]["field"], "report.objects[0].ready_message");
    assert_eq!(p["items"][0]["object"], "Kustomization flux-system/odd");
    assert_eq!(p["items"][0]["action"], "replaced");

    // The other object keeps updating.
    other.ready_message = "Applied revision: main@sha1:bbb".into();
    spoke.report(rev, vec![odd, other.clone()]).await;
    let body = status_until(&hub, "c1", |b| {
        object(b, "other")["readyMessage"] == "Applied revision: main@sha1:bbb"
    })
    .await;
    assert_eq!(body["reportProblems"]["total"], 1, "{body}");

    // gRPC shows the same.
    let st = served.cluster_status("c1", &hub.viewer).await;
    let p = st.report_problems.unwrap();
    assert_eq!((p.total, p.items.len()), (1, 1));
    assert_eq!(p.items[0].field, "report.objects[0].ready_message");

    // Announced on WatchFleet and the dashboard's stream, counted in its grid.
    let e = problems_event(&mut watch, |p| p.total == 1).await;
    assert_eq!(
        (e.cluster.as_str(), e.previous, e.write_error.as_str()),
        ("c1", 0, "")
    );
    sse.next("reportProblems", |d| {
        d["cluster"] == "c1" && d["total"] == 1 && d["previous"] == 0
    })
    .await;
    let grid = hub.get("/api/v1/dashboard/fleet").await;
    assert_eq!(
        grid.body["clusters"][0]["reportProblems"], 1,
        "{}",
        grid.text
    );

    // A clean report clears it.
    let mut fixed = kustomization("flux-system", "odd", false, &["g"]);
    fixed.ready_message = "Applied revision: main@sha1:ccc".into();
    spoke.report(rev, vec![fixed, other]).await;
    let e = problems_event(&mut watch, |p| p.total == 0).await;
    assert_eq!((e.cluster.as_str(), e.previous), ("c1", 1));
    sse.next("reportProblems", |d| {
        d["cluster"] == "c1" && d["total"] == 0 && d["previous"] == 1
    })
    .await;
    let grid = hub.get("/api/v1/dashboard/fleet").await;
    assert_eq!(
        grid.body["clusters"][0]["reportProblems"], 0,
        "{}",
        grid.text
    );
    served.stop().await;
}

#[tokio::test]
async fn admin_calls_with_nul_are_invalid_argument_naming_the_field() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.simple_gate("g", &["a"], "closed").await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    let before = hub.fingerprint().await;
    let mut manifest = common::simple_gate("g2", &["a"], "closed");
    manifest["spec"]["description"] = json!("a\u{0}b");
    let err = admin
        .create_gate(authed(
            pb::CreateGateRequest {
                manifest: manifest.to_string(),
                reason: "r".into(),
            },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().starts_with("spec.description:"), "{err:?}");
    let err = admin
        .create_override(authed(
            pb::CreateOverrideRequest {
                gate: "g".into(),
                state: "open".into(),
                reason: "x\u{0}y".into(),
                ..Default::default()
            },
            &hub.operator,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().starts_with("reason:"), "{err:?}");
    let err = admin
        .register_cluster(authed(
            pb::RegisterClusterRequest {
                name: "b".into(),
                labels: [("env".to_string(), "p\u{0}".to_string())].into(),
                reason: String::new(),
                ..Default::default()
            },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().starts_with("labels[\"env\"]:"), "{err:?}");
    let err = admin
        .list_audit(authed(
            pb::ListAuditRequest {
                actor: "a\u{0}b".into(),
                ..Default::default()
            },
            &hub.viewer,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().starts_with("actor:"), "{err:?}");
    let err = admin
        .get_gate(authed(
            pb::GetGateRequest {
                name: "\u{0}".into(),
            },
            &hub.viewer,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert_eq!(hub.fingerprint().await, before, "a refused call wrote");
    grpc.stop().await;
}
