//! The hub's HTTP application: the REST API under `/api/v1` with its
//! OpenAPI document, the dashboard, health and metrics, wrapped in the layers
//! every route shares (body limit, timeout, JSON errors, compression,
//! request metrics and traces).

use std::time::Instant;

use axum::extract::{DefaultBodyLimit, MatchedPath, Request, State};
use axum::http::StatusCode;
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::get;
use axum::{Json, Router, middleware};
use tower_http::compression::CompressionLayer;
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::error::ErrorBody;
use crate::metrics::{HttpLabels, Metrics};
use crate::rest::{AppState, health, json_errors};

/// The whole HTTP application. Other routes (the dashboard at `/`) can be
/// merged into the returned router.
pub fn app(state: AppState) -> Router {
    Router::new()
        .nest(
            "/api/v1",
            crate::rest::api().route("/openapi.json", get(crate::openapi::serve_openapi)),
        )
        .merge(crate::dashboard::router())
        .route("/healthz", get(health::healthz))
        .route("/readyz", get(health::readyz))
        .route("/metrics", get(health::metrics))
        // Inside the metrics layer, so refusals are counted like any 400.
        .route_layer(middleware::from_fn(
            crate::rest::storable_uri::refuse_unstorable,
        ))
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

/// Middleware recording every routed request.
pub async fn track_http(State(m): State<Metrics>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = req.method().to_string();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "unmatched".to_string());
    let resp = next.run(req).await;
    let labels = HttpLabels {
        method,
        route,
        status: resp.status().as_u16(),
    };
    m.observe(labels, start.elapsed().as_secs_f64());
    resp
}
