//! `/api/v1/webhooks` (admin): subscriptions, their secret rotation, test
//! messages, deliveries with attempts, redelivery.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use fleetgate_api_types::webhooks::{
    RotateWebhookSecret, Webhook, WebhookDelivery, WebhookSpec, WebhookTestResult,
    WebhookWithSecret,
};
use serde::Deserialize;

use super::AppState;
use super::extract::{ApiAdmin, Body, Query};
use crate::Result;

/// `GET .../deliveries` query.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct DeliveryQuery {
    /// Only deliveries older than this delivery id (the next page).
    pub before: Option<i64>,
    /// Page size, 1..=500 (default 50).
    pub limit: Option<u32>,
}

/// List webhook subscriptions (admin).
#[utoipa::path(get, path = "/api/v1/webhooks", tag = "webhooks",
    responses((status = 200, description = "Every subscription", body = [Webhook]),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn list(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
) -> Result<Json<Vec<Webhook>>> {
    Ok(Json(s.service.list_webhooks(&actor).await?))
}

/// Create a subscription (admin); the `whsec_` signing secret is shown only now.
#[utoipa::path(post, path = "/api/v1/webhooks", tag = "webhooks", request_body = WebhookSpec,
    responses((status = 201, description = "Created", body = WebhookWithSecret),
        (status = 400, description = "Malformed body", body = crate::error::ErrorBody),
        (status = 403, description = "Role too low", body = crate::error::ErrorBody),
        (status = 409, description = "Name taken", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid field (named), e.g. a refused URL", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn create(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    body: Body,
) -> Result<(StatusCode, Json<WebhookWithSecret>)> {
    let spec: WebhookSpec = body.parse()?;
    let out = s
        .service
        .create_webhook(&actor, spec, &s.notifier.delivery.egress)
        .await?;
    Ok((StatusCode::CREATED, Json(out)))
}

/// One subscription (admin).
#[utoipa::path(get, path = "/api/v1/webhooks/{name}", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "The subscription", body = Webhook),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn get(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<Webhook>> {
    Ok(Json(s.service.get_webhook(&actor, &name).await?))
}

/// Replace a subscription's settings (admin); the secret stays.
#[utoipa::path(put, path = "/api/v1/webhooks/{name}", tag = "webhooks", request_body = WebhookSpec,
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "Replaced", body = Webhook),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody),
        (status = 422, description = "Invalid field (named)", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn replace(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    body: Body,
) -> Result<Json<Webhook>> {
    let spec: WebhookSpec = body.parse()?;
    Ok(Json(
        s.service
            .replace_webhook(&actor, &name, spec, &s.notifier.delivery.egress)
            .await?,
    ))
}

/// Delete a subscription and its delivery history (admin).
#[utoipa::path(delete, path = "/api/v1/webhooks/{name}", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "Deleted", body = Webhook),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn delete(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<Webhook>> {
    Ok(Json(s.service.delete_webhook(&actor, &name).await?))
}

/// Enable a subscription (admin), nothing else changed; the hub's disable
/// reason (410 Gone, failing for days) and failure run are cleared and what
/// waited is sent.
#[utoipa::path(post, path = "/api/v1/webhooks/{name}/enable", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "Enabled", body = Webhook),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn enable(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<Webhook>> {
    Ok(Json(
        s.service.set_webhook_enabled(&actor, &name, true).await?,
    ))
}

/// Disable a subscription (admin), nothing else changed: no events are
/// routed to it and its queued deliveries wait.
#[utoipa::path(post, path = "/api/v1/webhooks/{name}/disable", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "Disabled", body = Webhook),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn disable(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<Webhook>> {
    Ok(Json(
        s.service.set_webhook_enabled(&actor, &name, false).await?,
    ))
}

/// Rotate the signing secret (admin); the old one keeps signing for the overlap.
#[utoipa::path(post, path = "/api/v1/webhooks/{name}/rotate-secret", tag = "webhooks",
    request_body = RotateWebhookSecret,
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "The new secret, shown once", body = WebhookWithSecret),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody),
        (status = 422, description = "Bad overlap", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn rotate_secret(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    body: Body,
) -> Result<Json<WebhookWithSecret>> {
    let req: RotateWebhookSecret = if body.text.trim().is_empty() {
        RotateWebhookSecret::default()
    } else {
        body.parse()?
    };
    Ok(Json(
        s.service.rotate_webhook_secret(&actor, &name, req).await?,
    ))
}

/// Send a signed `webhook.test` message now (admin).
#[utoipa::path(post, path = "/api/v1/webhooks/{name}/test", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name")),
    responses((status = 200, description = "What the endpoint answered", body = WebhookTestResult),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn test(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
) -> Result<Json<WebhookTestResult>> {
    let n = &s.notifier.delivery;
    Ok(Json(
        s.service
            .test_webhook(&actor, &name, &n.egress, &n.site)
            .await?,
    ))
}

/// A subscription's deliveries, newest first (admin).
#[utoipa::path(get, path = "/api/v1/webhooks/{name}/deliveries", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name"), DeliveryQuery),
    responses((status = 200, description = "Deliveries", body = [WebhookDelivery]),
        (status = 404, description = "No such subscription", body = crate::error::ErrorBody),
        (status = 422, description = "Bad limit", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn deliveries(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path(name): Path<String>,
    Query(q): Query<DeliveryQuery>,
) -> Result<Json<Vec<WebhookDelivery>>> {
    Ok(Json(
        s.service
            .webhook_deliveries(&actor, &name, q.before, q.limit)
            .await?,
    ))
}

/// One delivery with every attempt (status, latency, response excerpt) (admin).
#[utoipa::path(get, path = "/api/v1/webhooks/{name}/deliveries/{id}", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name"),
        ("id" = i64, Path, description = "Delivery id")),
    responses((status = 200, description = "The delivery", body = WebhookDelivery),
        (status = 404, description = "No such delivery", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn delivery(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path((name, id)): Path<(String, i64)>,
) -> Result<Json<WebhookDelivery>> {
    Ok(Json(s.service.webhook_delivery(&actor, &name, id).await?))
}

/// Queue a delivery again now, with the same `webhook-id` (admin).
#[utoipa::path(post, path = "/api/v1/webhooks/{name}/deliveries/{id}/redeliver", tag = "webhooks",
    params(("name" = String, Path, description = "Subscription name"),
        ("id" = i64, Path, description = "Delivery id")),
    responses((status = 200, description = "Queued", body = WebhookDelivery),
        (status = 404, description = "No such delivery", body = crate::error::ErrorBody)),
    security(("bearer" = [])))]
pub async fn redeliver(
    State(s): State<AppState>,
    ApiAdmin(actor): ApiAdmin,
    Path((name, id)): Path<(String, i64)>,
) -> Result<Json<WebhookDelivery>> {
    Ok(Json(s.service.redeliver_webhook(&actor, &name, id).await?))
}
