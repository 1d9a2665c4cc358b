//! `GET /api/v1/audit`: the audit log, filtered and paginated.

use axum::Json;
use axum::extract::State;
use axum::response::IntoResponse;

use super::AppState;
use super::extract::{ApiActor, Query};
use crate::Result;
use crate::service::audit::AuditQuery;

/// Audit entries, newest first.
#[utoipa::path(get, path = "/api/v1/audit", tag = "audit", params(AuditQuery),
    responses(
        (status = 200, description = "A page of audit entries", body = crate::schema::pages::AuditPage),
        (status = 400, description = "Bad query or cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit or time range", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(q): Query<AuditQuery>,
) -> Result<impl IntoResponse> {
    Ok(Json(s.service.list_audit(&actor, &q).await?))
}
