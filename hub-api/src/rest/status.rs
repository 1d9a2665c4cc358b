//! Status views: `GET /api/v1/clusters/{name}/status`, the fleet summary
//! `GET /api/v1/status` and every cluster's gates `GET /api/v1/status/clusters`.

use axum::Json;
use axum::extract::{Path, State};

use super::state::AppState;
use serde::Deserialize;

use super::extract::{ApiActor, Query};
use crate::Result;
use crate::service::fleet::{ClusterStatus, FleetStatus, FleetSummary};

/// A cluster's gates now (state, reason, next transition) and its governed
/// objects, with which are held.
#[utoipa::path(get, path = "/api/v1/clusters/{name}/status", tag = "status",
    params(("name" = String, Path, description = "Cluster name")),
    responses(
        (status = 200, description = "Cluster status", body = ClusterStatus),
        (status = 404, description = "No such cluster", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn cluster(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<ClusterStatus>> {
    Ok(Json(s.service.cluster_status(&actor, &name).await?))
}

/// Fleet summary: clusters open/closed/with held changes, per-gate counts,
/// disconnected spokes.
#[utoipa::path(get, path = "/api/v1/status", tag = "status",
    responses(
        (status = 200, description = "Fleet summary", body = FleetSummary),
    ), security(("bearer" = [])))]
pub async fn fleet(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
) -> Result<Json<FleetSummary>> {
    Ok(Json(s.service.fleet_summary(&actor).await?))
}

/// `GET /api/v1/status/clusters` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FleetStatusQuery {
    /// Only clusters whose labels match (kubectl syntax, e.g. `env=prod,tier in (a,b)`).
    pub selector: Option<String>,
    /// Clusters per page, 1..=1000, by name; absent: every cluster.
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// The fleet in one response: the fleet summary and, per cluster (by name),
/// each applying gate's state, reason, next transition and held count — no
/// objects (see the per-cluster status). With `limit`, a page of clusters (by name)
/// and `nextCursor`; the summary always counts the whole fleet.
#[utoipa::path(get, path = "/api/v1/status/clusters", tag = "status", params(FleetStatusQuery),
    responses(
        (status = 200, description = "Fleet summary and every cluster's gates", body = FleetStatus),
        (status = 400, description = "Unknown query parameter or bad cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid selector or limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn clusters(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<FleetStatusQuery>,
) -> Result<Json<FleetStatus>> {
    let page = crate::service::PageRequest {
        limit: q.limit,
        cursor: q.cursor,
    };
    Ok(Json(
        s.service
            .fleet_status_page(&actor, q.selector.as_deref(), &page)
            .await?,
    ))
}
