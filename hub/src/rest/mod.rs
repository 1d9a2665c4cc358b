//! The REST API (`/api/v1`), health and metrics endpoints as an axum
//! [`Router`]. Handlers only translate HTTP to service calls; the service
//! layer validates, authorises and writes.

pub mod audit;
pub mod clusters;
pub mod extract;
pub mod gates;
pub mod health;
pub mod json_errors;
pub mod overrides;
pub mod status;
pub mod tokens;

use std::sync::Arc;
use std::time::Duration;

use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{delete, get, post, put};
use axum::{Json, Router, middleware};
use tokio_util::sync::CancellationToken;
use tower_http::compression::CompressionLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::error::ErrorBody;
use crate::fanout::Fanout;
use crate::fleet_feed::FleetFeed;
use crate::metrics::{Metrics, track_http};
use crate::service::Service;

/// What every handler gets.
#[derive(Debug, Clone)]
pub struct AppState {
    pub service: Service,
    pub metrics: Metrics,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// This replica's change fan-out (shared with the gRPC server); the
    /// dashboard's event stream wakes on its change counter.
    pub fanout: Fanout,
    /// This replica's shared fleet view (dashboard events and `WatchFleet`).
    pub fleet: FleetFeed,
    /// Cancelled at shutdown; ends long-lived responses (event streams).
    pub shutdown: CancellationToken,
}

impl AppState {
    /// State with the default limits (1 MiB bodies, 30 s timeout).
    pub fn new(service: Service, metrics: Metrics) -> Self {
        let fanout = Fanout::new(Arc::new(service.clone()));
        Self {
            fleet: FleetFeed::new(service.clone(), fanout.changes()),
            fanout,
            shutdown: CancellationToken::new(),
            service,
            metrics,
            body_limit: 1024 * 1024,
            timeout: Duration::from_secs(30),
        }
    }
}

/// The `/api/v1` routes.
fn api() -> Router<AppState> {
    Router::new()
        .route("/gates", get(gates::list).post(gates::create))
        .route(
            "/gates/{name}",
            get(gates::get).put(gates::replace).delete(gates::delete),
        )
        .route("/gates/{name}/preview", get(gates::preview))
        .route("/gates/{name}/open", post(overrides::open))
        .route("/gates/{name}/close", post(overrides::close))
        .route("/overrides", get(overrides::list))
        .route("/overrides/{id}", delete(overrides::cancel))
        .route("/clusters", get(clusters::list).post(clusters::register))
        .route(
            "/clusters/{name}",
            get(clusters::get).delete(clusters::delete),
        )
        .route("/clusters/{name}/labels", put(clusters::relabel))
        .route(
            "/clusters/{name}/rotate-token",
            post(clusters::rotate_token),
        )
        .route("/clusters/{name}/status", get(status::cluster))
        .route("/status", get(status::fleet))
        .route("/status/clusters", get(status::clusters))
        .route("/audit", get(audit::list))
        .route("/tokens", get(tokens::list).post(tokens::create))
        .route("/tokens/{id}", delete(tokens::revoke))
        .route("/openapi.json", get(crate::openapi::serve_openapi))
}

/// The whole HTTP application. Other routes (the dashboard at `/`) can be
/// merged into the returned router.
pub fn app(state: AppState) -> Router {
    Router::new()
        .nest("/api/v1", api())
        .merge(crate::dashboard::router())
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        .route_layer(middleware::from_fn_with_state(
            state.metrics.clone(),
            track_http,
        ))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(state.body_limit))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            state.timeout,
        ))
        // Outside the timeout (its 408 is empty), inside compression (so the
        // bodies it reads are never gzipped).
        .layer(middleware::map_response(json_errors::ensure_json_errors))
        .layer(CompressionLayer::new())
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

async fn not_found() -> (StatusCode, Json<ErrorBody>) {
    (
        StatusCode::NOT_FOUND,
        Json(ErrorBody::new("not_found", "no such route", None)),
    )
}

async fn method_not_allowed() -> (StatusCode, Json<ErrorBody>) {
    (
        StatusCode::METHOD_NOT_ALLOWED,
        Json(ErrorBody::new(
            "method_not_allowed",
            "method not allowed on this route",
            None,
        )),
    )
}
