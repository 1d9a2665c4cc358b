//! The service-account issuer over HTTP: OIDC discovery (`/.well-known/openid-configuration`,
//! `/openid/v1/jwks`, as kubernetes `pkg/routes/openidmetadata.go` serves them), the
//! TokenRequest API (`POST /api/v1/namespaces/NS/serviceaccounts/NAME/token`, as
//! `pkg/registry/core/serviceaccount/storage/token.go`), and the simulator's own hooks:
//! `POST /sim/v1/issuer/rotate`, `/sim/v1/issuer/retire`, `/sim/v1/issuer/offline`
//! (`{"offline": true}`) and `/sim/v1/projected-token` (see [`crate::kubelet`]).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use http::{StatusCode, header};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::error::{Error, FieldError, Result};
use crate::issuer::Subject;
use crate::kubelet::Projection;

/// openidmetadata.go: both documents may be cached for an hour.
const CACHE_CONTROL: &str = "public, max-age=3600";

/// pkg/apis/authentication/validation: `MinTokenAgeSec` and `MaxTokenAgeSec`.
const MIN_TOKEN_AGE: i64 = 10 * 60;
const MAX_TOKEN_AGE: i64 = 1 << 32;

/// pkg/apis/authentication/v1/defaults.go: `expirationSeconds` defaults to an hour.
const DEFAULT_TOKEN_AGE: i64 = 3600;

fn offline() -> Response {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        "issuer offline (simulated)",
    )
        .into_response()
}

pub async fn openid_configuration(State(cluster): State<Arc<Cluster>>) -> Response {
    if cluster.issuer.offline() {
        return offline();
    }
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, CACHE_CONTROL),
        ],
        Json(cluster.issuer.discovery()),
    )
        .into_response()
}

pub async fn jwks(State(cluster): State<Arc<Cluster>>) -> Response {
    if cluster.issuer.offline() {
        return offline();
    }
    (
        [
            (header::CONTENT_TYPE, "application/jwk-set+json"),
            (header::CACHE_CONTROL, CACHE_CONTROL),
        ],
        Json(cluster.issuer.jwks()),
    )
        .into_response()
}

/// The ServiceAccount's uid, or 404 as the registry answers for a missing one.
fn service_account_uid(cluster: &Cluster, namespace: &str, name: &str) -> Result<String> {
    let rt = cluster
        .registry()
        .by_kind("v1", "ServiceAccount")
        .ok_or_else(Error::path_not_found)?;
    let sa = cluster
        .store
        .with(|s| s.get(&rt.key(), namespace, name))
        .ok_or_else(|| Error::not_found(&rt, name))?;
    Ok(sa["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn invalid(name: &str, field: &str, value: String, detail: &str) -> Error {
    Error::invalid(
        "authentication.k8s.io",
        "TokenRequest",
        name,
        vec![FieldError::invalid(field, value, detail.into())],
    )
}

/// `POST .../serviceaccounts/NAME/token` (token.go, `Create`): the request echoed with
/// `status.token` and `status.expirationTimestamp`, 201 Created.
pub fn token_request(
    cluster: &Cluster,
    namespace: &str,
    name: &str,
    mut req: Value,
) -> Result<Response> {
    if !req.is_object() {
        return Err(Error::bad_request("error decoding JSON: not an object"));
    }
    if let Some(n) = req["metadata"]["name"].as_str().filter(|n| !n.is_empty())
        && n != name
    {
        return Err(invalid(
            name,
            "metadata.name",
            format!("{n:?}"),
            "must match the service account name if specified",
        ));
    }
    let ttl = match &req["spec"]["expirationSeconds"] {
        Value::Null => DEFAULT_TOKEN_AGE,
        v => v
            .as_i64()
            .ok_or_else(|| Error::bad_request("spec.expirationSeconds: not an integer"))?,
    };
    if ttl < MIN_TOKEN_AGE {
        return Err(invalid(
            name,
            "spec.expirationSeconds",
            ttl.to_string(),
            "may not specify a duration less than 10 minutes",
        ));
    }
    if ttl > MAX_TOKEN_AGE {
        return Err(invalid(
            name,
            "spec.expirationSeconds",
            ttl.to_string(),
            "may not specify a duration larger than 2^32 seconds",
        ));
    }
    let mut audiences: Vec<String> = req["spec"]["audiences"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    if audiences.is_empty() {
        // token.go: no audiences → the API server's own (`--api-audiences`, which default
        // to the issuer).
        audiences.push(cluster.issuer.url.clone());
    }
    let uid = service_account_uid(cluster, namespace, name)?;
    let bound = &req["spec"]["boundObjectRef"];
    let pod = (bound["kind"] == "Pod").then(|| {
        let s = |k: &str| bound[k].as_str().unwrap_or_default().to_string();
        (s("name"), s("uid"))
    });
    let subject = Subject::ServiceAccount {
        namespace: namespace.into(),
        name: name.into(),
        uid,
        pod,
    };
    let now = chrono::Utc::now();
    let claims = cluster
        .issuer
        .claims(&subject, &audiences, now.timestamp(), ttl);
    let token = cluster.issuer.sign(&claims);
    let expires = now + chrono::Duration::seconds(ttl);
    req["apiVersion"] = json!("authentication.k8s.io/v1");
    req["kind"] = json!("TokenRequest");
    req["metadata"] = json!({"name": name, "namespace": namespace, "creationTimestamp": null});
    req["spec"]["audiences"] = json!(audiences);
    req["spec"]["expirationSeconds"] = json!(ttl);
    req["status"] = json!({
        "token": token,
        "expirationTimestamp": expires.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    });
    Ok((StatusCode::CREATED, Json(req)).into_response())
}

/// `POST /sim/v1/issuer/rotate`: a new signing key; old ones stay published.
pub async fn rotate(State(cluster): State<Arc<Cluster>>) -> Json<Value> {
    let kid = cluster.issuer.rotate();
    Json(json!({ "kid": kid }))
}

/// `POST /sim/v1/issuer/retire`: only the signing key stays published.
pub async fn retire(State(cluster): State<Arc<Cluster>>) -> Json<Value> {
    let retired = cluster.issuer.retire();
    Json(json!({ "kid": cluster.issuer.kid(), "retired": retired }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Offline {
    offline: bool,
}

/// `POST /sim/v1/issuer/offline` `{"offline": true|false}`: the discovery document and
/// JWKS answer 503 while offline (the API itself keeps working).
pub async fn set_offline(State(cluster): State<Arc<Cluster>>, body: axum::body::Bytes) -> Response {
    match serde_json::from_slice::<Offline>(&body) {
        Ok(o) => {
            cluster.issuer.set_offline(o.offline);
            Json(json!({ "offline": o.offline })).into_response()
        }
        Err(e) => Error::bad_request(format!("offline: {e}")).into_response(),
    }
}

/// `POST /sim/v1/projected-token`: writes a projected token (or a JWT-SVID) to a file as the
/// kubelet (or SPIFFE helper) would, at once and again before it expires; see
/// [`crate::kubelet`]. Answers the token written.
pub async fn projected_token(
    State(cluster): State<Arc<Cluster>>,
    body: axum::body::Bytes,
) -> Response {
    let projection: Projection = match serde_json::from_slice(&body) {
        Ok(p) => p,
        Err(e) => return Error::bad_request(format!("projected-token: {e}")).into_response(),
    };
    match crate::kubelet::project(&cluster, projection) {
        Ok(token) => Json(json!({ "token": token })).into_response(),
        Err(e) => e.into_response(),
    }
}
