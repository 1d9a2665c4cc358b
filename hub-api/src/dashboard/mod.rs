//! The dashboard: a single-page app (plain HTML, CSS and JS embedded in the
//! binary, no build step) served at `/`, plus the few read endpoints and the
//! live event stream it needs beyond the REST API.

pub mod assets;
pub mod events;
pub mod fleet_page;
pub mod views;

use axum::Router;
use axum::routing::get;

use crate::rest::AppState;

/// The dashboard's routes, to merge into the hub's app.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(assets::index))
        .route("/assets/{file}", get(assets::file))
        .route("/favicon.ico", get(assets::favicon))
        .route("/api/v1/whoami", get(views::whoami))
        .route("/api/v1/dashboard/fleet", get(views::fleet))
        .route("/api/v1/dashboard/gates/{name}", get(views::gate))
        .route("/api/v1/events", get(events::stream))
        .route("/auth/callback", get(crate::rest::sign_in::callback))
}
