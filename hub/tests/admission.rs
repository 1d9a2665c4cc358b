//! Change-ticket admission webhooks against a real local HTTP server standing in for a
//! change-management system that approves only the tickets it knows: allow, deny (403
//! naming `ticket` with its message), timeout, 5xx and malformed answers under both
//! failure policies, the outcome in the audit entry, and a ServiceNow-shaped adapter
//! reading the table API (change in state "Implement", planned window covering now).
//! Configuring them over gRPC (`AdminService` on a real socket) too.

mod admission_support;
mod common;
mod grpc_support;

use fleetgate_hub::ServiceDefaults;
use std::collections::HashMap;
use std::net::SocketAddr;

use admission_support::{hub, last_audit, live_overrides, open, webhook};
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::{Json, Router};
use common::{Hub, t0};
use fleetgate_api_types::admission::AdmissionRequest;
use fleetgate_hub::egress::EgressPolicy;
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, authed};
use serde_json::{Value, json};
use tonic::Code;

#[derive(Clone)]
struct Cms {
    /// Where the ServiceNow-shaped table API lives (this server).
    base: String,
    client: reqwest::Client,
}

/// The stand-in change system (and a ServiceNow table API beside it).
async fn change_system() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let cms = Cms {
        base: format!("http://{addr}"),
        client: reqwest::Client::new(),
    };
    let app = Router::new()
        .route("/change", post(known_tickets))
        .route("/slow", post(std::future::pending::<StatusCode>))
        .route("/boom", post(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .route("/garbage", post(|| async { "<html>ok</html>" }))
        .route("/api/now/table/change_request", get(snow_table))
        .route("/snow", post(snow_adapter))
        .with_state(cms);
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// Approves CHG-1 only.
async fn known_tickets(Json(req): Json<AdmissionRequest>) -> (StatusCode, Json<Value>) {
    match req.ticket.as_deref() {
        Some("CHG-1") => (StatusCode::OK, Json(json!({"allowed": true}))),
        Some(t) => (
            StatusCode::FORBIDDEN,
            Json(json!({"message": format!("change {t} is not approved in the change system")})),
        ),
        None => (
            StatusCode::FORBIDDEN,
            Json(json!({"message": "a change ticket is required"})),
        ),
    }
}

/// ServiceNow's table API, shaped as `GET /api/now/table/change_request?sysparm_query=number=…`
/// answers it: a change in "Implement" for 11:00–14:00 UTC on t0's day, one still
/// "Scheduled", one whose window is over.
async fn snow_table(Query(q): Query<HashMap<String, String>>) -> Json<Value> {
    let number = q
        .get("sysparm_query")
        .and_then(|s| s.strip_prefix("number="))
        .unwrap_or_default()
        .to_string();
    let row = |state: &str, start: &str, end: &str| json!({"number": number, "state": state, "start_date": start, "end_date": end});
    let result = match number.as_str() {
        "CHG0031337" => vec![row(
            "Implement",
            "2026-11-25 11:00:00",
            "2026-11-25 14:00:00",
        )],
        "CHG0031338" => vec![row(
            "Scheduled",
            "2026-11-25 11:00:00",
            "2026-11-25 14:00:00",
        )],
        "CHG0031339" => vec![row(
            "Implement",
            "2026-11-24 11:00:00",
            "2026-11-24 14:00:00",
        )],
        _ => vec![],
    };
    Json(json!({ "result": result }))
}

/// The adapter docs/approvals.md describes, in Rust: look the ticket up in the table API;
/// allow when it is in "Implement" and its planned window covers now (t0 here: the hub
/// runs on an injected clock).
async fn snow_adapter(
    State(cms): State<Cms>,
    Json(req): Json<AdmissionRequest>,
) -> (StatusCode, Json<Value>) {
    let Some(ticket) = req.ticket else {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"message": "a ServiceNow change number is required"})),
        );
    };
    let url = format!("{}/api/now/table/change_request", cms.base);
    let table: Value = cms
        .client
        .get(url)
        .query(&[
            ("sysparm_query", format!("number={ticket}")),
            ("sysparm_fields", "number,state,start_date,end_date".into()),
        ])
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let Some(change) = table["result"].get(0) else {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"message": format!("{ticket} does not exist")})),
        );
    };
    if change["state"] != "Implement" {
        return (
            StatusCode::FORBIDDEN,
            Json(
                json!({"message": format!("{ticket} is in state {}, not Implement", change["state"])}),
            ),
        );
    }
    let at = |k: &str| {
        chrono::NaiveDateTime::parse_from_str(change[k].as_str().unwrap(), "%Y-%m-%d %H:%M:%S")
            .unwrap()
            .and_utc()
    };
    if !(at("start_date") <= t0() && t0() < at("end_date")) {
        return (
            StatusCode::FORBIDDEN,
            Json(json!({"message": format!("{ticket}'s planned window does not cover now")})),
        );
    }
    (StatusCode::OK, Json(json!({"allowed": true})))
}

