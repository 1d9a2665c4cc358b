//! The scope matrix over gRPC: a team's scoped API tokens (viewer, operator,
//! admin) on a real socket see and change only their gates and clusters,
//! `WatchFleet` streams only their clusters and gates, and only an unscoped
//! admin manages access policies (`ListAccessPolicies`, `GetAccessPolicy`,
//! `ApplyAccessPolicy`, `DeleteAccessPolicy`); freezes stay in the caller's scope
//! (`Freeze`, `Unfreeze`, `ListFreezes`). The service-layer matrix
//! (`scope_matrix.rs`) covers every operation; this checks the wire.

mod common;
mod grpc_support;

use common::Hub;
use fleetgate_api_types::{AccessScope, GateScope};
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::{ClusterScope, LabelSelector};
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::{Grpc, authed, within};
use serde_json::json;
use tonic::Code;

fn root() -> Actor {
    Actor::new("bootstrap-admin", Role::Admin)
}

fn payments() -> LabelSelector {
    LabelSelector {
        match_labels: [("team".to_string(), "payments".to_string())].into(),
        ..LabelSelector::default()
    }
}

fn gate_yaml(name: &str, team: &str, clusters: &str) -> String {
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {name}, labels: {{team: {team}}}}}\n\
         spec: {{clusters: {clusters}, default: open}}\n"
    )
}

/// Clusters pay-1, pay-2 (team=payments), web-1 (team=web); gates pay
/// (payments' clusters), mixed (every cluster, labelled payments) and web.
/// Returns the hub and scoped tokens: viewer, operator, admin.
async fn fleet() -> (Hub, [String; 3]) {
    let hub = Hub::new().await;
    for (name, t) in [
        ("pay-1", "payments"),
        ("pay-2", "payments"),
        ("web-1", "web"),
    ] {
        hub.register(name, json!({"team": t})).await;
    }
    for (name, team, clusters) in [
        (
            "pay",
            "payments",
            "{selector: {matchLabels: {team: payments}}}",
        ),
        ("mixed", "payments", "{selector: {}}"),
        ("web", "web", "{selector: {matchLabels: {team: web}}}"),
    ] {
        let g = fleetgate_policy::parse_gate(&gate_yaml(name, team, clusters)).unwrap();
        hub.service.create_gate(&root(), g, None).await.unwrap();
    }
    let scope = AccessScope {
        clusters: Some(ClusterScope {
            names: vec![],
            selector: Some(payments()),
        }),
        gates: Some(GateScope {
            names: vec![],
            selector: Some(payments()),
        }),
    };
    let mut tokens = Vec::new();
    for role in ["viewer", "operator", "admin"] {
        let req = CreateToken {
            name: format!("pay-{role}"),
            role: role.into(),
            scope: Some(scope.clone()),
        };
        let t = hub.service.create_token(&root(), req, None).await.unwrap();
        tokens.push(t.secret);
    }
    let tokens: [String; 3] = tokens.try_into().unwrap();
    (hub, tokens)
}

fn code<T: std::fmt::Debug>(r: Result<tonic::Response<T>, tonic::Status>) -> Code {
    match r {
        Ok(_) => Code::Ok,
        Err(s) => s.code(),
    }
}

