//! Bad `holdObjects` gates, table-driven, on both APIs: each is refused —
//! REST 422 with `error.field`, gRPC INVALID_ARGUMENT whose message starts
//! with the same field path — on create and on replace, and nothing is
//! written (no row, no audit entry, no revision bump).

mod common;
mod grpc_support;

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed};
use serde_json::{Value, json};
use tonic::Code;

/// A valid holdObjects gate for cluster `a`.
fn hold_gate() -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": "nginx-window"},
        "spec": {
            "clusters": {"names": ["a"]},
            "mode": "holdObjects",
            "targets": {"kinds": ["Kustomization"], "names": ["apps"]},
            "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}]},
            "default": "closed"
        }
    })
}

fn with(patch: impl FnOnce(&mut Value)) -> Value {
    let mut g = hold_gate();
    patch(&mut g);
    g
}

/// (what, manifest, field path the error must name).
fn cases() -> Vec<(&'static str, Value, &'static str)> {
    vec![
        (
            "HelmRelease target (helm-controller has no per-object hold)",
            with(|g| g["spec"]["targets"]["kinds"] = json!(["Kustomization", "HelmRelease"])),
            "spec.targets.kinds[1]",
        ),
        (
            "no spec.objects",
            with(|g| {
                g["spec"].as_object_mut().unwrap().remove("objects");
            }),
            "spec.objects",
        ),
        (
            "spec.objects with mode suspend",
            with(|g| g["spec"]["mode"] = json!("suspend")),
            "spec.objects",
        ),
        (
            "bad selector operator",
            with(
                |g| g["spec"]["objects"]["selector"] = json!({"matchExpressions": [{"key": "tier", "operator": "Like", "values": ["web"]}]}),
            ),
            "spec.objects.selector",
        ),
        (
            "In without values",
            with(|g| {
                g["spec"]["objects"]["selector"] =
                    json!({"matchExpressions": [{"key": "tier", "operator": "In"}]})
            }),
            "spec.objects.selector",
        ),
        (
            "apiVersion given as the group",
            with(|g| g["spec"]["objects"]["kinds"][0]["group"] = json!("apps/v1")),
            "spec.objects.kinds[0].group",
        ),
        (
            "empty kind",
            with(|g| g["spec"]["objects"]["kinds"][0]["kind"] = json!("")),
            "spec.objects.kinds[0].kind",
        ),
        (
            "duplicate kind",
            with(|g| {
                g["spec"]["objects"]["kinds"] = json!([
                    {"group": "apps", "kind": "Deployment"},
                    {"group": "apps", "kind": "Deployment"}
                ])
            }),
            "spec.objects.kinds[1]",
        ),
        (
            "empty namespace",
            with(|g| g["spec"]["objects"]["namespaces"] = json!([""])),
            "spec.objects.namespaces",
        ),
        (
            "unknown field in spec.objects",
            with(|g| g["spec"]["objects"]["kind"] = json!("Deployment")),
            "spec.objects",
        ),
    ]
}

#[tokio::test]
async fn bad_hold_objects_gates_name_the_field_on_rest_and_grpc() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    let r = hub
        .post_json("/api/v1/gates", &hub.admin, hold_gate())
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    let before = hub.fingerprint().await;

    for (what, manifest, field) in cases() {
        let mut new = manifest.clone();
        new["metadata"]["name"] = json!("other");
        // REST create and replace: 422 naming the field.
        for (method, uri, body) in [
            (Method::POST, "/api/v1/gates", &new),
            (Method::PUT, "/api/v1/gates/nginx-window", &manifest),
        ] {
            let r = hub
                .call(
                    method.clone(),
                    uri,
                    Some(&hub.admin),
                    Some(("application/json", body.to_string())),
                )
                .await;
            assert_eq!(
                r.status,
                StatusCode::UNPROCESSABLE_ENTITY,
                "{what} {method}: {}",
                r.text
            );
            let got = r.body["error"]["field"].as_str().unwrap_or_default();
            assert!(
                got.starts_with(field),
                "{what} {method}: field {got:?}, want {field}"
            );
        }
        // gRPC create and update: INVALID_ARGUMENT, the message starts with the field.
        let err = admin
            .create_gate(authed(
                pb::CreateGateRequest {
                    manifest: new.to_string(),
                    reason: "bad".into(),
                },
                &hub.admin,
            ))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{what}: {err:?}");
        assert!(err.message().starts_with(field), "{what}: {err:?}");
        let err = admin
            .update_gate(authed(
                pb::UpdateGateRequest {
                    name: "nginx-window".into(),
                    manifest: manifest.to_string(),
                    expected_version: 0,
                    reason: "bad".into(),
                },
                &hub.admin,
            ))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{what}: {err:?}");
        assert!(err.message().starts_with(field), "{what}: {err:?}");
    }
    assert_eq!(
        hub.fingerprint().await,
        before,
        "a refused gate wrote something"
    );
    grpc.stop().await;
}
