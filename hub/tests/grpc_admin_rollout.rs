//! The admin API's rollout calls over a real socket: `GetRollout` and `RolloutCommand`
//! answer like REST, with roles, FAILED_PRECONDITION and INVALID_ARGUMENT naming the field.
//! The impact preview of a rollout gate names each cluster's wave on REST and gRPC alike.

mod common;
mod grpc_support;
mod rollout_support;

use common::Hub;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed};
use serde_json::json;

/// `GetRollout` and `RolloutCommand`: the same rollout as REST, roles decided once (a viewer
/// cannot pause), a command the state refuses is FAILED_PRECONDITION, an unknown one
/// INVALID_ARGUMENT naming the field.
#[tokio::test]
async fn rollout_status_and_commands() {
    let hub = Hub::new().await;
    hub.register("c1", json!({"env": "prod"})).await;
    hub.register("c2", json!({"env": "prod"})).await;
    let r = hub
        .create_gate_yaml(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: waves}\nspec:\n  clusters: {names: [c1, c2]}\n  rollout:\n    waves: [{clusters: {names: [c1]}}, {}]\n",
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::CREATED, "{}", r.text);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    let get = || {
        authed(
            pb::GetRolloutRequest {
                gate: "waves".into(),
            },
            &hub.viewer,
        )
    };
    // The replica's rollout driver steps on its first tick, racing this test: ask about a gate
    // that has no rollout (none exists) for NOT_FOUND instead of "waves" before a step.
    let missing = authed(
        pb::GetRolloutRequest {
            gate: "missing".into(),
        },
        &hub.viewer,
    );
    let err = admin.get_rollout(missing).await.unwrap_err();
    assert_eq!(err.code(), tonic::Code::NotFound);
    hub.service.step_rollouts().await.unwrap();
    let info = admin.get_rollout(get()).await.unwrap().into_inner();
    assert_eq!(info.state, "running");
    assert_eq!(info.waves.len(), 2);
    assert_eq!(info.waves[0].clusters[0].name, "c1");
    assert!(info.waves[0].clusters[0].released_at.is_some());
    assert_eq!(info.waves[1].clusters[0].released_at, None);

    let cmd = |command: &str, token: &str| {
        authed(
            pb::RolloutCommandRequest {
                gate: "waves".into(),
                command: command.into(),
            },
            token,
        )
    };
    let err = admin
        .rollout_command(cmd("pause", &hub.viewer))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::PermissionDenied);
    let err = admin
        .rollout_command(cmd("skip", &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().starts_with("command"), "{err:?}");
    let info = admin
        .rollout_command(cmd("pause", &hub.operator))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.state, "paused");
    let err = admin
        .rollout_command(cmd("release-next", &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::FailedPrecondition);
    grpc.stop().await;
}

/// A dry-run replace of a rollout gate with other waves: REST and gRPC both name each
/// cluster's wave as the hub assigns it (a named canary, then a share of the rest in
/// name order, then the remainder) and each wave's estimated release at the next opening,
/// one soak apart; nothing is written.
#[tokio::test]
async fn the_dry_run_previews_a_rollout_gate_s_waves() {
    let f = rollout_support::fleet("", rollout_support::THREE_WAVES).await;
    let hub = &f.hub;
    let yaml = rollout_support::gate(
        "",
        "      - {name: canary, clusters: {names: [c6]}}\n      - {name: early, percent: 50, approval: true}\n      - {name: rest}\n",
    );
    let audit = hub.audit_count().await;
    let r = hub
        .call(
            axum::http::Method::PUT,
            "/api/v1/gates/waves?dryRun=true",
            Some(&hub.admin),
            Some(("application/yaml", yaml.clone())),
        )
        .await;
    assert_eq!(r.status, axum::http::StatusCode::OK, "{}", r.text);
    let waves: Vec<(u64, String, Vec<String>, String, bool)> = r.body["waves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["wave"].as_u64().unwrap(),
                w["name"].as_str().unwrap().to_string(),
                serde_json::from_value(w["clusters"].clone()).unwrap(),
                w["estimatedReleaseAt"].as_str().unwrap().to_string(),
                w["approval"].as_bool().unwrap(),
            )
        })
        .collect();
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        waves,
        [
            (
                1,
                "canary".into(),
                names(&["c6"]),
                "2026-11-25T13:00:00Z".into(),
                false
            ),
            (
                2,
                "early".into(),
                names(&["c1", "c2", "c3"]),
                "2026-11-25T13:10:00Z".into(),
                true
            ),
            (
                3,
                "rest".into(),
                names(&["c4", "c5"]),
                "2026-11-25T13:20:00Z".into(),
                false
            ),
        ],
        "{}",
        r.text
    );
    let per_cluster: Vec<(String, u64, String)> = r.body["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["cluster"].as_str().unwrap().to_string(),
                c["wave"].as_u64().unwrap(),
                c["waveName"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(per_cluster[0], ("c1".into(), 2, "early".into()));
    assert_eq!(per_cluster[5], ("c6".into(), 1, "canary".into()));
    assert_eq!(hub.audit_count().await, audit, "a dry run audits nothing");

    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let impact = grpc
        .admin()
        .preview_gate_change(authed(
            pb::PreviewGateChangeRequest {
                manifest: yaml,
                name: "waves".into(),
                expected_version: 0,
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    let grpc_waves: Vec<(u32, String, Vec<String>, i64, bool)> = impact
        .waves
        .iter()
        .map(|w| {
            (
                w.wave,
                w.name.clone(),
                w.clusters.clone(),
                w.estimated_release_at.as_ref().unwrap().seconds,
                w.approval,
            )
        })
        .collect();
    let at = |m: i64| (common::t0() + chrono::Duration::minutes(m)).timestamp();
    assert_eq!(
        grpc_waves,
        [
            (1, "canary".into(), names(&["c6"]), at(60), false),
            (2, "early".into(), names(&["c1", "c2", "c3"]), at(70), true),
            (3, "rest".into(), names(&["c4", "c5"]), at(80), false),
        ]
    );
    let c6 = impact.clusters.iter().find(|c| c.cluster == "c6").unwrap();
    assert_eq!((c6.wave, c6.wave_name.as_str()), (1, "canary"));
    assert_eq!(hub.audit_count().await, audit);
    grpc.stop().await;
}
