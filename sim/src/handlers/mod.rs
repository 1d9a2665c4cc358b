//! HTTP surface of one simulated cluster: the router, authentication, and the dispatcher
//! that maps real API paths (`/api/v1/namespaces/{ns}/configmaps/{name}`,
//! `/apis/{group}/{version}/...`) and verbs onto reads, writes and watches.

mod discovery;
mod issuer;
mod openapi;
pub(crate) mod read;
mod sim_api;
mod table;
mod write;

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Query, Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use http::{HeaderMap, Method};

use crate::cluster::Cluster;
use crate::crd::{Registry, ResourceType};
use crate::error::{Error, Result};
use crate::query::Params;
use crate::rbac::{self, RbacUser};

/// The router serving one cluster on its own port.
pub fn router(cluster: Arc<Cluster>) -> Router {
    Router::new()
        .route("/version", get(discovery::version))
        .route("/api", get(discovery::api_versions))
        .route("/apis", get(discovery::api_groups))
        .route("/openapi/v2", get(openapi::v2))
        .route("/openapi/v3", get(openapi::v3_root))
        .route("/openapi/v3/{*gv}", get(openapi::v3_group_version))
        .route("/healthz", get(|| async { "ok" }))
        .route("/livez", get(|| async { "ok" }))
        .route("/readyz", get(|| async { "ok" }))
        .route("/sim/v1/push", post(sim_api::push))
        .route(
            "/.well-known/openid-configuration",
            get(issuer::openid_configuration),
        )
        .route("/openid/v1/jwks", get(issuer::jwks))
        .route("/sim/v1/issuer/rotate", post(issuer::rotate))
        .route("/sim/v1/issuer/retire", post(issuer::retire))
        .route("/sim/v1/issuer/offline", post(issuer::set_offline))
        .route("/sim/v1/projected-token", post(issuer::projected_token))
        .fallback(dispatch)
        .layer(middleware::from_fn_with_state(
            cluster.clone(),
            authenticate,
        ))
        .layer(tower_http::trace::TraceLayer::new_for_http())
        .with_state(cluster)
}

/// With RBAC enabled, every API request needs a known bearer token (the simulator's own
/// `/sim/` endpoints, health checks and the issuer's discovery documents stay open: a
/// cluster that publishes its issuer binds `system:service-account-issuer-discovery` to
/// `system:unauthenticated`, as the managed clusters' public issuers do).
async fn authenticate(
    State(cluster): State<Arc<Cluster>>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req.uri().path();
    let open = path.starts_with("/sim/")
        || matches!(
            path,
            "/healthz"
                | "/livez"
                | "/readyz"
                | "/.well-known/openid-configuration"
                | "/openid/v1/jwks"
        );
    if let (Some(authz), false) = (&cluster.authorizer, open) {
        let header = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok());
        match authz.authenticate(header) {
            Ok(user) => {
                req.extensions_mut().insert(user);
            }
            Err(e) => return e.into_response(),
        }
    }
    next.run(req).await
}

/// What a resource path names.
pub enum Target {
    /// `/apis/{group}/{version}` or `/api/v1`: an APIResourceList.
    ResourceList(String, String),
    Collection {
        rt: Arc<ResourceType>,
        ns: Option<String>,
    },
    Item {
        rt: Arc<ResourceType>,
        ns: Option<String>,
        name: String,
        sub: Option<String>,
    },
}

fn parse_target(registry: &Registry, path: &str) -> Result<Target> {
    let segs: Vec<&str> = path.trim_matches('/').split('/').collect();
    let (group, version, rest) = match segs.as_slice() {
        ["api", "v1", rest @ ..] => ("", "v1", rest),
        ["apis", g, v, rest @ ..] => (*g, *v, rest),
        _ => return Err(Error::path_not_found()),
    };
    let lookup = |plural: &str| {
        registry
            .lookup(group, version, plural)
            .ok_or_else(Error::path_not_found)
    };
    let item = |rt: Arc<ResourceType>, ns: Option<&str>, name: &str, sub: Option<&str>| {
        if rt.namespaced != ns.is_some() {
            return Err(Error::path_not_found());
        }
        Ok(Target::Item {
            rt,
            ns: ns.map(String::from),
            name: name.into(),
            sub: sub.map(String::from),
        })
    };
    let namespaced_plural = |p: &str| {
        registry
            .lookup(group, version, p)
            .is_some_and(|t| t.namespaced)
    };
    match rest {
        [] => {
            if registry
                .groups()
                .iter()
                .any(|(g, vs)| g == group && vs.iter().any(|v| v == version))
            {
                Ok(Target::ResourceList(group.into(), version.into()))
            } else {
                Err(Error::path_not_found())
            }
        }
        [plural] => Ok(Target::Collection {
            rt: lookup(plural)?,
            ns: None,
        }),
        ["namespaces", ns, plural] if namespaced_plural(plural) => Ok(Target::Collection {
            rt: lookup(plural)?,
            ns: Some((*ns).into()),
        }),
        ["namespaces", ns, plural, name] => item(lookup(plural)?, Some(ns), name, None),
        ["namespaces", ns, plural, name, sub] => item(lookup(plural)?, Some(ns), name, Some(sub)),
        [plural, name] => item(lookup(plural)?, None, name, None),
        [plural, name, sub] => item(lookup(plural)?, None, name, Some(sub)),
        _ => Err(Error::path_not_found()),
    }
}

fn verb(method: &Method, target: &Target, params: &Params) -> &'static str {
    let watch = params.get("watch").is_some_and(|w| w == "true" || w == "1");
    match (method, target) {
        (&Method::GET, Target::Collection { .. }) if watch => "watch",
        (&Method::GET, Target::Collection { .. }) => "list",
        (&Method::GET, _) => "get",
        (&Method::POST, _) => "create",
        (&Method::PUT, _) => "update",
        (&Method::PATCH, _) => "patch",
        (&Method::DELETE, Target::Collection { .. }) => "deletecollection",
        (&Method::DELETE, _) => "delete",
        _ => "unknown",
    }
}