#[tokio::test]
async fn known_tickets_pass_others_get_403_naming_ticket() {
    let hub = hub().await;
    let cms = change_system().await;
    let r = webhook(&hub, "cms", format!("http://{cms}/change"), json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["failurePolicy"], "Fail");
    assert_eq!(r.body["timeout"], "5s");
    assert_eq!(last_audit(&hub).await.0, "admission_webhook.create");

    let r = open(&hub, Some("CHG-9")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "ticket", "{}", r.text);
    assert!(
        r.text
            .contains("CHG-9 is not approved in the change system"),
        "{}",
        r.text
    );
    assert_eq!(live_overrides(&hub).await, 0);
    let (action, after) = last_audit(&hub).await;
    assert_eq!(action, "admission.deny");
    assert_eq!(after["admission"][0]["outcome"], "denied", "{after}");
    assert_eq!(after["admission"][0]["status"], 403);
    assert_eq!(after["request"]["ticket"], "CHG-9");

    let r = open(&hub, None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("a change ticket is required"), "{}", r.text);

    let r = open(&hub, Some("CHG-1")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(live_overrides(&hub).await, 1);
    let (action, after) = last_audit(&hub).await;
    assert_eq!(action, "override.open");
    assert_eq!(after["admission"][0]["webhook"], "cms", "{after}");
    assert_eq!(after["admission"][0]["outcome"], "allowed");

    // Bad specs name the field; nothing is stored.
    for (spec, field) in [
        (json!({"url": "ftp://x"}), "url"),
        (
            json!({"url": "https://x", "operations": ["gate"]}),
            "operations[0]",
        ),
        (json!({"url": "https://x", "timeout": "1m"}), "timeout"),
        (
            json!({"url": "https://x", "failurePolicy": "Maybe"}),
            "failurePolicy",
        ),
        (
            json!({"url": "https://x", "caBundle": "not pem"}),
            "caBundle",
        ),
    ] {
        let r = hub
            .call(
                axum::http::Method::PUT,
                "/api/v1/admission-webhooks/bad",
                Some(&hub.admin),
                Some(("application/json", spec.to_string())),
            )
            .await;
        assert_eq!(
            r.status,
            StatusCode::UNPROCESSABLE_ENTITY,
            "{spec}: {}",
            r.text
        );
        assert_eq!(r.body["error"]["field"], field, "{spec}: {}", r.text);
    }
    // Operators may not configure them.
    let r = hub
        .call(
            axum::http::Method::PUT,
            "/api/v1/admission-webhooks/x",
            Some(&hub.operator),
            Some(("application/json", json!({"url": "https://x"}).to_string())),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
}

#[tokio::test]
async fn timeout_5xx_and_malformed_under_both_policies() {
    let hub = hub().await;
    let cms = change_system().await;
    for (path, what) in [
        ("slow", "no answer within"),
        ("boom", "answered 503"),
        ("garbage", "not an admission response"),
    ] {
        for policy in ["Fail", "Ignore"] {
            let r = webhook(
                &hub,
                "cms",
                format!("http://{cms}/{path}"),
                json!({"timeout": "300ms", "failurePolicy": policy}),
            )
            .await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            let before = live_overrides(&hub).await;
            let r = open(&hub, Some("CHG-1")).await;
            let (action, after) = last_audit(&hub).await;
            let outcome = &after["admission"][0];
            assert!(
                outcome["message"].as_str().unwrap().contains(what),
                "{path} {policy}: {after}"
            );
            if policy == "Fail" {
                assert_eq!(r.status, StatusCode::FORBIDDEN, "{path}: {}", r.text);
                assert!(r.text.contains("failurePolicy Fail"), "{}", r.text);
                assert_eq!(action, "admission.deny");
                assert_eq!(outcome["outcome"], "failed");
                assert_eq!(live_overrides(&hub).await, before);
            } else {
                assert_eq!(r.status, StatusCode::CREATED, "{path}: {}", r.text);
                assert_eq!(action, "override.open");
                assert_eq!(outcome["outcome"], "ignored");
                assert_eq!(live_overrides(&hub).await, before + 1);
            }
        }
    }
}

#[tokio::test]
async fn a_servicenow_change_must_be_implementing_now() {
    let hub = hub().await;
    let cms = change_system().await;
    let r = webhook(&hub, "servicenow", format!("http://{cms}/snow"), json!({})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    for (ticket, said) in [
        ("CHG0031338", "not Implement"),
        ("CHG0031339", "does not cover now"),
        ("CHG0000000", "does not exist"),
    ] {
        let r = open(&hub, Some(ticket)).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{ticket}: {}", r.text);
        assert_eq!(r.body["error"]["field"], "ticket");
        assert!(r.text.contains(said), "{ticket}: {}", r.text);
    }
    let r = open(&hub, Some("CHG0031337")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);

    // By default the egress rules refuse plain http and loopback: under Fail, denied.
    let strict = hub
        .service
        .clone()
        .with_admission_egress(EgressPolicy::default());
    let strict_app = fleetgate_hub::app(common::state(&strict));
    let strict_hub = Hub {
        app: strict_app,
        ..hub
    };
    let r = open(&strict_hub, Some("CHG0031337")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let (_, after) = last_audit(&strict_hub).await;
    assert_eq!(after["admission"][0]["outcome"], "failed", "{after}");
}

#[tokio::test]
async fn configured_over_grpc() {
    let hub = hub().await;
    let cms = change_system().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let apply = |name: &str, spec: Option<pb::AdmissionWebhookSpec>, token: &str| {
        authed(
            pb::ApplyAdmissionWebhookRequest {
                name: name.into(),
                spec,
            },
            token,
        )
    };
    let spec = |url: String| pb::AdmissionWebhookSpec {
        url,
        ..Default::default()
    };
    let change = format!("http://{cms}/change");

    // Only an unscoped admin configures them.
    let err = api
        .apply_admission_webhook(apply("cms", Some(spec(change.clone())), &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    // Bad input names the field of the message; nothing is stored.
    for (name, bad, field) in [
        ("cms", None, "spec"),
        ("Not_A_Label", Some(spec(change.clone())), "name"),
        ("cms", Some(spec("ftp://x".into())), "spec.url"),
        (
            "cms",
            Some(pb::AdmissionWebhookSpec {
                failure_policy: "Maybe".into(),
                ..spec(change.clone())
            }),
            "spec.failure_policy",
        ),
        (
            "cms",
            Some(pb::AdmissionWebhookSpec {
                operations: vec!["override".into(), "gate".into()],
                ..spec(change.clone())
            }),
            "spec.operations[1]",
        ),
        (
            "cms",
            Some(pb::AdmissionWebhookSpec {
                ca_bundle: "not pem".into(),
                ..spec(change.clone())
            }),
            "spec.ca_bundle",
        ),
    ] {
        let err = api
            .apply_admission_webhook(apply(name, bad, &hub.admin))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
        assert!(
            err.message().starts_with(&format!("{field}: ")),
            "{field}: {err:?}"
        );
    }
    let listed = api
        .list_admission_webhooks(authed(pb::ListAdmissionWebhooksRequest {}, &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(listed.webhooks.is_empty(), "{listed:?}");

    // Created with the defaults, then the change system decides an override made over gRPC.
    let made = api
        .apply_admission_webhook(apply("cms", Some(spec(change.clone())), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    let s = made.spec.clone().unwrap();
    assert_eq!(made.name, "cms");
    assert_eq!(
        (s.operations, s.timeout, s.failure_policy),
        (
            vec!["override".to_string()],
            "5s".to_string(),
            "Fail".to_string()
        )
    );
    assert_eq!(last_audit(&hub).await.0, "admission_webhook.create");
    let open = |ticket: &str| {
        authed(
            pb::CreateOverrideRequest {
                gate: "g".into(),
                state: "open".into(),
                r#for: "1h".into(),
                reason: "deploy".into(),
                ticket: ticket.into(),
                ..Default::default()
            },
            &hub.operator,
        )
    };
    let err = api.create_override(open("CHG-9")).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(
        err.message().starts_with("ticket: ")
            && err
                .message()
                .contains("CHG-9 is not approved in the change system"),
        "{err:?}"
    );
    assert_eq!(live_overrides(&hub).await, 0);
    api.create_override(open("CHG-1")).await.unwrap();
    assert_eq!(live_overrides(&hub).await, 1);

    // Replaced, read back, deleted.
    let replaced = api
        .apply_admission_webhook(apply(
            "cms",
            Some(pb::AdmissionWebhookSpec {
                operations: vec!["override".into(), "approval".into()],
                timeout: "2s".into(),
                failure_policy: "Ignore".into(),
                ..spec(change.clone())
            }),
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(replaced.created_at, made.created_at);
    assert_eq!(last_audit(&hub).await.0, "admission_webhook.replace");
    let got = api
        .get_admission_webhook(authed(
            pb::GetAdmissionWebhookRequest { name: "cms".into() },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got, replaced);
    let s = got.spec.unwrap();
    assert_eq!(
        (s.timeout.as_str(), s.failure_policy.as_str()),
        ("2s", "Ignore")
    );
    let listed = api
        .list_admission_webhooks(authed(pb::ListAdmissionWebhooksRequest {}, &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.webhooks, std::slice::from_ref(&replaced));
    let deleted = api
        .delete_admission_webhook(authed(
            pb::DeleteAdmissionWebhookRequest { name: "cms".into() },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(deleted, replaced);
    assert_eq!(last_audit(&hub).await.0, "admission_webhook.delete");
    let err = api
        .get_admission_webhook(authed(
            pb::GetAdmissionWebhookRequest { name: "cms".into() },
            &hub.admin,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound, "{err:?}");
    // Without it, nothing asks the change system.
    api.create_override(open("CHG-9")).await.unwrap();
}
