//! `/api/v1/access-policies` (unscoped admins only): list, get, apply
//! (PUT: create or replace, YAML or JSON `kind: AccessPolicy`), delete.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};

use super::AppState;
use super::extract::{ApiAdmin, Body, Query, ReasonQuery, if_match};
use crate::Result;
use crate::service::{Page, PageRequest};
use fleetgate_api_types::{AccessPolicy, AccessPolicyRecord};

/// List access policies (unscoped admin).
#[utoipa::path(get, path = "/api/v1/access-policies", tag = "access", params(PageRequest),
    responses(
        (status = 200, description = "A page of access policies, by name", body = crate::schema::pages::AccessPolicyPage),
        (status = 400, description = "Bad cursor", body = crate::error::ErrorBody),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Query(page): Query<PageRequest>,
) -> Result<Json<Page<AccessPolicyRecord>>> {
    Ok(Json(s.service.list_access_policies(&actor, &page).await?))
}

/// Get one access policy (unscoped admin).
#[utoipa::path(get, path = "/api/v1/access-policies/{name}", tag = "access",
    params(("name" = String, Path, description = "Policy name")),
    responses(
        (status = 200, description = "The policy", body = AccessPolicyRecord),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such policy", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<AccessPolicyRecord>> {
    Ok(Json(s.service.get_access_policy(&actor, &name).await?))
}

/// Create or replace an access policy (unscoped admin). With
/// `If-Match: "<version>"`, 409 if it changed meanwhile. 201 when created.
#[utoipa::path(put, path = "/api/v1/access-policies/{name}", tag = "access",
    params(("name" = String, Path, description = "Policy name"),
        ("If-Match" = Option<String>, Header, description = "Expected version"),
        ReasonQuery),
    request_body(description = "AccessPolicy manifest (JSON or YAML)",
        content((AccessPolicy = "application/json"), (String = "application/yaml"))),
    responses(
        (status = 200, description = "Replaced (or unchanged)", body = AccessPolicyRecord),
        (status = 201, description = "Created", body = AccessPolicyRecord),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 409, description = "Version conflict", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid manifest (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn apply(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<(StatusCode, Json<AccessPolicyRecord>)> {
    let expected = if_match(&headers)?;
    let policy: AccessPolicy = body.parse()?;
    let (rec, created) = s
        .service
        .apply_access_policy(&actor, &name, policy, expected, q.reason.as_deref())
        .await?;
    let status = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(rec)))
}

/// Delete an access policy (unscoped admin).
#[utoipa::path(delete, path = "/api/v1/access-policies/{name}", tag = "access",
    params(("name" = String, Path, description = "Policy name"), ReasonQuery),
    responses(
        (status = 204, description = "Deleted"),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such policy", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
) -> Result<StatusCode> {
    s.service
        .delete_access_policy(&actor, &name, q.reason.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}