async fn dispatch(
    State(cluster): State<Arc<Cluster>>,
    method: Method,
    uri: http::Uri,
    Query(params): Query<Params>,
    headers: HeaderMap,
    user: Option<axum::Extension<RbacUser>>,
    body: Bytes,
) -> Response {
    match route(
        &cluster,
        &method,
        uri.path(),
        &params,
        &headers,
        user.map(|u| u.0),
        body,
    )
    .await
    {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

/// A JSON or protobuf (kubectl's generators) request body as JSON.
fn decode_body(headers: &HeaderMap, body: &[u8]) -> Result<serde_json::Value> {
    let protobuf = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|c| c.to_str().ok())
        .is_some_and(|c| c.contains("protobuf"));
    if protobuf {
        crate::protobuf::decode(body)
    } else {
        serde_json::from_slice(body)
            .map_err(|e| Error::bad_request(format!("error decoding JSON: {e}")))
    }
}

async fn route(
    cluster: &Arc<Cluster>,
    method: &Method,
    path: &str,
    params: &Params,
    headers: &HeaderMap,
    user: Option<RbacUser>,
    body: Bytes,
) -> Result<Response> {
    let registry = cluster.registry();
    let target = parse_target(&registry, path)?;
    if let Target::ResourceList(g, v) = &target {
        return match *method {
            Method::GET => Ok(discovery::resource_list(cluster, g, v)),
            _ => Err(Error::method_not_allowed()),
        };
    }
    if let Target::Collection { rt, .. } = &target
        && rt.review
    {
        if *method != Method::POST {
            return Err(Error::method_not_allowed());
        }
        let body = decode_body(headers, &body)?;
        let answer = cluster.store.with(|s| {
            rbac::review(
                &registry,
                cluster.authorizer.as_ref(),
                s,
                user.as_ref(),
                body,
            )
        });
        return Ok((http::StatusCode::CREATED, axum::Json(answer)).into_response());
    }
    if let (Some(authz), Some(user)) = (&cluster.authorizer, &user) {
        let (rt, ns, name, sub) = match &target {
            Target::Collection { rt, ns } if *method == Method::GET => {
                (rt, ns, rbac::collection_name(params), None)
            }
            Target::Collection { rt, ns } => (rt, ns, None, None),
            Target::Item { rt, ns, name, sub } => (rt, ns, Some(name.clone()), sub.as_deref()),
            Target::ResourceList(..) => return Err(Error::path_not_found()),
        };
        let req = rbac::Request {
            verb: verb(method, &target, params),
            rt,
            subresource: sub,
            namespace: ns.as_deref(),
            name: name.as_deref(),
        };
        cluster.store.with(|s| authz.authorize(s, user, &req))?;
    }
    if let Target::Item {
        rt,
        ns: Some(ns),
        name,
        sub: Some(sub),
    } = &target
        && rt.group.is_empty()
        && rt.plural == "serviceaccounts"
        && sub == "token"
    {
        return match *method {
            Method::POST => issuer::token_request(cluster, ns, name, decode_body(headers, &body)?),
            _ => Err(Error::method_not_allowed()),
        };
    }
    if let Target::Item {
        rt, sub: Some(sub), ..
    } = &target
        && (sub != "status" || !rt.status_subresource)
    {
        return Err(Error::path_not_found());
    }
    if let (&Method::POST, Target::Collection { rt, .. }) = (method, &target)
        && rt.origin.as_ref().is_some_and(|o| o.terminating)
    {
        // customresource_handler.go, serveResource: no creates while the CRD's finalizer
        // deletes its objects.
        return Err(Error::api(
            405,
            "MethodNotAllowed",
            "create not allowed while custom resource definition is terminating".into(),
            Some(serde_json::json!({"group": rt.group, "kind": rt.plural})),
        ));
    }
    let ctx = write::Ctx {
        cluster,
        params,
        headers,
    };
    match (method.clone(), target) {
        (Method::GET, Target::Collection { rt, ns }) => {
            if verb(
                method,
                &Target::Collection {
                    rt: rt.clone(),
                    ns: ns.clone(),
                },
                params,
            ) == "watch"
            {
                crate::watch::serve(
                    cluster.clone(),
                    rt,
                    ns,
                    params,
                    read::wants_metadata(headers),
                )
            } else {
                read::list(cluster, &rt, ns.as_deref(), params, headers)
            }
        }
        (Method::GET, Target::Item { rt, ns, name, .. }) => {
            read::get(cluster, &rt, ns.as_deref(), &name, headers)
        }
        (Method::POST, Target::Collection { rt, ns }) => {
            write::create(&ctx, &rt, ns.as_deref(), &body)
        }
        (Method::PUT, Target::Item { rt, ns, name, sub }) => {
            write::update(&ctx, &rt, ns.as_deref(), &name, sub.is_some(), &body)
        }
        (Method::PATCH, Target::Item { rt, ns, name, sub }) => {
            write::patch(&ctx, &rt, ns.as_deref(), &name, sub.is_some(), &body)
        }
        (
            Method::DELETE,
            Target::Item {
                rt,
                ns,
                name,
                sub: None,
            },
        ) => write::delete(&ctx, &rt, ns.as_deref(), &name, &body),
        (Method::DELETE, Target::Collection { rt, ns }) => {
            write::delete_collection(&ctx, &rt, ns.as_deref())
        }
        _ => Err(Error::method_not_allowed()),
    }
}
