//! The freeze methods over gRPC (`Freeze`, `Unfreeze`, `ListFreezes`) stay in the
//! caller's scope: what a scoped admin may freeze, list and end, and what it sees of
//! freezes that reach beyond its clusters (also in the REST fleet status's banner list).
//! Freezing is an admin's: operators and viewers are refused.

use fleetgate_hub::{Actor, Role};
use fleetgate_proto::v1 as pb;
use tonic::Code;

use crate::grpc_support::{Grpc, authed};
use crate::{code, fleet};

/// The freeze methods on the wire: a scoped admin freezes only its clusters (named,
/// also without a selection) and is refused outside them with PERMISSION_DENIED; a viewer
/// may list but not freeze, nor may an operator (freeze nor unfreeze); bad input is INVALID_ARGUMENT naming the field and writes
/// nothing; a freeze covering clusters outside the scope cannot be ended by it; Unfreeze
/// ends what it may and then says nothing is left (FAILED_PRECONDITION).
#[tokio::test]
async fn freezes_over_grpc_stay_in_the_callers_scope() {
    let (hub, [viewer, operator, admin]) = fleet().await;
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

    // Refused: a viewer; an operator, even in its scope; a cluster outside the scope;
    // no reason (naming the field).
    for who in [&viewer, &operator] {
        let r = api.freeze(authed(freeze("INC-1", &[]), who)).await;
        assert_eq!(code(r), Code::PermissionDenied);
        let r = api.freeze(authed(freeze("INC-1", &["pay-1"]), who)).await;
        assert_eq!(code(r), Code::PermissionDenied);
    }
    let r = api
        .freeze(authed(freeze("INC-1", &["web-1"]), &admin))
        .await;
    assert_eq!(code(r), Code::PermissionDenied);
    let err = api
        .freeze(authed(freeze(" ", &[]), &admin))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().contains("reason"), "{}", err.message());
    assert!(listed(&mut api).await.is_empty(), "nothing written");

    // No selection: the admin's clusters, by name.
    let info = api
        .freeze(authed(freeze("INC-1", &[]), &admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(info.clusters, ["pay-1", "pay-2"]);
    assert_eq!(
        (info.reason.as_str(), info.actor.as_str()),
        ("INC-1", "pay-admin")
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

    // An unscoped admin's fleet-wide freeze: listed; the scoped one may not end it.
    let root_freeze = hub
        .service
        .freeze(
            &Actor::new("ops", Role::Admin),
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
            &Actor::new("ops", Role::Admin),
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
            &Actor::new("ops", Role::Admin),
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
                &Actor::new("ops", Role::Admin),
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
        .unfreeze(authed(end(&root_freeze.id.to_string()), &admin))
        .await;
    assert_eq!(code(r), Code::PermissionDenied);
    // An operator may not end even the freeze of its own clusters.
    let r = api.unfreeze(authed(end(&info.id), &operator)).await;
    assert_eq!(code(r), Code::PermissionDenied);
    // Without an id: its own freeze only; then nothing is left for it.
    let ended = api
        .unfreeze(authed(end(""), &admin))
        .await
        .unwrap()
        .into_inner()
        .ended;
    assert_eq!(ended.len(), 1);
    assert_eq!(ended[0].id, info.id);
    let r = api.unfreeze(authed(end(""), &admin)).await;
    assert_eq!(code(r), Code::FailedPrecondition);
    let left: Vec<String> = listed(&mut api).await.into_iter().map(|f| f.id).collect();
    assert_eq!(left, [root_freeze.id.to_string()]);
}
