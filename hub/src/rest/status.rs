//! Status views: `GET /api/v1/clusters/{name}/status` and the fleet summary
//! `GET /api/v1/status`.

use axum::Json;
use axum::extract::{Path, State};

use super::AppState;
use super::extract::ApiActor;
use crate::Result;
use crate::service::status::{ClusterStatus, FleetSummary};

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
