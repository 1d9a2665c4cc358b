//! `/api/v1/clusters`: register (spoke token shown once, or bound to an issuer),
//! list, get, relabel, delete, rotate the spoke token, replace pinned issuer keys.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::extract::{ApiActor, ApiAdmin, Body, Query, ReasonQuery};
use super::state::AppState;
use crate::Result;
use crate::service::PageRequest;
use crate::service::types::{Cluster, ClusterWithToken, RegisterCluster, Relabel, SetClusterJwks};

/// Cluster list query.
#[derive(Debug, Clone, Default, serde::Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ClusterQuery {
    /// Only clusters whose labels match this selector (kubectl syntax:
    /// `env=prod`, `env!=dev`, `tier in (a,b)`, `gpu`, `!legacy`).
    pub selector: Option<String>,
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// List clusters with labels and connection state.
#[utoipa::path(get, path = "/api/v1/clusters", tag = "clusters", params(ClusterQuery),
    responses(
        (status = 200, description = "A page of clusters", body = crate::schema::pages::ClusterPage),
        (status = 400, description = "Bad cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit or selector", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<ClusterQuery>,
) -> Result<impl IntoResponse> {
    let page = PageRequest {
        limit: q.limit,
        cursor: q.cursor,
    };
    Ok(Json(
        s.service
            .list_clusters_selected(&actor, &page, q.selector.as_deref())
            .await?,
    ))
}

/// Get a cluster.
#[utoipa::path(get, path = "/api/v1/clusters/{name}", tag = "clusters",
    params(("name" = String, Path, description = "Cluster name")),
    responses(
        (status = 200, description = "The cluster", body = Cluster),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<Cluster>> {
    Ok(Json(s.service.get_cluster(&actor, &name).await?))
}

/// Register a cluster (admin). The response carries the spoke token; it is
/// shown only this once. With `issuer`, the cluster's spoke signs in with the cluster's
/// own JWT (a projected ServiceAccount token or a SPIFFE JWT-SVID) and no token is issued.
#[utoipa::path(post, path = "/api/v1/clusters", tag = "clusters", params(ReasonQuery),
    request_body = RegisterCluster,
    responses(
        (status = 201, description = "Registered", body = ClusterWithToken),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 409, description = "Name taken", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid name, labels, issuer, serviceAccount, spiffeId or jwks (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn register(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Query(q): Query<ReasonQuery>,
    body: Body,
) -> Result<(StatusCode, Json<ClusterWithToken>)> {
    let req: RegisterCluster = body.parse()?;
    let out = s
        .service
        .register_cluster(&actor, req, q.reason.as_deref())
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Replace a cluster's labels (admin).
#[utoipa::path(put, path = "/api/v1/clusters/{name}/labels", tag = "clusters",
    params(("name" = String, Path, description = "Cluster name"), ReasonQuery),
    request_body = Relabel,
    responses(
        (status = 200, description = "Relabelled", body = Cluster),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid labels (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn relabel(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
    body: Body,
) -> Result<Json<Cluster>> {
    let req: Relabel = body.parse()?;
    Ok(Json(
        s.service
            .relabel_cluster(&actor, &name, req, q.reason.as_deref())
            .await?,
    ))
}

/// Delete a cluster (admin); its spoke token stops working.
#[utoipa::path(delete, path = "/api/v1/clusters/{name}", tag = "clusters",
    params(("name" = String, Path, description = "Cluster name"), ReasonQuery),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<StatusCode> {
    s.service
        .delete_cluster(&actor, &name, q.reason.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Issue a new spoke token (admin); the old one stops working at once.
#[utoipa::path(post, path = "/api/v1/clusters/{name}/rotate-token", tag = "clusters",
    params(("name" = String, Path, description = "Cluster name"), ReasonQuery),
    responses(
        (status = 200, description = "New token (shown once)", body = ClusterWithToken),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn rotate_token(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<Json<ClusterWithToken>> {
    Ok(Json(
        s.service
            .rotate_cluster_token(&actor, &name, q.reason.as_deref())
            .await?,
    ))
}

/// Replace the pinned keys of a cluster registered with an issuer (admin), after the
/// cluster rotated its service-account signing key; `"jwks": null` goes back to OIDC
/// discovery. Connected spokes stay connected.
#[utoipa::path(put, path = "/api/v1/clusters/{name}/jwks", tag = "clusters",
    params(("name" = String, Path, description = "Cluster name"), ReasonQuery),
    request_body = SetClusterJwks,
    responses(
        (status = 200, description = "Keys replaced", body = Cluster),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
        (status = 422, description = "Not a JWKS, or a cluster registered with a token (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn set_jwks(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
    body: Body,
) -> Result<Json<Cluster>> {
    let req: SetClusterJwks = body.parse()?;
    Ok(Json(
        s.service
            .set_cluster_jwks(&actor, &name, req, q.reason.as_deref())
            .await?,
    ))
}
