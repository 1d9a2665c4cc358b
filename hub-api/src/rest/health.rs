//! Process endpoints: `/healthz` (the process answers), `/readyz` (the
//! database answers, quickly either way), `/metrics` (Prometheus text).

use std::time::Duration;

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

/// Longest `/readyz` waits on the database: it answers well within a
/// readiness probe's timeout (Kubernetes default 1 s) even when PostgreSQL
/// does not answer at all.
const READY_BUDGET: Duration = Duration::from_millis(500);

/// Readiness: 200 if the database answers and the change listener follows
/// notifications, else 503 — at once while the database is known to be down
/// or the listener is reconnecting (after an outage 200 means that changes
/// reach the spokes again), else after at most [`READY_BUDGET`].
#[utoipa::path(get, path = "/readyz", tag = "health",
    responses((status = 200, description = "Database reachable, changes followed", body = String),
        (status = 503, description = "Database unreachable, or the change listener reconnecting", body = crate::error::ErrorBody)))]
pub async fn readyz(State(s): State<AppState>) -> Response {
    let health = s.service.db_health();
    let result = if health.is_up() && !health.is_following() {
        Err(crate::Error::Unavailable(
            "the change listener is reconnecting".into(),
        ))
    } else if health.is_up() {
        match tokio::time::timeout(READY_BUDGET, s.service.ping()).await {
            Ok(r) => r,
            Err(_) => Err(crate::Error::Unavailable(format!(
                "no answer within {READY_BUDGET:?}"
            ))),
        }
    } else {
        Err(crate::Error::db_down())
    };
    match result {
        Ok(()) => "ok".into_response(),
        Err(e) => {
            health.suspect();
            tracing::warn!(error = %e, "readiness check failed");
            let body = crate::error::ErrorBody::new("unavailable", "database unreachable", None);
            let retry = [(
                header::RETRY_AFTER,
                crate::error::RETRY_AFTER_SECS.to_string(),
            )];
            (StatusCode::SERVICE_UNAVAILABLE, retry, axum::Json(body)).into_response()
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
