//! Approval requests (gates with `spec.approval`): `GET /api/v1/approvals`,
//! `GET /api/v1/approvals/{id}`, `POST /api/v1/approvals/{id}/approve|reject`,
//! `DELETE /api/v1/approvals/{id}` (the requester withdraws it).

use axum::Json;
use axum::extract::{Path, State};
use axum::response::IntoResponse;

use super::AppState;
use super::extract::{ApiActor, Body, Query, ReasonQuery};
use super::overrides::parse_id;
use crate::Result;
use crate::service::approvals::ApprovalQuery;
use fleetgate_api_types::{ApprovalDecision, ApprovalRequest};

/// List approval requests, newest first (`status=pending` for those waiting).
#[utoipa::path(get, path = "/api/v1/approvals", tag = "approvals", params(ApprovalQuery),
    responses(
        (status = 200, description = "A page of approval requests", body = crate::schema::pages::ApprovalPage),
        (status = 400, description = "Bad query or cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Bad status or limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<ApprovalQuery>,
) -> Result<impl IntoResponse> {
    Ok(Json(s.service.list_approval_requests(&actor, &q).await?))
}

/// One approval request with the approvals given.
#[utoipa::path(get, path = "/api/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "Request id (UUID)")),
    responses(
        (status = 200, description = "The request", body = ApprovalRequest),
        (status = 400, description = "Malformed id", body = crate::error::ErrorBody),
        (status = 404, description = "No such request", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(id): Path<String>,
) -> Result<Json<ApprovalRequest>> {
    let id = parse_id(&id)?;
    Ok(Json(s.service.get_approval_request(&actor, id).await?))
}

/// Approve a pending request (operator or higher over the gate and its clusters, in the
/// gate's `approval.from`, not the requester). The last approval needed creates the
/// override (`overrideId`).
#[utoipa::path(post, path = "/api/v1/approvals/{id}/approve", tag = "approvals",
    params(("id" = String, Path, description = "Request id (UUID)")),
    request_body = ApprovalDecision,
    responses(
        (status = 200, description = "Approved (status approved once enough approvals)", body = ApprovalRequest),
        (status = 403, description = "The requester, not an approver, or out of scope", body = crate::error::ErrorBody),
        (status = 404, description = "No such request", body = crate::error::ErrorBody),
        (status = 409, description = "Not pending any more, expired, or already approved by this person", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn approve(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<ApprovalRequest>> {
    let id = parse_id(&id)?;
    let d: ApprovalDecision = body.parse_or_default()?;
    Ok(Json(
        s.service
            .approve_request(&actor, id, d.reason.as_deref())
            .await?,
    ))
}

/// Reject a pending request (a reason is required).
#[utoipa::path(post, path = "/api/v1/approvals/{id}/reject", tag = "approvals",
    params(("id" = String, Path, description = "Request id (UUID)")),
    request_body = ApprovalDecision,
    responses(
        (status = 200, description = "Rejected", body = ApprovalRequest),
        (status = 403, description = "Not an approver", body = crate::error::ErrorBody),
        (status = 404, description = "No such request", body = crate::error::ErrorBody),
        (status = 409, description = "Not pending any more", body = crate::error::ErrorBody),
        (status = 422, description = "No reason", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn reject(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(id): Path<String>,
    body: Body,
) -> Result<Json<ApprovalRequest>> {
    let id = parse_id(&id)?;
    let d: ApprovalDecision = body.parse_or_default()?;
    Ok(Json(
        s.service
            .reject_request(&actor, id, d.reason.as_deref().unwrap_or(""))
            .await?,
    ))
}

/// Withdraw a pending request (its requester, or an admin).
#[utoipa::path(delete, path = "/api/v1/approvals/{id}", tag = "approvals",
    params(("id" = String, Path, description = "Request id (UUID)"), ReasonQuery),
    responses(
        (status = 200, description = "Cancelled", body = ApprovalRequest),
        (status = 403, description = "Neither the requester nor an admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such request", body = crate::error::ErrorBody),
        (status = 409, description = "Not pending any more", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn cancel(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(id): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<Json<ApprovalRequest>> {
    let id = parse_id(&id)?;
    Ok(Json(
        s.service
            .cancel_request(&actor, id, q.reason.as_deref())
            .await?,
    ))
}
