//! OpenAPI v3 as far as kubectl needs it. kubectl's field-validation check
//! (cli-runtime resource/query_param_verifier_v3.go) looks up `/openapi/v3`, fetches the
//! group-version document and searches a PATCH operation tagged with
//! `x-kubernetes-group-version-kind` for a `fieldValidation` query parameter; when found it
//! sends `fieldValidation=Strict` instead of validating client-side against `/openapi/v2`,
//! which this server does not serve (404, as servers with v2 disabled do).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use crate::cluster::Cluster;
use crate::error::Error;

pub async fn v2() -> Response {
    Error::path_not_found().into_response()
}

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub async fn v3_root(State(cluster): State<Arc<Cluster>>) -> Json<Value> {
    let mut paths = Map::new();
    let registry = cluster.registry();
    for (g, versions) in registry.groups() {
        for v in versions {
            let p = gv_path(&g, &v);
            // The hash names the document's content (kubectl caches by it): the CRDs
            // behind the group-version, so a changed CRD is fetched anew.
            let mut content = p.clone();
            for t in registry
                .types()
                .iter()
                .filter(|t| t.group == g && t.version == v)
            {
                if let Some(o) = &t.origin {
                    content.push_str(&format!(" {}:{}:{}", o.uid, o.generation, o.accepted_names));
                }
            }
            let url = format!("/openapi/v3/{p}?hash={}", hash(&content));
            paths.insert(p, json!({ "serverRelativeURL": url }));
        }
    }
    Json(json!({ "paths": paths }))
}

fn hash(s: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("{}{s}", env!("CARGO_PKG_VERSION")).as_bytes());
    hex::encode(&digest[..16]).to_uppercase()
}

/// `io.fluxcd.toolkit.kustomize.v1.Kustomization` style component names.
fn component_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').collect();
    parts.reverse();
    if group.is_empty() {
        format!("io.k8s.api.core.{version}.{kind}")
    } else {
        format!("{}.{version}.{kind}", parts.join("."))
    }
}

pub async fn v3_group_version(
    State(cluster): State<Arc<Cluster>>,
    Path(gv): Path<String>,
) -> Response {
    let segs: Vec<&str> = gv.split('/').collect();
    let (group, version) = match segs.as_slice() {
        ["api", v] => ("", *v),
        ["apis", g, v] => (*g, *v),
        _ => return Error::path_not_found().into_response(),
    };
    let mut paths = Map::new();
    let mut schemas = Map::new();
    let registry = cluster.registry();
    for t in registry.types() {
        if t.group != group || t.version != version {
            continue;
        }
        let gvk = json!({"group": t.group, "version": t.version, "kind": t.kind});
        let base = format!("/{}", gv_path(group, version));
        let item = if t.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}/{{name}}", t.plural)
        } else {
            format!("{base}/{}/{{name}}", t.plural)
        };
        let query = |name: &str| json!({"name": name, "in": "query", "schema": {"type": "string", "uniqueItems": true}});
        let op = |verb: &str| {
            json!({
                "operationId": format!("{verb}{}", t.kind),
                "x-kubernetes-action": verb,
                "x-kubernetes-group-version-kind": gvk,
                "parameters": [query("dryRun"), query("fieldManager"), query("fieldValidation")],
                "responses": {"200": {"description": "OK"}},
            })
        };
        paths.insert(
            item,
            json!({"get": op("get"), "put": op("put"), "patch": op("patch"), "delete": op("delete")}),
        );
        let mut schema = t.schema.clone().unwrap_or_else(
            || json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}),
        );
        schema["x-kubernetes-group-version-kind"] = json!([gvk]);
        schemas.insert(component_name(&t.group, &t.version, &t.kind), schema);
    }
    if paths.is_empty() {
        return Error::path_not_found().into_response();
    }
    Json(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": format!("v1.{}.0", super::discovery::KUBE_MINOR)},
        "paths": paths,
        "components": {"schemas": schemas},
    }))
    .into_response()
}
