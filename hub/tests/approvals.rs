//! Two-person approval of overrides (`spec.approval`) through REST on a real database:
//! a pending request reaches no spoke, the requester cannot approve it, the last approval
//! creates the override, reject/cancel/expiry end it, break-glass is admin-only and
//! marked, and two services on one database racing on the last approval make exactly
//! one override.

mod common;

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Hub, t0};
use fleetgate_hub::clock::ManualClock;
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role, Service, db};
use serde_json::{Value, json};

/// Clusters a, b (prod) and gate `g` (closed on both) with `approval`.
async fn gated(approval: Value) -> Hub {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "prod"})).await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            json!({
                "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
                "spec": {"clusters": {"names": ["a", "b"]}, "default": "closed", "approval": approval}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub
}

/// A new token with `role`; returns its secret.
async fn token(hub: &Hub, name: &str, role: &str) -> String {
    let root = Actor::new("bootstrap-admin", Role::Admin);
    hub.service
        .create_token(
            &root,
            CreateToken {
                name: name.into(),
                role: role.into(),
                scope: None,
            },
            None,
        )
        .await
        .expect("token")
        .secret
}

async fn open(hub: &Hub, token: &str, body: Value) -> common::Resp {
    hub.post_json("/api/v1/gates/g/open", token, body).await
}

async fn approve(hub: &Hub, token: &str, id: &str) -> common::Resp {
    hub.post_json(
        &format!("/api/v1/approvals/{id}/approve"),
        token,
        json!({"reason": "looked at the diff"}),
    )
    .await
}

async fn overrides_of(hub: &Hub, cluster: &str) -> usize {
    hub.service
        .cluster_snapshot(cluster)
        .await
        .unwrap()
        .overrides
        .len()
}

async fn events(hub: &Hub, kind: &str) -> i64 {
    sqlx::query_scalar("select count(*) from notify_events where type = $1")
        .bind(kind)
        .fetch_one(&hub.pool)
        .await
        .unwrap()
}

async fn audit_actions(hub: &Hub) -> Vec<String> {
    sqlx::query_scalar("select action from audit_log where action like 'approval.%' or action like 'override.%' order by id")
        .fetch_all(&hub.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_second_person_approves_and_only_then_the_override_exists() {
    let hub = gated(json!({"approvers": 1, "expires": "1h"})).await;
    let other = token(&hub, "ops2", "operator").await;
    let before = hub.service.cluster_snapshot("a").await.unwrap().revision;
    let r = open(
        &hub,
        &hub.operator,
        json!({"for": "1h", "reason": "hotfix INC-7", "clusters": {"names": ["a"]}, "ticket": "CHG-1"}),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    assert_eq!(r.body["status"], "pending");
    assert_eq!(r.body["requester"], "ops");
    assert_eq!(r.body["ticket"], "CHG-1");
    assert_eq!(r.body["expiresAt"], "2026-11-25T13:00:00Z");
    let id = r.body["id"].as_str().unwrap().to_string();
    // Pending: no override, no cluster's snapshot changed.
    assert_eq!(overrides_of(&hub, "a").await, 0);
    let a = hub.service.cluster_snapshot("a").await.unwrap();
    assert_eq!(
        a.revision, before,
        "a pending request changes no cluster's snapshot"
    );
    let r = hub.get("/api/v1/overrides?gate=g").await;
    assert!(r.body["items"].as_array().unwrap().is_empty(), "{}", r.text);
    let r = hub.get("/api/v1/approvals?status=pending").await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 1, "{}", r.text);

    // What each caller may do (the dashboard's buttons): decided by the service.
    for (token, may) in [
        (
            &hub.operator,
            json!({"approve": false, "reject": true, "cancel": true}),
        ),
        (
            &other,
            json!({"approve": true, "reject": true, "cancel": false}),
        ),
        (
            &hub.viewer,
            json!({"approve": false, "reject": false, "cancel": false}),
        ),
        (
            &hub.admin,
            json!({"approve": true, "reject": true, "cancel": true}),
        ),
    ] {
        let r = hub
            .call(
                Method::GET,
                &format!("/api/v1/approvals/{id}"),
                Some(token),
                None,
            )
            .await;
        assert_eq!(r.body["youMay"], may, "{}", r.text);
        let r = hub
            .call(
                Method::GET,
                "/api/v1/approvals?status=pending",
                Some(token),
                None,
            )
            .await;
        assert_eq!(r.body["items"][0]["youMay"], may, "{}", r.text);
    }

    // The requester cannot approve, whatever the session.
    let r = approve(&hub, &hub.operator, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("another person"), "{}", r.text);
    // A viewer cannot approve.
    let r = approve(&hub, &hub.viewer, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert_eq!(overrides_of(&hub, "a").await, 0);

    hub.clock.advance(Duration::minutes(5));
    let r = approve(&hub, &other, &id).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "approved");
    assert_eq!(r.body["approvals"][0]["approver"], "ops2");
    let override_id = r.body["overrideId"].as_str().unwrap().to_string();
    // Now the override exists, recorded as the requester's, for an hour from approval.
    let r = hub.get("/api/v1/overrides?gate=g").await;
    let o = &r.body["items"][0];
    assert_eq!(o["id"], override_id.as_str());
    assert_eq!(o["actor"], "ops");
    assert_eq!(o["approvalRequest"], id.as_str());
    assert_eq!(o["expiresAt"], "2026-11-25T13:05:00Z");
    assert_eq!(overrides_of(&hub, "a").await, 1);
    assert_eq!(overrides_of(&hub, "b").await, 0, "b was not requested");
    // Approving again: 409.
    let r = approve(&hub, &other, &id).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    assert_eq!(
        audit_actions(&hub).await,
        ["approval.request", "approval.approve"]
    );
    assert_eq!(events(&hub, "approval.pending").await, 1);
    assert_eq!(events(&hub, "approval.approved").await, 1);
    assert_eq!(events(&hub, "override.created").await, 1);

    // Closing stays instant.
    let r = hub
        .post_json(
            "/api/v1/gates/g/close",
            &hub.operator,
            json!({"for": "1h", "reason": "stop"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
}

#[tokio::test]
async fn reject_cancel_expire_and_from() {
    let hub = gated(json!({"approvers": 2, "from": {"tokens": ["ops2", "ops3"]}})).await;
    let ops2 = token(&hub, "ops2", "operator").await;
    let ops3 = token(&hub, "ops3", "operator").await;
    let outsider = token(&hub, "ops4", "operator").await;
    let ask = |reason: &'static str| {
        let hub = &hub;
        async move {
            let r = open(hub, &hub.operator, json!({"for": "30m", "reason": reason})).await;
            assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
            r.body["id"].as_str().unwrap().to_string()
        }
    };

    // Not in `from`: refused; two approvals needed.
    let id = ask("one").await;
    let r = approve(&hub, &outsider, &id).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("spec.approval.from"), "{}", r.text);
    let r = approve(&hub, &ops2, &id).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "pending");
    assert_eq!(overrides_of(&hub, "a").await, 0);
    // Who has approved is offered no second Approve (the write would be 409);
    // the other approver still is.
    for (who, may_approve) in [(&ops2, false), (&ops3, true)] {
        let r = hub
            .call(
                Method::GET,
                &format!("/api/v1/approvals/{id}"),
                Some(who),
                None,
            )
            .await;
        assert_eq!(r.body["youMay"]["approve"], may_approve, "{}", r.text);
    }
    let r = approve(&hub, &ops2, &id).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    // Reject needs a reason, then ends it; a later approval is 409.
    let r = hub
        .post_json(&format!("/api/v1/approvals/{id}/reject"), &ops3, json!({}))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    let r = hub
        .post_json(
            &format!("/api/v1/approvals/{id}/reject"),
            &ops3,
            json!({"reason": "not during the incident"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "rejected");
    assert_eq!(r.body["decidedBy"], "ops3");
    let r = approve(&hub, &ops3, &id).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Only the requester (or an admin) withdraws.
    let id = ask("two").await;
    let cancel = |tok: String| {
        let hub = &hub;
        let id = id.clone();
        async move {
            hub.call(
                Method::DELETE,
                &format!("/api/v1/approvals/{id}?reason=changed+my+mind"),
                Some(&tok),
                None,
            )
            .await
        }
    };
    let r = cancel(ops2.clone()).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    let r = cancel(hub.operator.clone()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["status"], "cancelled");

    // Expiry follows the hub's clock (default 24h here).
    let id = ask("three").await;
    hub.clock.advance(Duration::hours(23));
    assert_eq!(hub.service.expire_approval_requests().await.unwrap(), 0);
    hub.clock.advance(Duration::hours(2));
    let r = approve(&hub, &ops2, &id).await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);
    assert!(r.text.contains("expired"), "{}", r.text);
    assert_eq!(hub.service.expire_approval_requests().await.unwrap(), 1);
    assert_eq!(hub.service.expire_approval_requests().await.unwrap(), 0);
    let r = hub.get(&format!("/api/v1/approvals/{id}")).await;
    assert_eq!(r.body["status"], "expired", "{}", r.text);
    assert_eq!(r.body["decidedBy"], "system");
    assert_eq!(events(&hub, "approval.expired").await, 1);
    assert_eq!(events(&hub, "approval.rejected").await, 1);
    assert_eq!(events(&hub, "approval.cancelled").await, 1);
    assert_eq!(
        audit_actions(&hub).await,
        [
            "approval.request",
            "approval.approve",
            "approval.reject",
            "approval.request",
            "approval.cancel",
            "approval.request",
            "approval.expire"
        ]
    );
    assert_eq!(overrides_of(&hub, "a").await, 0, "nothing ever opened");
    let r = hub.get("/api/v1/approvals?status=bogus").await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
}

#[tokio::test]
async fn break_glass_is_for_admins_and_marked() {
    let hub = gated(json!({})).await;
    let r = open(
        &hub,
        &hub.operator,
        json!({"for": "1h", "reason": "fire", "emergency": true}),
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.text);
    assert!(r.text.contains("admin"), "{}", r.text);
    let r = open(&hub, &hub.admin, json!({"for": "1h", "emergency": true})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "reason");
    let r = open(
        &hub,
        &hub.admin,
        json!({"for": "1h", "reason": "prod down, INC-9", "emergency": true}),
    )
    .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(r.body["emergency"], true);
    assert_eq!(overrides_of(&hub, "a").await, 1);
    assert_eq!(audit_actions(&hub).await, ["override.open.emergency"]);
    let data: Value =
        sqlx::query_scalar("select data from notify_events where type = 'override.created'")
            .fetch_one(&hub.pool)
            .await
            .unwrap();
    assert_eq!(data["override"]["emergency"], true, "{data}");
}

#[tokio::test]
async fn spec_approval_is_validated_with_its_path() {
    let hub = Hub::new().await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            json!({
                "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
                "spec": {"clusters": {"selector": {}}, "approval": {"approvers": 0}}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(
        r.body["error"]["field"], "spec.approval.approvers",
        "{}",
        r.text
    );
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            json!({
                "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
                "spec": {"clusters": {"selector": {}}, "approval": {"for": ["opened"]}}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert!(
        r.body["error"]["field"]
            .as_str()
            .unwrap()
            .starts_with("spec.approval.for"),
        "{}",
        r.text
    );
}

/// Two services on one database (as two hub replicas) approve the last missing
/// approval at the same time: exactly one approves and creates the override.
#[tokio::test]
async fn two_replicas_racing_on_the_last_approval_make_one_override() {
    let hub = gated(json!({"approvers": 2})).await;
    let clock = ManualClock::new(t0());
    let pool2 = db::connect(&hub.url, 4).await.unwrap();
    let second = Service::with_clock(pool2, Arc::new(clock));
    let token_actor = |name: &str| {
        Actor::from_grants(
            fleetgate_hub::service::Identity::Token(fleetgate_hub::service::TokenIdentity {
                name: name.into(),
                role: Role::Operator,
                scope: Default::default(),
            }),
            vec![fleetgate_hub::service::Grant {
                role: Role::Operator,
                scope: Default::default(),
                source: fleetgate_hub::service::GrantSource::Token { name: name.into() },
            }],
        )
        .unwrap()
    };
    for round in 0..5 {
        let r = open(
            &hub,
            &hub.operator,
            json!({"for": "1h", "reason": format!("round {round}")}),
        )
        .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
        let id: uuid::Uuid = r.body["id"].as_str().unwrap().parse().unwrap();
        hub.service
            .approve_request(&token_actor("first"), id, None)
            .await
            .unwrap();
        let (two, three) = (token_actor("second"), token_actor("third"));
        let (x, y) = tokio::join!(
            hub.service.approve_request(&two, id, None),
            second.approve_request(&three, id, None),
        );
        let oks = [&x, &y].iter().filter(|r| r.is_ok()).count();
        assert_eq!(oks, 1, "round {round}: {x:?} / {y:?}");
        let err = x.err().or(y.err()).unwrap();
        assert!(err.to_string().contains("approved already"), "{err}");
        let n: i64 =
            sqlx::query_scalar("select count(*) from overrides where approval_request = $1")
                .bind(id)
                .fetch_one(&hub.pool)
                .await
                .unwrap();
        assert_eq!(n, 1, "round {round}");
    }
}
