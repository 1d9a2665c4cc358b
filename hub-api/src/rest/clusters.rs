//! `/api/v1/clusters`: register (spoke token shown once), list, get,
//! relabel, delete, rotate the spoke token.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::AppState;
use super::extract::{ApiActor, ApiAdmin, Body, Query, ReasonQuery};
use crate::Result;
use crate::service::PageRequest;
use crate::service::types::{Cluster, ClusterWithToken, RegisterCluster, Relabel};

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
/// shown only this once.
#[utoipa::path(post, path = "/api/v1/clusters", tag = "clusters", params(ReasonQuery),
    request_body = RegisterCluster,
    responses(
        (status = 201, description = "Registered", body = ClusterWithToken),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 409, description = "Name taken", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid name or labels (field named)", body = crate::error::ErrorBody),
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
