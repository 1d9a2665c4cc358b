//! Process endpoints: `/healthz` (the process answers), `/readyz` (the
//! database answers), `/metrics` (Prometheus text).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::AppState;

/// Liveness: always 200 while the process serves.
#[utoipa::path(get, path = "/healthz", tag = "health",
    responses((status = 200, description = "Alive", body = String)))]
pub async fn healthz() -> &'static str {
    "ok"
}

/// Readiness: 200 if the database answers, else 503.
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "Database reachable", body = String),
        (status = 503, description = "Database unreachable", body = crate::error::ErrorBody)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    match s.service.ping().await {
        Ok(()) => "ok".into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "readiness check failed");
            let body = crate::error::ErrorBody::new("unavailable", "database unreachable", None);
            (StatusCode::SERVICE_UNAVAILABLE, axum::Json(body)).into_response()
        }
    }
}

/// Prometheus metrics (OpenMetrics text).
#[utoipa::path(get, path = "/metrics", tag = "health",
    responses((status = 200, description = "Metrics", body = String)))]
pub async fn metrics(State(s): State<AppState>) -> Response {
    match s.metrics.encode() {
        Ok(text) => (
            [(
                header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}
