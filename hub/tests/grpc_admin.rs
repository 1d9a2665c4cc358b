//! The admin API over a real socket: roles as in REST, spoke tokens refused,
//! validation errors as INVALID_ARGUMENT naming the field (and nothing
//! written), writes visible through REST, WatchFleet events. Health and
//! reflection are in `grpc_reflection.rs`, rollouts in `grpc_admin_rollout.rs`.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::{Hub, business_hours, simple_gate};
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::{Grpc, TestSpoke, audit_entries, authed, within};
use serde_json::json;
use tonic::Code;

#[tokio::test]
async fn roles_and_token_kinds() {
    let hub = Hub::new().await;
    let spoke_token = hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();

    let err = admin
        .list_gates(pb::ListGatesRequest::default())
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let err = admin
        .list_gates(authed(pb::ListGatesRequest::default(), "fga_nope"))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    let err = admin
        .list_gates(authed(pb::ListGatesRequest::default(), &spoke_token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");

    let create = |token: &str| {
        authed(
            pb::CreateGateRequest {
                manifest: business_hours("bh", "prod"),
                reason: "rollout policy".into(),
            },
            token,
        )
    };
    for token in [&hub.viewer, &hub.operator] {
        let err = admin.create_gate(create(token)).await.unwrap_err();
        assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    }
    let g = admin
        .create_gate(create(&hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(g.name, "bh");
    assert_eq!(g.version, 1);
    assert!(!g.description.is_empty());
    assert!(g.warnings.is_empty());
    // The same write again: the name is taken.
    let err = admin.create_gate(create(&hub.admin)).await.unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    // A schedule whose days changed with the Kubernetes cron rules: accepted, with a warning.
    let stepped = pb::CreateGateRequest {
        manifest: business_hours("steps", "staging").replace("0 8 * * MON", "0 0 */2 * MON"),
        reason: String::new(),
    };
    let g = admin
        .create_gate(authed(stepped, &hub.admin))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(g.warnings.len(), 1);
    assert_eq!(g.warnings[0].path, "spec.windows[0].schedule");
    assert!(g.warnings[0].message.contains("OR"), "{:?}", g.warnings);
    admin
        .delete_gate(authed(
            pb::DeleteGateRequest {
                name: "steps".into(),
                ..Default::default()
            },
            &hub.admin,
        ))
        .await
        .unwrap();

    // Viewer reads, operator overrides, viewer cannot override.
    let list = admin
        .list_gates(authed(pb::ListGatesRequest::default(), &hub.viewer))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(list.gates.len(), 1);
    let close = |token: &str| {
        authed(
            pb::CreateOverrideRequest {
                gate: "bh".into(),
                state: "closed".into(),
                r#for: "1h".into(),
                reason: "incident".into(),
                ..Default::default()
            },
            token,
        )
    };
    let err = admin.create_override(close(&hub.viewer)).await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let o = admin
        .create_override(close(&hub.operator))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(o.state, "closed");
    assert_eq!(o.actor, "ops");
    assert!(o.expires_at.is_some());

    // Visible through REST: the same service layer.
    let r = hub.get("/api/v1/overrides").await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.body["items"][0]["id"], o.id, "{}", r.text);

    let c = admin
        .cancel_override(authed(
            pb::CancelOverrideRequest {
                id: o.id.clone(),
                reason: "resolved".into(),
            },
            &hub.operator,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(c.cancelled_at.is_some());
    assert_eq!(c.cancelled_by, "ops");

    // API tokens are admin-only.
    let err = admin
        .list_api_tokens(authed(pb::ListApiTokensRequest::default(), &hub.operator))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let t = admin
        .create_api_token(authed(
            pb::CreateApiTokenRequest {
                name: "ci-bot".into(),
                role: "operator".into(),
                reason: String::new(),
                scope: String::new(),
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(t.token.starts_with("fga_"));
    admin
        .list_gates(authed(pb::ListGatesRequest::default(), &t.token))
        .await
        .unwrap();
    admin
        .revoke_api_token(authed(
            pb::RevokeApiTokenRequest {
                id: t.info.unwrap().id,
                reason: "rotated".into(),
            },
            &hub.admin,
        ))
        .await
        .unwrap();
    let err = admin
        .list_gates(authed(pb::ListGatesRequest::default(), &t.token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated);
    grpc.stop().await;
}

#[tokio::test]
async fn bad_input_is_invalid_argument_with_the_field_and_writes_nothing() {
    let hub = Hub::new().await;
    hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    admin
        .create_gate(authed(
            pb::CreateGateRequest {
                manifest: simple_gate("g", &["c1"], "open").to_string(),
                reason: String::new(),
            },
            &hub.admin,
        ))
        .await
        .unwrap();
    let before = hub.fingerprint().await;

    let bad_cron = business_hours("bad", "prod").replace("0 8 * * MON", "0 8 * * FUNDAY");
    let cases: Vec<(&str, tonic::Status)> = vec![
        (
            "spec.windows[0].schedule",
            admin
                .create_gate(authed(
                    pb::CreateGateRequest {
                        manifest: bad_cron,
                        reason: String::new(),
                    },
                    &hub.admin,
                ))
                .await
                .unwrap_err(),
        ),
        (
            "manifest",
            admin
                .create_gate(authed(pb::CreateGateRequest::default(), &hub.admin))
                .await
                .unwrap_err(),
        ),
        (
            "state",
            admin
                .create_override(authed(
                    pb::CreateOverrideRequest {
                        gate: "g".into(),
                        state: "ajar".into(),
                        reason: "x".into(),
                        ..Default::default()
                    },
                    &hub.operator,
                ))
                .await
                .unwrap_err(),
        ),
        (
            "cluster_selector",
            admin
                .create_override(authed(
                    pb::CreateOverrideRequest {
                        gate: "g".into(),
                        state: "open".into(),
                        reason: "x".into(),
                        cluster_selector: "env in (prod".into(),
                        ..Default::default()
                    },
                    &hub.operator,
                ))
                .await
                .unwrap_err(),
        ),
        (
            "id",
            admin
                .cancel_override(authed(
                    pb::CancelOverrideRequest {
                        id: "not-a-uuid".into(),
                        reason: String::new(),
                    },
                    &hub.operator,
                ))
                .await
                .unwrap_err(),
        ),
        (
            "limit",
            admin
                .list_gates(authed(
                    pb::ListGatesRequest {
                        limit: 5000,
                        cursor: String::new(),
                    },
                    &hub.viewer,
                ))
                .await
                .unwrap_err(),
        ),
    ];
    for (field, err) in cases {
        assert_eq!(err.code(), Code::InvalidArgument, "{field}: {err:?}");
        assert!(err.message().starts_with(field), "{field}: {err:?}");
    }
    let err = admin
        .get_gate(authed(
            pb::GetGateRequest {
                name: "nope".into(),
            },
            &hub.viewer,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    assert_eq!(hub.fingerprint().await, before);
    grpc.stop().await;
}

#[tokio::test]
async fn clusters_status_audit_and_preview() {
    let hub = Hub::new().await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    let reg = admin
        .register_cluster(authed(
            pb::RegisterClusterRequest {
                name: "edge-1".into(),
                labels: [("env".to_string(), "prod".to_string())].into(),
                reason: "new site".into(),
                ..Default::default()
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(reg.token.starts_with("fgs_"));
    assert_eq!(reg.cluster.as_ref().unwrap().labels["env"], "prod");
    admin
        .create_gate(authed(
            pb::CreateGateRequest {
                manifest: business_hours("bh", "prod"),
                reason: String::new(),
            },
            &hub.admin,
        ))
        .await
        .unwrap();

    let st = admin
        .get_cluster_status(authed(
            pb::GetClusterStatusRequest {
                name: "edge-1".into(),
            },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(st.gates.len(), 1);
    assert_eq!(st.gates[0].gate, "bh");
    // Wednesday 12:00 UTC (the tests' clock) is inside Mon 08:00 + 81h.
    assert_eq!(st.gates[0].state, "open");
    assert!(st.open);

    let fleet = admin
        .get_fleet_status(authed(pb::GetFleetStatusRequest {}, &hub.viewer))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fleet.clusters.unwrap().total, 1);
    assert_eq!(fleet.gates[0].open, 1);

    let p = admin
        .preview_gate(authed(
            pb::PreviewGateRequest {
                name: "bh".into(),
                ..Default::default()
            },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(p.initial_state, "open");
    assert!(!p.transitions.is_empty());

    let audit = audit_entries(&mut admin, "cluster", &hub.viewer).await;
    assert_eq!(audit.len(), 1);
    assert_eq!(audit[0].target_name, "edge-1");
    assert_eq!(audit[0].reason, "new site");
    assert_eq!(audit[0].actor, "bootstrap-admin");

    let relabeled = admin
        .set_cluster_labels(authed(
            pb::SetClusterLabelsRequest {
                name: "edge-1".into(),
                labels: [("env".to_string(), "dev".to_string())].into(),
                reason: String::new(),
            },
            &hub.admin,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(relabeled.labels["env"], "dev");
    let r = hub.get("/api/v1/clusters/edge-1").await;
    assert_eq!(r.body["labels"]["env"], "dev", "{}", r.text);
    for (selector, want) in [("env=dev", 1), ("env=prod", 0)] {
        let l = admin
            .list_clusters(authed(
                pb::ListClustersRequest {
                    selector: selector.into(),
                    ..Default::default()
                },
                &hub.viewer,
            ))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(l.clusters.len(), want, "{selector}");
    }
    let err = admin
        .list_clusters(authed(
            pb::ListClustersRequest {
                selector: "env in (".into(),
                ..Default::default()
            },
            &hub.viewer,
        ))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("selector"), "{err:?}");
    grpc.stop().await;
}

/// The next event of a WatchFleet stream (bounded).
async fn next_event(s: &mut tonic::Streaming<pb::FleetEvent>) -> pb::FleetEvent {
    within("a fleet event", s.message())
        .await
        .unwrap()
        .expect("stream ended")
}

#[tokio::test]
async fn watch_fleet_streams_transitions_overrides_and_connections() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut admin = grpc.admin();
    admin
        .create_gate(authed(
            pb::CreateGateRequest {
                manifest: simple_gate("g", &["c1"], "open").to_string(),
                reason: String::new(),
            },
            &hub.admin,
        ))
        .await
        .unwrap();

    let mut events = admin
        .watch_fleet(authed(pb::WatchFleetRequest::default(), &hub.viewer))
        .await
        .unwrap()
        .into_inner();
    let first = next_event(&mut events).await;
    assert!(first.initial);
    match first.event.unwrap() {
        Event::GateState(g) => {
            assert_eq!((g.gate.as_str(), g.cluster.as_str()), ("g", "c1"));
            assert_eq!((g.from.as_str(), g.to.as_str()), ("", "open"));
        }
        other => panic!("unexpected {other:?}"),
    }
    let second = next_event(&mut events).await;
    assert!(second.initial);
    match second.event.unwrap() {
        Event::Spoke(s) => assert_eq!((s.cluster.as_str(), s.connected), ("c1", false)),
        other => panic!("unexpected {other:?}"),
    }

    // Close by override: an override event and the transition follow.
    admin
        .create_override(authed(
            pb::CreateOverrideRequest {
                gate: "g".into(),
                state: "closed".into(),
                reason: "change freeze".into(),
                ..Default::default()
            },
            &hub.operator,
        ))
        .await
        .unwrap();
    let (mut saw_override, mut saw_close) = (false, false);
    for _ in 0..10 {
        if saw_override && saw_close {
            break;
        }
        let e = next_event(&mut events).await;
        assert!(!e.initial);
        match e.event.unwrap() {
            Event::Override(o) => {
                assert_eq!(o.change, "active");
                assert_eq!(o.r#override.unwrap().reason, "change freeze");
                saw_override = true;
            }
            Event::GateState(g) => {
                assert_eq!((g.from.as_str(), g.to.as_str()), ("open", "closed"));
                assert!(g.reason.contains("change freeze"), "{}", g.reason);
                saw_close = true;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert!(saw_override && saw_close);

    // A spoke connecting shows up (connection state is polled).
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    spoke.snapshot().await;
    match next_event(&mut events).await.event.unwrap() {
        Event::Spoke(s) => {
            assert_eq!(s.cluster, "c1");
            assert!(s.connected);
            assert_eq!(s.replica, "test-replica");
        }
        other => panic!("unexpected {other:?}"),
    }

    // A spoke token cannot watch.
    let err = admin
        .watch_fleet(authed(pb::WatchFleetRequest::default(), &token))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);

    // Drain ends the watch cleanly.
    grpc.shutdown.cancel();
    within("the watch to end", async {
        loop {
            match events.message().await {
                Ok(Some(_)) => continue,
                Ok(None) => break,
                Err(s) => panic!("expected a clean end, got {s:?}"),
            }
        }
    })
    .await;
    grpc.stop().await;
}
