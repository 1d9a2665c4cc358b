//! Admission comes last, as in Kubernetes: authentication, authorization,
//! validation, then admission. A refused caller (the requester approving their own
//! request, an operator outside `spec.approval.from`, an override outside the caller's
//! clusters) or an invalid request never reaches the admission webhook: a real HTTP
//! receiver counts what it is sent, and it must hear nothing.

mod common;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::post;
use axum::{Json, Router};
use common::Hub;
use fleetgate_api_types::AccessScope;
use fleetgate_api_types::admission::AdmissionRequest;
use fleetgate_hub::egress::EgressPolicy;
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::ClusterScope;
use serde_json::{Value, json};

/// Calls the receiver got, by operation.
#[derive(Clone, Default)]
struct Calls {
    override_: Arc<AtomicUsize>,
    approval: Arc<AtomicUsize>,
}

/// A change system that allows overrides and denies every approval (so an approval
/// that reached it would also leave an `admission.deny` audit entry), counting calls.
async fn receiver() -> (String, Calls) {
    let calls = Calls::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = Router::new()
        .route(
            "/admit",
            post(
                |State(calls): State<Calls>, Json(req): Json<AdmissionRequest>| async move {
                    if req.operation == "approval" {
                        calls.approval.fetch_add(1, Ordering::SeqCst);
                        (
                            StatusCode::FORBIDDEN,
                            Json(json!({"message": "approval denied by the change system"})),
                        )
                    } else {
                        calls.override_.fetch_add(1, Ordering::SeqCst);
                        (StatusCode::OK, Json(json!({"allowed": true})))
                    }
                },
            ),
        )
        .with_state(calls.clone());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}/admit"), calls)
}

/// Clusters a, b (prod), c (dev); gate `g` on a and b with `approval`, and the
/// receiver configured for overrides and approvals.
async fn hub(approval: Option<Value>) -> (Hub, Calls) {
    let base = Hub::new().await;
    let policy = EgressPolicy::default().allow_private(true).allow_http(true);
    let service = base.service.clone().with_admission_egress(policy);
    let app = fleetgate_hub::app(common::state(&service));
    let hub = Hub {
        app,
        service,
        ..base
    };
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "prod"})).await;
    hub.register("c", json!({"env": "dev"})).await;
    let mut gate = common::simple_gate("g", &["a", "b"], "closed");
    if let Some(a) = approval {
        gate["spec"]["approval"] = a;
    }
    let r = hub.post_json("/api/v1/gates", &hub.admin, gate).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (url, calls) = receiver().await;
    let spec = json!({"url": url, "operations": ["override", "approval"]});
    let r = hub
        .call(
            axum::http::Method::PUT,
            "/api/v1/admission-webhooks/cms",
            Some(&hub.admin),
            Some(("application/json", spec.to_string())),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    (hub, calls)
}

async fn token(hub: &Hub, name: &str, role: &str, scope: Option<AccessScope>) -> String {
    let root = Actor::new("bootstrap-admin", Role::Admin);
    let req = CreateToken {
        name: name.into(),
        role: role.into(),
        scope,
    };
    hub.service
        .create_token(&root, req, None)
        .await
        .unwrap()
        .secret
}

async fn admission_audits(hub: &Hub) -> i64 {
    sqlx::query_scalar("select count(*) from audit_log where action like 'admission.%'")
        .fetch_one(&hub.pool)
        .await
        .unwrap()
}

async fn overrides(hub: &Hub) -> i64 {
    sqlx::query_scalar("select count(*) from overrides")
        .fetch_one(&hub.pool)
        .await
        .unwrap()
}

/// A pending request by `hub.operator` (the override admission call allowed it).
async fn pending(hub: &Hub, calls: &Calls) -> String {
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(calls.override_.load(Ordering::SeqCst), 1);
    r.body["id"].as_str().unwrap().to_string()
}

