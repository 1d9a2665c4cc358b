//! Fleet freezes (the emergency stop): `POST /api/v1/freezes` (freeze),
//! `GET /api/v1/freezes` (list), `POST /api/v1/freezes/end` (unfreeze).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::extract::{ApiActor, Body, Query};
use crate::Result;
use crate::service::freezes::{FreezeRecord, FreezeRequest, UnfreezeRequest};

/// `GET /api/v1/freezes?all=`.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct FreezeQuery {
    /// Include ended and expired freezes (default: those in force or starting later).
    pub all: Option<bool>,
}

/// Freeze clusters (admin; a team's admin: its clusters): `{"reason": "INC-123", "for": "2h",
/// "clusters": {"names": [...], "selector": {...}}}`. Every gate on them closes above
/// every override, and their spokes suspend every Kustomization/HelmRelease no gate
/// covers. Without `clusters`, every cluster (a scoped principal: those in its scope);
/// without `for`/`until`, until unfrozen.
#[utoipa::path(post, path = "/api/v1/freezes", tag = "freezes",
    request_body = FreezeRequest,
    responses(
        (status = 201, description = "Frozen", body = FreezeRecord),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin, or no selected cluster in scope", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid reason, duration or clusters (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn freeze(
    State(s): State<AppState>,
    // The service decides who may (admin, within its scope).
    ApiActor(actor): ApiActor,
    body: Body,
) -> Result<(StatusCode, Json<FreezeRecord>)> {
    let req: FreezeRequest = body.parse()?;
    Ok((
        StatusCode::CREATED,
        Json(s.service.freeze(&actor, req).await?),
    ))
}

/// List freezes, newest first: those in force or starting later unless `all=true`.
#[utoipa::path(get, path = "/api/v1/freezes", tag = "freezes", params(FreezeQuery),
    responses(
        (status = 200, description = "Freezes", body = Vec<FreezeRecord>),
        (status = 400, description = "Bad query", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<FreezeQuery>,
) -> Result<Json<Vec<FreezeRecord>>> {
    Ok(Json(
        s.service
            .list_freezes(&actor, q.all.unwrap_or(false))
            .await?,
    ))
}

/// Unfreeze (admin, within its scope): `{"reason": "...", "id": "..."}` ends the freeze named, or
/// without `id` every freeze in force the caller may end. Rollout gates reopen through
/// their waves.
#[utoipa::path(post, path = "/api/v1/freezes/end", tag = "freezes",
    request_body = UnfreezeRequest,
    responses(
        (status = 200, description = "The freezes ended", body = Vec<FreezeRecord>),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Not an admin, or the freeze covers clusters outside the caller's scope", body = crate::error::ErrorBody),
        (status = 409, description = "Nothing in force to end, or a freeze made in a cluster", body = crate::error::ErrorBody),
        (status = 422, description = "Missing reason", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn unfreeze(
    State(s): State<AppState>,
    // The service decides who may (admin, within its scope).
    ApiActor(actor): ApiActor,
    body: Body,
) -> Result<Json<Vec<FreezeRecord>>> {
    let req: UnfreezeRequest = body.parse()?;
    Ok(Json(s.service.unfreeze(&actor, req).await?))
}
