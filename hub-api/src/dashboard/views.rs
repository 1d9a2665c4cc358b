//! Read endpoints the dashboard needs beyond the REST API, each one request
//! per page: who am I, the fleet grid (every gate on every cluster), and a
//! gate's page (rules in words, 7-day preview, overrides, clusters in scope,
//! its rollout).
//! They only compose service-layer reads.

use axum::Json;
use axum::extract::{Path, State};

use super::fleet_page::{FleetGridPage, FleetPageQuery};
use crate::Result;
use crate::rest::AppState;
use crate::rest::extract::{ApiActor, Caller, Query};
use crate::service::overrides::OverrideQuery;
use crate::service::page::MAX_LIMIT;

pub use fleetgate_api_types::dashboard::{GateView, WhoAmI};

/// Who holds the presented token; the dashboard shows actions by role.
#[utoipa::path(get, path = "/api/v1/whoami", tag = "dashboard",
    responses(
        (status = 200, description = "The token's name and role", body = WhoAmI),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn whoami(Caller(who): Caller) -> Json<WhoAmI> {
    Json(WhoAmI {
        name: who.actor.name,
        role: who.actor.role,
        identity: who.identity,
        csrf_token: who.csrf,
    })
}

/// Every gate on every cluster now, with reasons, next transitions,
/// connections and held counts: filtered, ordered, grouped and paged on the server
/// (`limit`, `cursor`, `filter`, `gate`, `state`, `sort`, `group`, `collapsed`), with the
/// counts over every cluster the caller sees. Without `limit`, every row.
#[utoipa::path(get, path = "/api/v1/dashboard/fleet", tag = "dashboard", params(FleetPageQuery),
    responses(
        (status = 200, description = "A page of the clusters x gates grid", body = FleetGridPage),
        (status = 400, description = "Unknown query parameter or bad cursor", body = crate::error::ErrorBody),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit, state, sort or gate (parameter named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn fleet(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<FleetPageQuery>,
) -> Result<Json<FleetGridPage>> {
    Ok(Json(s.service.fleet_grid_page(&actor, &q).await?))
}

/// The gate, its rules in words, its next 7 days, its overrides and its
/// clusters.
#[utoipa::path(get, path = "/api/v1/dashboard/gates/{name}", tag = "dashboard",
    params(("name" = String, Path, description = "Gate name")),
    responses(
        (status = 200, description = "Everything the gate page shows", body = GateView),
        (status = 401, description = "Missing or invalid token", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn gate(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<GateView>> {
    let record = s.service.get_gate(&actor, &name).await?;
    let parsed = fleetgate_policy::parse_gate_json(record.manifest.clone())
        .map_err(|e| crate::Error::Internal(format!("stored gate '{name}': {e}")))?;
    let compiled = crate::service::gates::compile(&parsed)?;
    let preview = s
        .service
        .preview_gate(&actor, &name, None, None, None)
        .await?;
    let overrides = s
        .service
        .list_overrides(
            &actor,
            &OverrideQuery {
                gate: Some(name.clone()),
                limit: Some(MAX_LIMIT),
                ..OverrideQuery::default()
            },
        )
        .await?
        .items;
    let clusters = s.service.gate_clusters(&actor, &name).await?;
    let rollout = match s.service.rollout_status(&actor, &name).await {
        Ok(r) => Some(r),
        Err(crate::Error::NotFound { .. }) => None,
        Err(e) => return Err(e),
    };
    let may_operate = clusters.iter().any(|c| c.may_operate);
    Ok(Json(GateView {
        may_operate,
        gate: record,
        rules: compiled.describe(),
        time_zone: compiled.time_zone().name().to_string(),
        preview,
        overrides,
        clusters,
        rollout,
    }))
}
