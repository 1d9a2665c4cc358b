//! A failed wave: it halts the rollout (`onFailure: halt` keeps the canary open, `close`
//! recloses it) until resumed; `failureGrace` is validated against `healthTimeout`; a
//! halted rollout has no health deadline; the failing cluster is marked on every fleet
//! surface (REST, dashboard, cluster status, gRPC), also when `maxFailures` tolerates it.

use axum::http::StatusCode;
use serde_json::json;

use crate::grpc_support;
use crate::rollout_support::{self, THREE_WAVES, fleet};

#[tokio::test]
async fn a_failed_wave_halts_and_resume_continues() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    // c1's spoke is disconnected: unknown, never healthy; failed after healthTimeout.
    f.advance(29);
    assert!(f.step().await.is_empty());
    assert_eq!(
        f.status().await["waves"][0]["clusters"][0]["health"],
        "unknown"
    );
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let s = f.status().await;
    assert_eq!(s["state"], "halted");
    assert!(s["detail"].as_str().unwrap().contains("c1"), "{s}");
    assert_eq!(s["waves"][0]["state"], "failed");
    assert_eq!(
        f.gate_state("c2").await.1,
        "waiting for rollout wave 2 (rollout halted)"
    );
    // Halt: the failed canary stays open, the other waves stay closed.
    assert_eq!(f.released().await, ["c1"]);
    f.advance(60);
    assert!(f.step().await.is_empty());
    assert_eq!(f.released().await, ["c1"]);
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Resume judges the wave afresh; a good report passes it.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "running");
    f.report(&["c1"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    assert_eq!(f.audit("rollout.resume").await, 1);
    assert_eq!(f.audit("rollout.halt").await, 1);
}

#[tokio::test]
async fn on_failure_close_recloses_the_failed_wave() {
    let f = fleet("    onFailure: close\n", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.advance(30);
    assert_eq!(f.step().await, ["rollout.halt"]);
    assert!(
        f.released().await.is_empty(),
        "the failed wave is closed again"
    );
    // Resume releases it again.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn failure_grace_is_a_validated_rollout_setting() {
    let f = fleet("    failureGrace: 5m\n", THREE_WAVES).await;
    // Too long for the health timeout: refused naming the field, nothing changed.
    let before = f.hub.audit_count().await;
    let bad =
        rollout_support::gate("    failureGrace: 30m\n", THREE_WAVES).replace("waves}", "waves2}");
    let r = f.hub.create_gate_yaml(&bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "spec.rollout.failureGrace");
    assert_eq!(
        r.body["error"]["message"],
        "must be shorter than healthTimeout (30m), got '30m'"
    );
    assert_eq!(f.hub.audit_count().await, before);
    // The stored gate keeps it, and the rollout runs with it.
    let r = f.hub.get("/api/v1/gates/waves").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.body["manifest"]["spec"]["rollout"]["failureGrace"], "5m",
        "{}",
        r.text
    );
}

#[tokio::test]
async fn a_halted_rollout_has_no_health_deadline() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    assert!(f.status().await["healthDeadline"].is_string());
    f.advance(30);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let s = f.status().await;
    assert_eq!(s["state"], "halted");
    assert!(s["healthDeadline"].is_null(), "{s}");
}

/// Issue 32 item 6: the cluster whose wave failed stands out on every fleet surface — the
/// fleet status (REST), the dashboard grid's cell, the cluster status and gRPC's fleet
/// status — with the failing object and its Ready message, until an operator resumes.
#[tokio::test]
async fn a_failed_canary_is_marked_on_every_fleet_surface_until_resumed() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    let why = "health check failed after 30s: Deployment/apps/web not ready";
    f.report_failing("c1", why).await;
    assert!(f.step().await.is_empty(), "failing, within failureGrace");
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let detail = format!("Kustomization flux-system/apps: Ready=False: {why}");

    let fleet = f.hub.get("/api/v1/status/clusters").await;
    assert_eq!(fleet.status, StatusCode::OK, "{}", fleet.text);
    let brief = |name: &str| {
        fleet.body["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cluster"]["name"] == name)
            .unwrap()["gates"][0]
            .clone()
    };
    let c1 = brief("c1");
    assert_eq!(c1["state"], "open", "a halt keeps the canary open: {c1}");
    let failure = &c1["rolloutFailure"];
    assert_eq!(failure["detail"], detail.as_str(), "{c1}");
    assert_eq!(failure["state"], "halted");
    assert_eq!(
        (failure["wave"].clone(), failure["waveName"].clone()),
        (json!(1), json!("canary"))
    );
    assert_eq!(failure["failedAt"], "2026-11-25T13:01:00Z");
    assert!(
        brief("c2").get("rolloutFailure").is_none(),
        "{}",
        brief("c2")
    );
    assert_eq!(fleet.body["summary"]["clusters"]["rolloutFailed"], 1);
    let listed = &fleet.body["summary"]["rolloutFailures"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(
        (listed[0]["cluster"].clone(), listed[0]["gate"].clone()),
        (json!("c1"), json!("waves"))
    );

    let grid = f.hub.get("/api/v1/dashboard/fleet").await;
    assert_eq!(grid.status, StatusCode::OK, "{}", grid.text);
    let cell = |name: &str| {
        grid.body["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["cells"][0]
            .clone()
    };
    assert_eq!(cell("c1")["rolloutFailure"]["detail"], detail.as_str());
    assert!(cell("c2").get("rolloutFailure").is_none());

    let status = f.hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(
        status.body["gates"][0]["rolloutFailure"]["detail"],
        detail.as_str()
    );

    // gRPC carries the same.
    let grpc = grpc_support::Grpc::start(f.hub.service.clone(), grpc_support::Grpc::opts()).await;
    let summary = grpc
        .admin()
        .get_fleet_status(grpc_support::authed(
            fleetgate_proto::v1::GetFleetStatusRequest {},
            &f.hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(summary.clusters.unwrap().rollout_failed, 1);
    let failure = &summary.rollout_failures[0];
    assert_eq!(
        (failure.cluster.as_str(), failure.gate.as_str()),
        ("c1", "waves")
    );
    assert_eq!((failure.wave, failure.state.as_str()), (1, "halted"));
    assert_eq!(failure.detail, detail);

    // Resume judges the wave afresh: the mark goes.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let fleet = f.hub.get("/api/v1/status/clusters").await;
    assert_eq!(
        fleet.body["summary"]["clusters"]["rolloutFailed"], 0,
        "{}",
        fleet.text
    );
    assert!(
        fleet.body["clusters"][0]["gates"][0]
            .get("rolloutFailure")
            .is_none()
    );
}

/// A failure `maxFailures` tolerates does not halt the rollout, but the cluster is marked.
#[tokio::test]
async fn a_tolerated_failure_is_marked_while_the_rollout_goes_on() {
    let f = fleet("    maxFailures: 1\n    failureGrace: 1m\n", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.report_failing("c1", "boom").await;
    f.step().await;
    f.advance(1);
    assert_eq!(
        f.step().await,
        ["rollout.healthy"],
        "a tolerated failure settles the wave"
    );
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.release"]);
    let fleet = f.hub.get("/api/v1/status/clusters").await;
    let c1 = &fleet.body["clusters"][0];
    assert_eq!(c1["cluster"]["name"], "c1");
    let failure = &c1["gates"][0]["rolloutFailure"];
    assert_eq!(failure["state"], "running", "{c1}");
    assert_eq!(
        failure["detail"],
        "Kustomization flux-system/apps: Ready=False: boom"
    );
}