#[tokio::test]
async fn scoped_tokens_over_grpc_see_and_change_only_their_part() {
    let (hub, [viewer, operator, admin_t]) = fleet().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();

    // Reads: only the team's gates and clusters; the others are 403.
    for t in [&viewer, &operator, &admin_t] {
        let gates: Vec<String> = api
            .list_gates(authed(pb::ListGatesRequest::default(), t))
            .await
            .unwrap()
            .into_inner()
            .gates
            .into_iter()
            .map(|g| g.name)
            .collect();
        assert_eq!(gates, ["mixed", "pay"]);
        let clusters: Vec<String> = api
            .list_clusters(authed(pb::ListClustersRequest::default(), t))
            .await
            .unwrap()
            .into_inner()
            .clusters
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(clusters, ["pay-1", "pay-2"]);
        let get = pb::GetGateRequest { name: "web".into() };
        assert_eq!(
            code(api.get_gate(authed(get, t)).await),
            Code::PermissionDenied
        );
        let status = pb::GetClusterStatusRequest {
            name: "web-1".into(),
        };
        assert_eq!(
            code(api.get_cluster_status(authed(status, t)).await),
            Code::PermissionDenied
        );
        let fleet = api
            .get_fleet_status(authed(pb::GetFleetStatusRequest {}, t))
            .await
            .unwrap()
            .into_inner();
        let summary: Vec<(String, u64)> = fleet
            .gates
            .iter()
            .map(|g| (g.gate.clone(), g.clusters))
            .collect();
        assert_eq!(summary, [("mixed".into(), 2), ("pay".into(), 2)]);
        // Access policies are for unscoped admins only, even a scoped admin.
        assert_eq!(
            code(
                api.list_access_policies(authed(pb::ListAccessPoliciesRequest::default(), t))
                    .await
            ),
            Code::PermissionDenied
        );
    }

    // Operators: their gate on their clusters; a gate-wide close of the mixed
    // gate covers their clusters only and says so; naming web-1 is 403.
    let close = |gate: &str, clusters: &[&str]| pb::CreateOverrideRequest {
        gate: gate.into(),
        state: "closed".into(),
        r#for: "1h".into(),
        reason: "scope".into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    assert_eq!(
        code(
            api.create_override(authed(close("pay", &[]), &viewer))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code(
            api.create_override(authed(close("web", &[]), &operator))
                .await
        ),
        Code::PermissionDenied
    );
    assert_eq!(
        code(
            api.create_override(authed(close("mixed", &["web-1"]), &operator))
                .await
        ),
        Code::PermissionDenied
    );
    let o = api
        .create_override(authed(close("mixed", &[]), &operator))
        .await
        .unwrap()
        .into_inner();
    assert!(o.narrowed.contains("cluster scope"), "{o:?}");
    assert!(o.cluster_selector_json.contains("payments"), "{o:?}");

    // Admins: write gates inside the scope only.
    let create = |yaml: String| pb::CreateGateRequest {
        manifest: yaml,
        reason: String::new(),
    };
    let ok = gate_yaml("pay-2nd", "payments", "{names: [pay-1]}");
    assert_eq!(
        code(api.create_gate(authed(create(ok.clone()), &operator)).await),
        Code::PermissionDenied
    );
    assert_eq!(
        code(api.create_gate(authed(create(ok), &admin_t)).await),
        Code::Ok
    );
    let other_team = gate_yaml("web-2nd", "web", "{names: [web-1]}");
    assert_eq!(
        code(api.create_gate(authed(create(other_team), &admin_t)).await),
        Code::PermissionDenied
    );
    let too_wide = gate_yaml("pay-all", "payments", "{selector: {}}");
    assert_eq!(
        code(api.create_gate(authed(create(too_wide), &admin_t)).await),
        Code::PermissionDenied
    );

    // The audit log: only entries about the team's things.
    let audit = api
        .list_audit(authed(pb::ListAuditRequest::default(), &viewer))
        .await
        .unwrap()
        .into_inner()
        .entries;
    assert!(!audit.is_empty());
    for e in &audit {
        assert!(
            ["pay", "mixed", "pay-2nd", "pay-1", "pay-2"].contains(&e.target_name.as_str()),
            "{e:?}"
        );
    }
    grpc.stop().await;
}

/// The next event of a WatchFleet stream (bounded).
async fn next_event(s: &mut tonic::Streaming<pb::FleetEvent>) -> pb::FleetEvent {
    within("a fleet event", s.message())
        .await
        .unwrap()
        .expect("stream ended")
}

/// The (gate, cluster) a gate-state or override event is about.
fn about(e: &pb::FleetEvent) -> (String, String) {
    match e.event.as_ref().unwrap() {
        Event::GateState(g) => (g.gate.clone(), g.cluster.clone()),
        Event::Override(o) => {
            let o = o.r#override.as_ref().unwrap();
            (o.gate.clone(), o.clusters.join(","))
        }
        Event::Spoke(s) => (String::new(), s.cluster.clone()),
        other => panic!("unexpected {other:?}"),
    }
}

#[tokio::test]
async fn watch_fleet_streams_only_the_scope() {
    let (hub, [viewer, _, _]) = fleet().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let mut events = api
        .watch_fleet(authed(pb::WatchFleetRequest::default(), &viewer))
        .await
        .unwrap()
        .into_inner();
    // The initial state: (gate, cluster) of pay and mixed on pay-1/pay-2, and
    // the two clusters' connections; nothing of web or web-1.
    let mut initial = Vec::new();
    for _ in 0..6 {
        let e = next_event(&mut events).await;
        assert!(e.initial, "{e:?}");
        initial.push(about(&e));
    }
    initial.sort();
    let want: Vec<(String, String)> = [
        ("", "pay-1"),
        ("", "pay-2"),
        ("mixed", "pay-1"),
        ("mixed", "pay-2"),
        ("pay", "pay-1"),
        ("pay", "pay-2"),
    ]
    .iter()
    .map(|(g, c)| (g.to_string(), c.to_string()))
    .collect();
    assert_eq!(initial, want);

    // web closes first, then pay: the watcher hears of pay only. A later
    // in-scope change (pay reopened) proves nothing of web was merely late.
    let close = |gate: &str| pb::CreateOverrideRequest {
        gate: gate.into(),
        state: "closed".into(),
        r#for: "1h".into(),
        reason: "scope".into(),
        ..Default::default()
    };
    api.create_override(authed(close("web"), &hub.admin))
        .await
        .unwrap();
    let pay = api
        .create_override(authed(close("pay"), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    // Views are diffed and the feed skips views in between: wait for pay's
    // close before reopening it, or both could fall between two reads.
    let mut closed = 0;
    while closed < 2 {
        let e = next_event(&mut events).await;
        let (gate, cluster) = about(&e);
        assert_eq!(gate, "pay", "{e:?}");
        assert!(!cluster.contains("web"), "{e:?}");
        if let Some(Event::GateState(g)) = &e.event
            && g.to == "closed"
        {
            closed += 1;
        }
    }
    api.cancel_override(authed(
        pb::CancelOverrideRequest {
            id: pay.id.clone(),
            reason: "done".into(),
        },
        &hub.admin,
    ))
    .await
    .unwrap();
    let mut reopened = 0;
    while reopened < 2 {
        let e = next_event(&mut events).await;
        let (gate, cluster) = about(&e);
        assert_eq!(gate, "pay", "{e:?}");
        assert!(!cluster.contains("web"), "{e:?}");
        if let Some(Event::GateState(g)) = &e.event
            && g.to == "open"
        {
            reopened += 1;
        }
    }
    grpc.stop().await;
}

#[tokio::test]
async fn access_policies_over_grpc() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let manifest = "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {name: team-payments}\n\
                    spec:\n  subjects: {groups: [payments]}\n  role: operator\n  scope:\n\
                    \x20   clusters: {selector: {matchLabels: {team: payments}}}\n";
    let apply = |m: &str, v: u64| pb::ApplyAccessPolicyRequest {
        manifest: m.into(),
        expected_version: v,
        reason: "onboarding".into(),
    };
    // Viewers and operators may not; an unscoped admin may.
    for t in [&hub.viewer, &hub.operator] {
        assert_eq!(
            code(api.apply_access_policy(authed(apply(manifest, 0), t)).await),
            Code::PermissionDenied
        );
    }
    let first = api
        .apply_access_policy(authed(apply(manifest, 0), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(first.created);
    let p = first.policy.unwrap();
    assert_eq!((p.name.as_str(), p.version), ("team-payments", 1));
    let stored: serde_json::Value = serde_json::from_str(&p.manifest_json).unwrap();
    assert_eq!(stored["spec"]["role"], "operator");
    // The same manifest again: unchanged, not created, same version.
    let again = api
        .apply_access_policy(authed(apply(manifest, 1), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert!(!again.created);
    assert_eq!(again.policy.unwrap().version, 1);
    // A stale version: FAILED_PRECONDITION; a bad field: INVALID_ARGUMENT naming it.
    let viewer_role = manifest.replace("role: operator", "role: viewer");
    let err = api
        .apply_access_policy(authed(apply(&viewer_role, 7), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let bad = manifest.replace("role: operator", "role: owner");
    let err = api
        .apply_access_policy(authed(apply(&bad, 0), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("spec.role"), "{}", err.message());
    let err = api
        .apply_access_policy(authed(apply("", 0), &hub.admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("manifest"), "{}", err.message());

    let list = api
        .list_access_policies(authed(pb::ListAccessPoliciesRequest::default(), &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.policies.len(), 1);
    assert_eq!(list.next_cursor, "");
    let get = |n: &str| pb::GetAccessPolicyRequest { name: n.into() };
    assert_eq!(
        api.get_access_policy(authed(get("team-payments"), &hub.admin))
            .await
            .unwrap()
            .into_inner()
            .version,
        1
    );
    api.delete_access_policy(authed(
        pb::DeleteAccessPolicyRequest {
            name: "team-payments".into(),
            reason: "offboarding".into(),
        },
        &hub.admin,
    ))
    .await
    .unwrap();
    assert_eq!(
        code(
            api.get_access_policy(authed(get("team-payments"), &hub.admin))
                .await
        ),
        Code::NotFound
    );
    // Audited, with the reason.
    let audit = api
        .list_audit(authed(
            pb::ListAuditRequest {
                target_kind: "access_policy".into(),
                ..Default::default()
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner()
        .entries;
    let actions: Vec<&str> = audit.iter().map(|e| e.action.as_str()).collect();
    assert_eq!(actions, ["access_policy.delete", "access_policy.create"]);
    assert_eq!(audit[0].reason, "offboarding");
    grpc.stop().await;
}

/// The freeze methods on the wire: a scoped operator freezes only its clusters (named,
/// also without a selection) and is refused outside them with PERMISSION_DENIED; a viewer
/// may list but not freeze; bad input is INVALID_ARGUMENT naming the field and writes
/// nothing; a freeze covering clusters outside the scope cannot be ended by it; Unfreeze
/// ends what it may and then says nothing is left (FAILED_PRECONDITION).
#[tokio::test]
async fn freezes_over_grpc_stay_in_the_callers_scope() {
    let (hub, [viewer, operator, _]) = fleet().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut api = grpc.admin();
    let freeze = |reason: &str, clusters: &[&str]| pb::FreezeRequest {
        reason: reason.into(),
        clusters: clusters.iter().map(|c| c.to_string()).collect(),
        r#for: "2h".into(),
        ..Default::default()
    };
    let listed = |api: &mut fleetgate_proto::AdminServiceClient<tonic::transport::Channel>| {
        let mut api = api.clone();
        let viewer = viewer.clone();
        async move {
            api.list_freezes(authed(pb::ListFreezesRequest { all: false }, &viewer))
                .await
                .unwrap()
                .into_inner()
                .freezes
        }
    };

    // Refused: a viewer; a cluster outside the scope; no reason (naming the field).
    let r = api.freeze(authed(freeze("INC-1", &[]), &viewer)).await;
    assert_eq!(code(r), Code::PermissionDenied);
    let r = api
        .freeze(authed(freeze("INC-1", &["web-1"]), &operator))
        .await;
    assert_eq!(code(r), Code::PermissionDenied);
    let err = api
        .freeze(authed(freeze(" ", &[]), &operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("reason"), "{}", err.message());
    assert!(listed(&mut api).await.is_empty(), "nothing written");

    // No selection: the operator's clusters, by name.
    let info = api
        .freeze(authed(freeze("INC-1", &[]), &operator))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.clusters, ["pay-1", "pay-2"]);
    assert_eq!(
        (info.reason.as_str(), info.actor.as_str()),
        ("INC-1", "pay-operator")
    );
    assert!(info.expires_at.is_some());
    let status = api
        .get_cluster_status(authed(
            pb::GetClusterStatusRequest {
                name: "pay-1".into(),
            },
            &viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(
        status.gates.iter().all(|g| g.state == "closed"),
        "{:?}",
        status.gates
    );

    // An unscoped operator's fleet-wide freeze: listed; the scoped one may not end it.
    let root_freeze = hub
        .service
        .freeze(
            &Actor::new("ops", Role::Operator),
            fleetgate_hub::service::freezes::FreezeRequest {
                reason: "INC-2".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    // A freeze of web-1 alone is not the payments team's to see; one naming web-1 and
    // pay-1 is listed with pay-1 only.
    let hidden = hub
        .service
        .freeze(
            &Actor::new("ops", Role::Operator),
            fleetgate_hub::service::freezes::FreezeRequest {
                reason: "INC-3".into(),
                clusters: Some(fleetgate_hub::service::types::OverrideClusters {
                    names: vec!["web-1".into()],
                    selector: None,
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let shared = hub
        .service
        .freeze(
            &Actor::new("ops", Role::Operator),
            fleetgate_hub::service::freezes::FreezeRequest {
                reason: "INC-4".into(),
                clusters: Some(fleetgate_hub::service::types::OverrideClusters {
                    names: vec!["web-1".into(), "pay-1".into()],
                    selector: None,
                }),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let seen = listed(&mut api).await;
    assert!(
        seen.iter().all(|f| f.id != hidden.id.to_string()),
        "{seen:?}"
    );
    let s = seen.iter().find(|f| f.id == shared.id.to_string()).unwrap();
    assert_eq!(s.clusters, ["pay-1"]);
    // The fleet status's banner list reads the same (REST, the dashboard's source).
    let r = hub
        .call(
            axum::http::Method::GET,
            "/api/v1/status/clusters",
            Some(&viewer),
            None,
        )
        .await;
    let banner = r.body["freezes"].as_array().unwrap();
    assert!(
        banner
            .iter()
            .all(|f| f["id"] != hidden.id.to_string().as_str()),
        "{}",
        r.text
    );
    assert!(!r.text.contains("web-1"), "{}", r.text);
    for id in [hidden.id, shared.id] {
        hub.service
            .unfreeze(
                &Actor::new("ops", Role::Operator),
                fleetgate_hub::service::freezes::UnfreezeRequest {
                    reason: "not ours".into(),
                    id: Some(id),
                },
            )
            .await
            .unwrap();
    }
    let ids: Vec<String> = listed(&mut api).await.into_iter().map(|f| f.id).collect();
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(ids.contains(&info.id) && ids.contains(&root_freeze.id.to_string()));
    let end = |id: &str| pb::UnfreezeRequest {
        reason: "resolved".into(),
        id: id.into(),
    };
    let r = api
        .unfreeze(authed(end(&root_freeze.id.to_string()), &operator))
        .await;
    assert_eq!(code(r), Code::PermissionDenied);
    // Without an id: its own freeze only; then nothing is left for it.
    let ended = api
        .unfreeze(authed(end(""), &operator))
        .await
        .unwrap()
        .into_inner()
        .ended;
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].id, info.id);
    let r = api.unfreeze(authed(end(""), &operator)).await;
    assert_eq!(code(r), Code::FailedPrecondition);
    let left: Vec<String> = listed(&mut api).await.into_iter().map(|f| f.id).collect();
    assert_eq!(left, [root_freeze.id.to_string()]);
}
