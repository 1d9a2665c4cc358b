//! `/api/v1/gates`: CRUD with ETag/If-Match, preview, and opening/closing by
//! override (the override routes live in `overrides.rs`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::header::ETAG;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;

use super::extract::{ApiActor, ApiAdmin, Body, Query, ReasonQuery, if_match};
use super::state::AppState;
use crate::schema::preview::PreviewDoc;
use crate::service::PageRequest;
use crate::service::gates::impact::DryRun;
use crate::service::types::GateRecord;
use crate::{Error, Result};

fn with_etag(status: StatusCode, rec: GateRecord) -> Response {
    let etag = HeaderValue::from_str(&format!("\"{}\"", rec.version));
    let mut resp = (status, Json(rec)).into_response();
    if let Ok(v) = etag {
        resp.headers_mut().insert(ETAG, v);
    }
    resp
}

/// List gates.
#[utoipa::path(get, path = "/api/v1/gates", tag = "gates", params(PageRequest),
    responses(
        (status = 200, description = "A page of gates", body = crate::schema::pages::GatePage),
        (status = 400, description = "Bad cursor", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Query(page): Query<PageRequest>,
) -> Result<impl IntoResponse> {
    Ok(Json(s.service.list_gates(&actor, &page).await?))
}

/// Get a gate (with its version as ETag).
#[utoipa::path(get, path = "/api/v1/gates/{name}", tag = "gates",
    params(("name" = String, Path, description = "Gate name")),
    responses(
        (status = 200, description = "The gate", body = GateRecord,
            headers(("ETag" = String, description = "The gate's version, quoted"))),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Response> {
    Ok(with_etag(
        StatusCode::OK,
        s.service.get_gate(&actor, &name).await?,
    ))
}

/// `?reason=` and `?dryRun=` on gate writes.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct GateWriteQuery {
    /// Why (recorded in the audit log).
    pub reason: Option<String>,
    /// `true`: validate and answer 200 with the impact preview (clusters added and removed,
    /// states and transitions in the coming 7 days, the Flux objects it would govern and
    /// hold now); nothing is written or audited.
    pub dry_run: Option<bool>,
}

/// Create a gate (admin). Body: a Gate manifest as JSON or YAML
/// (`Content-Type: application/yaml`). With `?dryRun=true`: the impact preview instead.
#[utoipa::path(post, path = "/api/v1/gates", tag = "gates", params(GateWriteQuery),
    request_body(description = "Gate manifest (JSON or YAML)",
        content((crate::schema::gate::GateManifest = "application/json"), (String = "application/yaml"))),
    responses(
        (status = 201, description = "Created", body = GateRecord,
            headers(("ETag" = String, description = "The gate's version, quoted"))),
        (status = 200, description = "Dry run: the impact preview, nothing written",
            body = fleetgate_api_types::impact::GateImpact),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 409, description = "Name taken", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid manifest (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Query(q): Query<GateWriteQuery>,
    body: Body,
) -> Result<Response> {
    let gate = body.gate()?;
    if q.dry_run == Some(true) {
        let impact = s.service.gate_impact(&actor, gate, DryRun::Create).await?;
        return Ok(Json(impact).into_response());
    }
    let rec = s
        .service
        .create_gate(&actor, gate, q.reason.as_deref())
        .await?;
    Ok(with_etag(StatusCode::CREATED, rec))
}

/// Replace a gate (admin). With `If-Match: "<version>"` the replace fails
/// with 409 if someone else changed the gate meanwhile. With `?dryRun=true`: the impact
/// preview against the stored version instead.
#[utoipa::path(put, path = "/api/v1/gates/{name}", tag = "gates",
    params(("name" = String, Path, description = "Gate name"),
        ("If-Match" = Option<String>, Header, description = "Expected version (ETag)"),
        GateWriteQuery),
    request_body(description = "Gate manifest (JSON or YAML)",
        content((crate::schema::gate::GateManifest = "application/json"), (String = "application/yaml"))),
    responses(
        (status = 200, description = "Replaced (with `?dryRun=true`: a GateImpact, nothing written)", body = GateRecord,
            headers(("ETag" = String, description = "The new version, quoted"))),
        (status = 400, description = "Malformed body or If-Match", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
        (status = 409, description = "Version conflict", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid manifest (field named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn replace(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<GateWriteQuery>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response> {
    let expected = if_match(&headers)?;
    let gate = body.gate()?;
    if q.dry_run == Some(true) {
        let dry = DryRun::Replace {
            name: &name,
            if_match: expected,
        };
        let impact = s.service.gate_impact(&actor, gate, dry).await?;
        return Ok(Json(impact).into_response());
    }
    let rec = s
        .service
        .replace_gate(&actor, &name, gate, expected, q.reason.as_deref())
        .await?;
    Ok(with_etag(StatusCode::OK, rec))
}

/// Delete a gate and its overrides (admin).
#[utoipa::path(delete, path = "/api/v1/gates/{name}", tag = "gates",
    params(("name" = String, Path, description = "Gate name"),
        ("If-Match" = Option<String>, Header, description = "Expected version (ETag)"),
        ReasonQuery),
    responses(
        (status = 204, description = "Deleted"),
        (status = 400, description = "Malformed If-Match", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate", body = crate::error::ErrorBody),
        (status = 409, description = "Version conflict", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<ReasonQuery>,
    headers: HeaderMap,
) -> Result<StatusCode> {
    let expected = if_match(&headers)?;
    s.service
        .delete_gate(&actor, &name, expected, q.reason.as_deref())
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Preview query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// Start (RFC 3339; default now).
    pub from: Option<String>,
    /// End (RFC 3339; default from + 7 days; at most 366 days after from).
    pub to: Option<String>,
    /// Include this cluster's live overrides.
    pub cluster: Option<String>,
}

fn instant(field: &str, v: Option<&str>) -> Result<Option<DateTime<Utc>>> {
    v.map(|s| {
        DateTime::parse_from_rfc3339(s)
            .map(|t| t.with_timezone(&Utc))
            .map_err(|e| Error::bad_request(field, format!("not an RFC 3339 instant: {e}")))
    })
    .transpose()
}

/// The gate's state at `from` and every transition until `to` — the same
/// JSON as `fleetgate gate preview -o json`.
#[utoipa::path(get, path = "/api/v1/gates/{name}/preview", tag = "gates",
    params(("name" = String, Path, description = "Gate name"), PreviewQuery),
    responses(
        (status = 200, description = "Preview", body = PreviewDoc),
        (status = 400, description = "Malformed from/to", body = crate::error::ErrorBody),
        (status = 404, description = "No such gate or cluster", body = crate::error::ErrorBody),
        (status = 422, description = "to before from, or range too long", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn preview(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
    Query(q): Query<PreviewQuery>,
) -> Result<impl IntoResponse> {
    let from = instant("from", q.from.as_deref())?;
    let to = instant("to", q.to.as_deref())?;
    let p = s
        .service
        .preview_gate(&actor, &name, from, to, q.cluster.as_deref())
        .await?;
    Ok(Json(p))
}
