//! The simulator's own HTTP API on each cluster's port (not part of Kubernetes):
//! `POST /sim/v1/push` with `{"kind","namespace","name","revision"}` "pushes a commit"
//! to a Flux source's upstream, so processes (demo, CLI, e2e tests) can drive Flux. An
//! optional `"manifests": {"<path>": "<multi-document YAML>"}` makes the revision carry the
//! objects the Kustomizations on that source apply.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde::Deserialize;
use serde_json::json;

use crate::cluster::Cluster;
use crate::error::Error;

#[derive(Debug, Deserialize)]
pub struct Push {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub revision: String,
    #[serde(default)]
    pub manifests: Option<std::collections::BTreeMap<String, String>>,
}

pub async fn push(State(cluster): State<Arc<Cluster>>, body: axum::body::Bytes) -> Response {
    let push: Push = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return Error::bad_request(format!("push: {e}")).into_response(),
    };
    match crate::sim::push(
        &cluster,
        &push.kind,
        &push.namespace,
        &push.name,
        &push.revision,
        push.manifests.as_ref(),
    ) {
        Ok(()) => (StatusCode::ACCEPTED, Json(json!({"pushed": push.revision}))).into_response(),
        Err(e) => e.into_response(),
    }
}
