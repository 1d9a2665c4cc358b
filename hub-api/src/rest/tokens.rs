//! `/api/v1/tokens` (admin only): create (secret shown once), list, revoke.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::IntoResponse;

use super::AppState;
use super::extract::{ApiAdmin, Body, Query, ReasonQuery};
use super::overrides::parse_id;
use crate::Result;
use crate::service::PageRequest;
use crate::service::types::{ApiToken, ApiTokenWithSecret, CreateToken};

/// List API tokens (admin).
#[utoipa::path(get, path = "/api/v1/tokens", tag = "tokens", params(PageRequest),
    responses(
        (status = 200, description = "A page of tokens", body = crate::schema::pages::TokenPage),
        (status = 400, description = "Bad cursor", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Query(page): Query<PageRequest>,
) -> Result<impl IntoResponse> {
    Ok(Json(s.service.list_tokens(&actor, &page).await?))
}

/// Create an API token with a role (admin); the secret is shown only once.
#[utoipa::path(post, path = "/api/v1/tokens", tag = "tokens", params(ReasonQuery),
    request_body = CreateToken,
    responses(
        (status = 201, description = "Created", body = ApiTokenWithSecret),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 409, description = "Name taken", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid name or role (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Query(q): Query<ReasonQuery>,
    body: Body,
) -> Result<(StatusCode, Json<ApiTokenWithSecret>)> {
    let req: CreateToken = body.parse()?;
    let out = s
        .service
        .create_token(&actor, req, q.reason.as_deref())
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// Revoke an API token (admin).
#[utoipa::path(delete, path = "/api/v1/tokens/{id}", tag = "tokens",
    params(("id" = String, Path, description = "Token id (UUID)"), ReasonQuery),
    responses(
        (status = 200, description = "Revoked", body = ApiToken),
        (status = 400, description = "Malformed id", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such token", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn revoke(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(id): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<Json<ApiToken>> {
    let id = parse_id(&id)?;
    Ok(Json(
        s.service
            .revoke_token(&actor, id, q.reason.as_deref())
            .await?,
    ))
}
