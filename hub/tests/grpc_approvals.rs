//! Approvals over gRPC on a real socket: `RequestOverride` through a gate with
//! `spec.approval` answers a pending request, the requester may not approve it,
//! a second operator's approval creates the override, reject and withdraw end
//! requests, `CreateOverride` is refused on such a gate, bad ids are
//! INVALID_ARGUMENT naming the field; WatchFleet tells of each request's pending
//! and its end, and WatchFleet and the dashboard's SSE stream of an expiry on the
//! injected clock. The state machine itself is in `approvals.rs`.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role};
use fleetgate_proto::v1::{self as pb, override_outcome::Outcome};
use grpc_support::authed;
use grpc_support::served::{Served, next_event};
use serde_json::{Value, json};
use tonic::Code;

#[tokio::test]
async fn two_people_over_grpc() {
    let hub = hub_with_approval_gate().await;
    let root = Actor::new("bootstrap-admin", Role::Admin);
    let second = hub
        .service
        .create_token(
            &root,
            CreateToken {
                name: "ops2".into(),
                role: "operator".into(),
                scope: None,
            },
            None,
        )
        .await
        .unwrap()
        .secret;
    let served = Served::of(hub.service.clone()).await;
    let mut api = served.grpc.admin();
    let mut events = served.watch(&hub.viewer).await;
    let open = |reason: &str| pb::CreateOverrideRequest {
        gate: "g".into(),
        state: "open".into(),
        r#for: "1h".into(),
        reason: reason.into(),
        ticket: "CHG-1".into(),
        ..Default::default()
    };

    // CreateOverride cannot skip the approval.
    let err = api
        .create_override(authed(open("hotfix"), &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");

    let pending = match api
        .request_override(authed(open("hotfix"), &hub.operator))
        .await
        .unwrap()
        .into_inner()
        .outcome
    {
        Some(Outcome::Pending(p)) => p,
        other => panic!("not pending: {other:?}"),
    };
    assert_eq!(pending.status, "pending");
    assert_eq!(pending.requester, "ops");
    assert_eq!(pending.ticket, "CHG-1");
    assert_eq!(pending.required, 1);
    // Watchers hear of it (the feed skips views in between: wait before deciding).
    assert_eq!(
        approval_event(&mut events).await,
        (pending.id.clone(), "pending".into())
    );
    let decide = |id: &str, reason: &str| pb::DecideApprovalRequest {
        id: id.into(),
        reason: reason.into(),
    };

    // The requester may not approve; viewers may not either.
    for token in [&hub.operator, &hub.viewer] {
        let err = api
            .approve_request(authed(decide(&pending.id, ""), token))
            .await
            .unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    }
    let err = api
        .approve_request(authed(decide("nope", ""), &second))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("id"), "{err:?}");

    let listed = api
        .list_approvals(authed(
            pb::ListApprovalsRequest {
                status: "pending".into(),
                ..Default::default()
            },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.approvals.len(), 1);
    assert!(
        hub.get("/api/v1/overrides?gate=g").await.body["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let approved = api
        .approve_request(authed(decide(&pending.id, "looked"), &second))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(approved.status, "approved");
    assert_eq!(approved.approvals.len(), 1);
    assert_eq!(approved.approvals[0].approver, "ops2");
    assert!(!approved.override_id.is_empty());
    let got = api
        .get_approval(authed(
            pb::GetApprovalRequest {
                id: pending.id.clone(),
            },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.override_id, approved.override_id);
    assert_eq!(
        approval_event(&mut events).await,
        (pending.id.clone(), "approved".into())
    );
    let r = hub.get("/api/v1/overrides?gate=g").await;
    assert_eq!(r.body["items"][0]["id"], approved.override_id, "{}", r.text);

    // Reject (a reason is required) and withdraw end other requests.
    let second_req = match api
        .request_override(authed(open("again"), &hub.operator))
        .await
        .unwrap()
        .into_inner()
        .outcome
    {
        Some(Outcome::Pending(p)) => p,
        other => panic!("not pending: {other:?}"),
    };
    assert_eq!(
        approval_event(&mut events).await,
        (second_req.id.clone(), "pending".into())
    );
    let err = api
        .reject_request(authed(decide(&second_req.id, ""), &second))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    let rejected = api
        .reject_request(authed(decide(&second_req.id, "not now"), &second))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(rejected.status, "rejected");
    assert_eq!(rejected.decision_reason, "not now");
    assert_eq!(
        approval_event(&mut events).await,
        (second_req.id.clone(), "rejected".into())
    );
    let third = match api
        .request_override(authed(open("third"), &hub.operator))
        .await
        .unwrap()
        .into_inner()
        .outcome
    {
        Some(Outcome::Pending(p)) => p,
        other => panic!("not pending: {other:?}"),
    };
    let cancelled = api
        .cancel_approval(authed(decide(&third.id, "changed my mind"), &hub.operator))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(cancelled.status, "cancelled");
    // Made and withdrawn, perhaps between two reads: its end is seen either way.
    let mut seen = Vec::new();
    while seen.last().map(String::as_str) != Some("withdrawn") {
        let (id, change) = approval_event(&mut events).await;
        assert_eq!(id, third.id);
        seen.push(change);
    }

    // Break-glass: admins only, the override exists at once.
    let mut emergency = open("outage");
    emergency.emergency = true;
    let err = api
        .request_override(authed(emergency.clone(), &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    match api
        .request_override(authed(emergency, &hub.admin))
        .await
        .unwrap()
        .into_inner()
        .outcome
    {
        Some(Outcome::Created(o)) => assert_eq!(o.gate, "g"),
        other => panic!("not created: {other:?}"),
    }
    served.stop().await;
}

/// The next approval event (id, change) on a WatchFleet stream, skipping others.
async fn approval_event(events: &mut tonic::Streaming<pb::FleetEvent>) -> (String, String) {
    next_event(events, "an approval event", |e| match e.event {
        Some(pb::fleet_event::Event::Approval(a)) => Some((a.approval.unwrap().id, a.change)),
        _ => None,
    })
    .await
}

#[tokio::test]
async fn an_expiry_reaches_watchfleet_and_the_event_stream() {
    let hub = hub_with_approval_gate().await;
    let served = Served::of(hub.service.clone()).await;
    let mut events = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;
    let approval = |change: &'static str| move |v: &Value| v["change"] == change;
    sse.next("ready", |_| true).await;

    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "hotfix"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.text);
    let id = r.body["id"].as_str().unwrap().to_string();
    assert_eq!(
        approval_event(&mut events).await,
        (id.clone(), "pending".into())
    );
    sse.next("approval", approval("pending")).await;

    // Not yet due on the hub's clock; an hour and a minute later it is, and it ends once.
    hub.clock.advance(chrono::Duration::minutes(59));
    assert_eq!(hub.service.expire_approval_requests().await.unwrap(), 0);
    hub.clock.advance(chrono::Duration::minutes(2));
    assert_eq!(hub.service.expire_approval_requests().await.unwrap(), 1);
    assert_eq!(
        approval_event(&mut events).await,
        (id.clone(), "expired".into())
    );
    let ev = sse.next("approval", approval("expired")).await;
    assert_eq!(
        (
            &ev["id"],
            &ev["status"],
            &ev["decidedBy"],
            &ev["overrideId"]
        ),
        (
            &json!(id),
            &json!("expired"),
            &json!("system"),
            &Value::Null
        ),
        "{ev}"
    );
    assert!(
        hub.get("/api/v1/overrides?gate=g").await.body["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    served.stop().await;
}

/// A hub with cluster `a` (env=prod) and gate `g` on it, closed, whose overrides need one
/// approval and expire after an hour.
async fn hub_with_approval_gate() -> Hub {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    let r = hub
        .post_json(
            "/api/v1/gates",
            &hub.admin,
            json!({
                "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
                "spec": {"clusters": {"names": ["a"]}, "default": "closed",
                         "approval": {"approvers": 1, "expires": "1h"}}
            }),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub
}
