//! Status reports from the spoke: a report in parts is applied whole (an unfinished one
//! never, one beyond the object limit is INVALID_ARGUMENT); reports are visible through
//! REST and AdminService, replace the object set, never bump the fleet revision, and an
//! object the hub cannot store is left out and listed with its field.

use axum::http::StatusCode;
use fleetgate_proto::v1 as pb;
use serde_json::json;
use tonic::Code;

use crate::common::{Hub, business_hours};
use crate::grpc_support::{self, Grpc, TestSpoke, kustomization};
use crate::status_until;

#[tokio::test]
async fn a_report_in_parts_is_applied_whole_and_an_unfinished_one_never() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let rev = spoke.snapshot().await.revision;

    // Three parts: stored together, with the last part's clock offset.
    spoke
        .report_part(rev, vec![kustomization("apps", "a", false, &[])], 1, true)
        .await;
    spoke
        .report_part(rev, vec![kustomization("apps", "b", false, &[])], 2, true)
        .await;
    spoke
        .report_part(rev, vec![kustomization("apps", "c", false, &[])], 3, false)
        .await;
    let body = status_until(&hub, "c1", |b| b["cluster"]["clockOffsetMs"] == 3).await;
    let mut names: Vec<String> = body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c"], "{body}");

    // A first part, then the stream ends: once the hub has handled the end
    // (the cluster reads as disconnected) the unfinished report was dropped.
    spoke
        .report_part(rev, vec![kustomization("apps", "x", false, &[])], 99, true)
        .await;
    spoke.close();
    let body = status_until(&hub, "c1", |b| b["cluster"]["connected"] == false).await;
    assert_eq!(body["cluster"]["clockOffsetMs"], 3, "{body}");
    assert_eq!(body["objects"].as_array().unwrap().len(), 3, "{body}");

    // Parts together beyond the limit: INVALID_ARGUMENT naming the field.
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", rev)
        .await
        .unwrap();
    let max = fleetgate_proto::report_parts::MAX_REPORT_OBJECTS;
    let tiny = |i: usize| pb::ObjectStatus {
        kind: "Kustomization".into(),
        namespace: "a".into(),
        name: format!("k{i}"),
        ..Default::default()
    };
    // Two parts of max/2 (each well under the 4 MiB message limit), then one more.
    spoke
        .report_part(rev, (0..max / 2).map(tiny).collect(), 5, true)
        .await;
    spoke
        .report_part(rev, (max / 2..max).map(tiny).collect(), 5, true)
        .await;
    spoke
        .report_part(
            rev,
            vec![kustomization("apps", "one-more", false, &[])],
            5,
            false,
        )
        .await;
    let err = spoke.error().await;
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("report.objects"), "{err:?}");
    assert!(err.message().contains("100000"), "{err:?}");
    let body = hub.get("/api/v1/clusters/c1/status").await.body;
    assert_eq!(body["objects"].as_array().unwrap().len(), 3, "{body}");
    grpc.stop().await;
}

#[tokio::test]
async fn reports_are_visible_through_rest_and_replace_the_object_set() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    // web's newest revision failed its health check: Flux's Ready condition travels along.
    let failing = pb::ObjectStatus {
        ready: "False".into(),
        ready_reason: "HealthCheckFailed".into(),
        ready_message: "health check failed after 5m: Deployment/apps/web not ready".into(),
        stalled: true,
        generation: 3,
        observed_generation: 2,
        last_attempted_revision: "main@sha1:bbb".into(),
        ..kustomization("apps", "web", true, &["bh"])
    };
    spoke
        .report(
            s.revision,
            vec![failing, kustomization("apps", "api", false, &["bh"])],
        )
        .await;
    // (REST reads the cluster row and its objects in separate statements, so
    // wait until both show the report.)
    let body = status_until(&hub, "c1", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 2) && b["cluster"]["clockOffsetMs"] == 42
    })
    .await;
    assert_eq!(body["counts"]["held"], 1, "{body}");
    assert_eq!(body["cluster"]["connected"], true, "{body}");
    assert_eq!(body["cluster"]["spokeVersion"], "test-0.1.0", "{body}");
    assert_eq!(body["cluster"]["clockOffsetMs"], 42, "{body}");
    assert_eq!(
        body["cluster"]["connectedReplica"], "test-replica",
        "{body}"
    );
    let web = body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "web")
        .unwrap();
    assert_eq!(web["suspendedBy"], json!(["bh"]));
    assert_eq!(web["newestSourceRevision"], "main@sha1:bbb");
    assert_eq!(
        (&web["ready"], &web["readyReason"], &web["stalled"]),
        (&json!("False"), &json!("HealthCheckFailed"), &json!(true)),
        "{web}"
    );
    assert_eq!(
        web["readyMessage"],
        "health check failed after 5m: Deployment/apps/web not ready"
    );
    assert_eq!(
        (&web["generation"], &web["observedGeneration"]),
        (&json!(3), &json!(2))
    );
    assert_eq!(web["lastAttemptedRevision"], "main@sha1:bbb");
    assert_eq!(web["reportRevision"], s.revision);
    // The same through AdminService.
    let st = grpc
        .admin()
        .get_cluster_status(grpc_support::authed(
            pb::GetClusterStatusRequest { name: "c1".into() },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    let web = st.objects.iter().find(|o| o.name == "web").unwrap();
    assert_eq!(
        (web.ready.as_str(), web.ready_reason.as_str(), web.stalled),
        ("False", "HealthCheckFailed", true)
    );
    assert!(web.ready_message.contains("Deployment/apps/web not ready"));
    assert_eq!((web.generation, web.observed_generation), (3, 2));
    assert_eq!(web.last_attempted_revision, "main@sha1:bbb");
    assert_eq!(web.report_revision, s.revision);
    let api = st.objects.iter().find(|o| o.name == "api").unwrap();
    assert_eq!((api.ready.as_str(), api.stalled), ("True", false));

    // A report is the full set: the object missing from it is gone.
    spoke
        .report(
            s.revision,
            vec![kustomization("apps", "api", false, &["bh"])],
        )
        .await;
    let body = status_until(&hub, "c1", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    assert_eq!(body["counts"]["held"], 0, "{body}");
    // Reports never bump the fleet revision (they are not desired state).
    assert_eq!(hub.revision().await as u64, s.revision);

    // One object the hub cannot store is left out and listed with its field;
    // the rest of the report is stored and the stream stays open.
    let mut bad = kustomization("apps", "x", false, &[]);
    bad.kind = "Deployment".into();
    let mut odd = kustomization("apps", "api", false, &["bh"]);
    odd.ready = "False".into();
    odd.ready_message = "kustomize build failed: bad byte \u{0} here".into();
    spoke.report(s.revision, vec![odd, bad]).await;
    let body = status_until(&hub, "c1", |b| b["reportProblems"]["total"] == 2).await;
    let problems = &body["reportProblems"]["items"];
    assert_eq!(
        problems[0]["field"], "report.objects[0].ready_message",
        "{body}"
    );
    assert_eq!(problems[0]["action"], "replaced", "{body}");
    assert_eq!(problems[1]["field"], "report.objects[1].kind", "{body}");
    assert_eq!(problems[1]["action"], "dropped", "{body}");
    assert_eq!(body["objects"].as_array().unwrap().len(), 1);
    assert_eq!(
        body["objects"][0]["readyMessage"],
        "kustomize build failed: bad byte \u{FFFD} here"
    );
    assert_eq!(body["cluster"]["connected"], true, "{body}");
    grpc.stop().await;
}
