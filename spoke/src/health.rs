//! The spoke's small HTTP listener: `/metrics` (Prometheus text), `/healthz`
//! (the process runs) and `/readyz` (every Flux watch has listed once and the
//! first reconcile pass ran).

use std::sync::{
    Arc,
    atomic::{AtomicBool, Ordering},
};

use axum::{
    Router, extract::State, http::StatusCode, http::header, response::IntoResponse, routing::get,
};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::{
    error::{Error, Result},
    metrics::Metrics,
};

/// What the handlers read.
#[derive(Clone)]
pub struct HealthState {
    pub metrics: Arc<Metrics>,
    pub ready: Arc<AtomicBool>,
}

/// The router (separate from serving, so tests can drive it).
pub fn app(state: HealthState) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .with_state(state)
}

async fn metrics(State(state): State<HealthState>) -> impl IntoResponse {
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.metrics.render(),
    )
}

async fn readyz(State(state): State<HealthState>) -> impl IntoResponse {
    if state.ready.load(Ordering::Acquire) {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "watches not synced yet")
    }
}

/// Serves on `listener` until `shutdown` fires.
pub async fn serve(
    listener: TcpListener,
    state: HealthState,
    shutdown: CancellationToken,
) -> Result<()> {
    axum::serve(listener, app(state))
        .with_graceful_shutdown(async move { shutdown.cancelled().await })
        .await
        .map_err(Error::Http)
}
