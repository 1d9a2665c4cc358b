//! The simulator's own HTTP API on each cluster's port (not part of Kubernetes):
//! `POST /sim/v1/push` with `{"kind","namespace","name","revision"}` "pushes a commit"
//! to a Flux source's upstream, so processes (demo, CLI, e2e tests) can drive Flux. An
//! optional `"manifests": {"<path>": "<multi-document YAML>"}` makes the revision carry the
//! objects the Kustomizations on that source apply. `"ready": false` (with an optional
//! `"message"` and `"failOn": ["cluster-001"]`) pushes a bad revision: the consumers applying
//! it fail as Flux reports failures (see `flux::failure`). With `"failAfter": "20s"` (and an
//! optional `"failFor": "5s"`) the revision applies and turns healthy first, and fails only
//! that long after each Kustomization applied it (for `failFor`, then healthy again): a
//! workload that degrades after its health check passed (see `flux::late`).

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
    /// `false` pushes a bad revision (default `true`).
    #[serde(default)]
    pub ready: Option<bool>,
    /// The failure message of a bad revision.
    #[serde(default)]
    pub message: Option<String>,
    /// A bad revision fails only on these clusters (default: every cluster it is pushed to).
    #[serde(default, rename = "failOn")]
    pub fail_on: Option<Vec<String>>,
    /// A bad revision fails only this long after a Kustomization applied it ("20s").
    #[serde(default, rename = "failAfter")]
    pub fail_after: Option<String>,
    /// With `failAfter`: the failure lasts this long, then the revision is healthy again.
    #[serde(default, rename = "failFor")]
    pub fail_for: Option<String>,
}

/// Default message of a bad revision pushed without one.
const DEFAULT_FAILURE: &str = "revision marked bad by the simulator push";

impl Push {
    /// The failure a bad push describes; errors name the field.
    fn failure(&self) -> Result<Option<crate::upstream::Failure>, Error> {
        if self.ready != Some(false) {
            if self.message.is_some() {
                return Err(Error::bad_request(
                    "push: message: only with \"ready\": false",
                ));
            }
            if self.fail_on.is_some() {
                return Err(Error::bad_request(
                    "push: failOn: only with \"ready\": false",
                ));
            }
            if self.fail_after.is_some() {
                return Err(Error::bad_request(
                    "push: failAfter: only with \"ready\": false",
                ));
            }
            return Ok(None);
        }
        if self.fail_for.is_some() && self.fail_after.is_none() {
            return Err(Error::bad_request("push: failFor: only with failAfter"));
        }
        let duration = |field: &str, v: &Option<String>| -> Result<_, Error> {
            v.as_deref()
                .map(|d| {
                    crate::flux::status::parse_duration(d).ok_or_else(|| {
                        Error::bad_request(format!(
                            "push: {field}: {d:?} is not a duration (e.g. \"20s\", \"1m\")"
                        ))
                    })
                })
                .transpose()
        };
        let after = duration("failAfter", &self.fail_after)?;
        let lasting = duration("failFor", &self.fail_for)?;
        if self.fail_on.as_ref().is_some_and(Vec::is_empty) {
            return Err(Error::bad_request(
                "push: failOn: must name at least one cluster",
            ));
        }
        let message = self.message.clone().unwrap_or_default();
        Ok(Some(crate::upstream::Failure {
            message: if message.trim().is_empty() {
                DEFAULT_FAILURE.to_string()
            } else {
                message
            },
            only_on: self.fail_on.clone().unwrap_or_default(),
            after,
            lasting,
        }))
    }
}

pub async fn push(State(cluster): State<Arc<Cluster>>, body: axum::body::Bytes) -> Response {
    let push: Push = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return Error::bad_request(format!("push: {e}")).into_response(),
    };
    let failure = match push.failure() {
        Ok(f) => f,
        Err(e) => return e.into_response(),
    };
    match crate::upstream::push(
        &cluster,
        &push.kind,
        &push.namespace,
        &push.name,
        &push.revision,
        push.manifests.as_ref(),
        failure.as_ref(),
    ) {
        Ok(()) => {
            // Whether the revision is good on this cluster (a failOn list may spare it).
            let ready = failure
                .as_ref()
                .is_none_or(|f| !f.applies_to(&cluster.name));
            (
                StatusCode::ACCEPTED,
                Json(json!({"pushed": push.revision, "ready": ready})),
            )
                .into_response()
        }
        Err(e) => e.into_response(),
    }
}
