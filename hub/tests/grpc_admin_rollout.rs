//! The admin API's rollout calls over a real socket: `GetRollout` and `RolloutCommand`
//! answer like REST, with roles, FAILED_PRECONDITION and INVALID_ARGUMENT naming the field.

mod common;
mod grpc_support;

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
