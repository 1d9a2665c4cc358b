//! Overrides: `POST /api/v1/gates/{name}/open|close`, `GET /api/v1/overrides`,
//! `DELETE /api/v1/overrides/{id}` (cancel).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;
use fleetgate_policy::GateState;
use uuid::Uuid;

use super::AppState;
use super::extract::{ApiActor, ApiOperator, Body, Query, ReasonQuery};
use crate::service::overrides::{OverrideOutcome, OverrideQuery};
use crate::service::types::{OverrideRecord, OverrideRequest};
use crate::{Error, Result};

async fn create(
    s: AppState,
    actor: crate::service::Actor,
    gate: String,
    state: GateState,
    body: Body,
) -> Result<(StatusCode, Json<OverrideOutcome>)> {
    let req: OverrideRequest = body.parse()?;
    let outcome = s
        .service
        .request_override(&actor, &gate, state, req)
        .await?;
    let status = match outcome {
        OverrideOutcome::Created(_) => StatusCode::CREATED,
        OverrideOutcome::Pending(_) => StatusCode::ACCEPTED,
    };
    Ok((status, Json(outcome)))
}

/// Open a gate by override (operator): `{"for": "1h", "reason": "...",
/// "clusters": {"names": [...], "selector": {...}}, "ticket": "CHG-1"}`; without
/// `clusters`, for the gate's whole scope; without `for`, until cancelled. Through a
/// gate with `spec.approval` the answer is 202 with a pending request, unless an admin
/// sends `"emergency": true` (break-glass).
#[utoipa::path(post, path = "/api/v1/gates/{name}/open", tag = "overrides",
    params(("name" = String, Path, description = "Gate name")),
    request_body = OverrideRequest,
    responses(
        (status = 201, description = "Override created", body = OverrideRecord),
        (status = 202, description = "The gate requires approval (spec.approval): a pending request", body = fleetgate_api_types::ApprovalRequest),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid duration, reason or clusters (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn open(
    State(s): State<AppState>,
    ApiOperator(actor): ApiOperator,
    Path(gate): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<OverrideOutcome>)> {
    create(s, actor, gate, GateState::Open, body).await
}

/// Close a gate by override (operator); same body as open.
#[utoipa::path(post, path = "/api/v1/gates/{name}/close", tag = "overrides",
    params(("name" = String, Path, description = "Gate name")),
    request_body = OverrideRequest,
    responses(
        (status = 201, description = "Override created", body = OverrideRecord),
        (status = 202, description = "The gate requires approval (spec.approval): a pending request", body = fleetgate_api_types::ApprovalRequest),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid duration, reason or clusters (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn close(
    State(s): State<AppState>,
    ApiOperator(actor): ApiOperator,
    Path(gate): Path<String>,
    body: Body,
) -> Result<(StatusCode, Json<OverrideOutcome>)> {
    create(s, actor, gate, GateState::Closed, body).await
}

/// List overrides, newest first: live ones (active now or starting later)
/// unless `all=true`.
#[utoipa::path(get, path = "/api/v1/overrides", tag = "overrides", params(OverrideQuery),
    responses(
        (status = 200, description = "A page of overrides", body = crate::schema::pages::OverridePage),
        (status = 400, description = "Bad query or cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<OverrideQuery>,
) -> Result<impl IntoResponse> {
    Ok(Json(s.service.list_overrides(&actor, &q).await?))
}

/// Cancel an override (operator).
#[utoipa::path(delete, path = "/api/v1/overrides/{id}", tag = "overrides",
    params(("id" = String, Path, description = "Override id (UUID)"), ReasonQuery),
    responses(
        (status = 200, description = "Cancelled", body = OverrideRecord),
        (status = 400, description = "Malformed id", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such override", body = crate::error::ErrorBody),
        (status = 409, description = "Already cancelled or expired", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn cancel(
    State(s): State<AppState>,
    ApiOperator(actor): ApiOperator,
    Path(id): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<Json<OverrideRecord>> {
    let id = parse_id(&id)?;
    Ok(Json(
        s.service
            .cancel_override(&actor, id, q.reason.as_deref())
            .await?,
    ))
}

/// A UUID path segment; 400 naming `id` otherwise.
pub(super) fn parse_id(id: &str) -> Result<Uuid> {
    Uuid::parse_str(id).map_err(|_| Error::bad_request("id", format!("'{id}' is not a UUID")))
}