async fn approve(hub: &Hub, token: &str, id: &str) -> common::Resp {
    hub.post_json(
        &format!("/api/v1/approvals/{id}/approve"),
        token,
        json!({"reason": "lgtm"}),
    )
    .await
}

#[tokio::test]
async fn the_requester_approving_their_own_request_never_reaches_admission() {
    let (hub, calls) = hub(Some(json!({"approvers": 1}))).await;
    let id = pending(&hub, &calls).await;
    let r = approve(&hub, &hub.operator, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("cannot approve"), "{}", r.text);
    assert_eq!(calls.approval.load(Ordering::SeqCst), 0);
    assert_eq!(admission_audits(&hub).await, 0);
    assert_eq!(overrides(&hub).await, 0);

    // A second operator does reach it (and the change system's denial stands).
    let other = token(&hub, "ops2", "operator", None).await;
    let r = approve(&hub, &other, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("denied by the change system"), "{}", r.text);
    assert_eq!(calls.approval.load(Ordering::SeqCst), 1);
    assert_eq!(admission_audits(&hub).await, 1);
}

#[tokio::test]
async fn an_operator_outside_from_never_reaches_admission() {
    let (hub, calls) = hub(Some(json!({"approvers": 1, "from": {"tokens": ["ops2"]}}))).await;
    let id = pending(&hub, &calls).await;
    let outsider = token(&hub, "ops3", "operator", None).await;
    let r = approve(&hub, &outsider, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("spec.approval.from"), "{}", r.text);
    assert_eq!(calls.approval.load(Ordering::SeqCst), 0);
    assert_eq!(admission_audits(&hub).await, 0);
}

#[tokio::test]
async fn an_override_outside_the_callers_clusters_never_reaches_admission() {
    let (hub, calls) = hub(None).await;
    let only_b = AccessScope {
        clusters: Some(ClusterScope {
            names: vec!["b".into()],
            selector: None,
        }),
        gates: None,
    };
    let scoped = token(&hub, "ops-b", "operator", Some(only_b)).await;
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &scoped,
            json!({"for": "1h", "reason": "hotfix", "clusters": {"names": ["a"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("outside your cluster scope"), "{}", r.text);
    assert_eq!(calls.override_.load(Ordering::SeqCst), 0);
    assert_eq!(admission_audits(&hub).await, 0);
    assert_eq!(overrides(&hub).await, 0);

    // A token scoped to a cluster the gate does not cover at all.
    let only_c = AccessScope {
        clusters: Some(ClusterScope {
            names: vec!["c".into()],
            selector: None,
        }),
        gates: None,
    };
    let elsewhere = token(&hub, "ops-c", "operator", Some(only_c)).await;
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &elsewhere,
            json!({"for": "1h", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert_eq!(calls.override_.load(Ordering::SeqCst), 0);

    // Inside its scope the same caller does reach it.
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &scoped,
            json!({"for": "1h", "reason": "hotfix", "clusters": {"names": ["b"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(calls.override_.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_invalid_override_never_reaches_admission() {
    let (hub, calls) = hub(None).await;
    for (body, field) in [
        (json!({"for": "forever", "reason": "hotfix"}), "for"),
        (json!({"for": "1h", "reason": ""}), "reason"),
        (
            json!({"for": "1h", "reason": "x", "clusters": {"names": ["c"]}}),
            "clusters",
        ),
    ] {
        let r = hub
            .post_json("/api/v1/gates/g/close", &hub.operator, body.clone())
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{body}: {}",
            r.text
        );
        assert!(
            r.body["error"]["field"]
                .as_str()
                .is_some_and(|f| f.starts_with(field)),
            "{body}: {}",
            r.text
        );
    }
    let r = hub
        .post_json(
            "/api/v1/gates/nope/close",
            &hub.operator,
            json!({"for": "1h", "reason": "x"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND, "{}", r.text);
    assert_eq!(calls.override_.load(Ordering::SeqCst), 0);
    assert_eq!(admission_audits(&hub).await, 0);
    assert_eq!(overrides(&hub).await, 0);
}
