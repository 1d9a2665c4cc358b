//! Legacy (unaggregated) discovery: `/version`, `/api`, `/apis`, `/api/v1`,
//! `/apis/{group}/{version}`. Requests for aggregated discovery
//! (`Accept: ...;as=APIGroupDiscoveryList`) get the plain documents with
//! `Content-Type: application/json`, which client-go treats as "server without
//! aggregated discovery" and parses as legacy (discovery_client.go, `isV2Beta1ContentType`).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::cluster::Cluster;

/// The Kubernetes version the simulator claims (kubectl 1.32 warns beyond ±1 minor).
pub const KUBE_MINOR: &str = "32";

pub async fn version() -> Json<Value> {
    Json(json!({
        "major": "1",
        "minor": KUBE_MINOR,
        "gitVersion": format!("v1.{KUBE_MINOR}.0-fleetgate-sim"),
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2025-01-01T00:00:00Z",
        "goVersion": "go1.23.4",
        "compiler": "gc",
        "platform": "linux/amd64",
    }))
}

pub async fn api_versions() -> Json<Value> {
    Json(json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }))
}

pub async fn api_groups(State(cluster): State<Arc<Cluster>>) -> Json<Value> {
    let groups: Vec<Value> = cluster
        .registry()
        .groups()
        .into_iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| {
            let vs: Vec<Value> = versions
                .iter()
                .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                .collect();
            json!({"name": g, "versions": vs, "preferredVersion": vs[0]})
        })
        .collect();
    Json(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
}

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

pub fn resource_list(cluster: &Cluster, group: &str, version: &str) -> Response {
    let mut resources = Vec::new();
    let registry = cluster.registry();
    for t in registry.types() {
        if t.group != group || t.version != version {
            continue;
        }
        let mut r = json!({
            "name": t.plural,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": if t.review { &["create"][..] } else { VERBS },
        });
        if !t.short_names.is_empty() {
            r["shortNames"] = json!(t.short_names);
        }
        if !t.categories.is_empty() {
            r["categories"] = json!(t.categories);
        }
        resources.push(r);
        if t.status_subresource {
            resources.push(json!({
                "name": format!("{}/status", t.plural),
                "singularName": "",
                "namespaced": t.namespaced,
                "kind": t.kind,
                "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Json(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
    .into_response()
}
