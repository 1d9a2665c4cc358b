//! The scope matrix over gRPC: a team's scoped API tokens (viewer, operator,
//! admin) on a real socket see and change only their gates and clusters,
//! `WatchFleet` streams only their clusters and gates, and only an unscoped
//! admin manages access policies (`ListAccessPolicies`, `GetAccessPolicy`,
//! `ApplyAccessPolicy`, `DeleteAccessPolicy`); freezes stay in the caller's scope
//! (`Freeze`, `Unfreeze`, `ListFreezes`). The service-layer matrix
//! (`scope_matrix.rs`) covers every operation; this checks the wire.
//!
//! One module per topic: `tokens`, `watch_fleet`, `access_policies`, `freezes`;
//! the fleet they share (clusters, gates, scoped tokens) is set up here.

#[path = "../common/mod.rs"]
mod common;
#[path = "../grpc_support/mod.rs"]
mod grpc_support;

mod access_policies;
mod freezes;
mod tokens;
mod watch_fleet;

use common::Hub;
use fleetgate_api_types::{AccessScope, GateScope};
use fleetgate_hub::service::types::CreateToken;
use fleetgate_hub::{Actor, Role};
use fleetgate_policy::{ClusterScope, LabelSelector};
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
