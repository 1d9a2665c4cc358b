//! Change-ticket admission webhooks (unscoped admin): `GET /api/v1/admission-webhooks`,
//! `GET|PUT|DELETE /api/v1/admission-webhooks/{name}`.

use axum::Json;
use axum::extract::{Path, State};
use fleetgate_api_types::admission::{AdmissionWebhook, AdmissionWebhookSpec};

use super::AppState;
use super::extract::{ApiActor, Body};
use crate::Result;

/// Every admission webhook, by name.
#[utoipa::path(get, path = "/api/v1/admission-webhooks", tag = "approvals",
    responses(
        (status = 200, description = "The admission webhooks", body = [AdmissionWebhook]),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
) -> Result<Json<Vec<AdmissionWebhook>>> {
    Ok(Json(s.service.list_admission_webhooks(&actor).await?))
}

/// One admission webhook.
#[utoipa::path(get, path = "/api/v1/admission-webhooks/{name}", tag = "approvals",
    params(("name" = String, Path, description = "Webhook name")),
    responses(
        (status = 200, description = "The webhook", body = AdmissionWebhook),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such webhook", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<AdmissionWebhook>> {
    Ok(Json(s.service.get_admission_webhook(&actor, &name).await?))
}

/// Create or replace an admission webhook: `{"url", "operations": ["override"],
/// "timeout": "5s", "failurePolicy": "Fail", "caBundle": "-----BEGIN CERTIFICATE-----…"}`.
#[utoipa::path(put, path = "/api/v1/admission-webhooks/{name}", tag = "approvals",
    params(("name" = String, Path, description = "Webhook name (DNS label)")),
    request_body = AdmissionWebhookSpec,
    responses(
        (status = 200, description = "Created or replaced", body = AdmissionWebhook),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid field (named)", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn apply(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
    body: Body,
) -> Result<Json<AdmissionWebhook>> {
    let spec: AdmissionWebhookSpec = body.parse()?;
    Ok(Json(
        s.service
            .apply_admission_webhook(&actor, &name, spec)
            .await?,
    ))
}

/// Delete an admission webhook.
#[utoipa::path(delete, path = "/api/v1/admission-webhooks/{name}", tag = "approvals",
    params(("name" = String, Path, description = "Webhook name")),
    responses(
        (status = 200, description = "Deleted", body = AdmissionWebhook),
        (status = 403, description = "Not an unscoped admin", body = crate::error::ErrorBody),
        (status = 404, description = "No such webhook", body = crate::error::ErrorBody),
    ), security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiActor(actor): ApiActor,
    Path(name): Path<String>,
) -> Result<Json<AdmissionWebhook>> {
    Ok(Json(
        s.service.delete_admission_webhook(&actor, &name).await?,
    ))
}
