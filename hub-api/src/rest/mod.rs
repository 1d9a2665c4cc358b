//! The REST API (`/api/v1`), health and metrics endpoints, over the replica
//! ([`AppState`]). Handlers only translate HTTP to service calls; the service
//! layer validates, authorises and writes. `crate::http` assembles the app.

pub mod access_policies;
pub mod admission_webhooks;
pub mod approvals;
pub mod audit;
pub mod clusters;
pub mod extract;
pub mod freezes;
pub mod gates;
pub mod health;
pub mod json_errors;
pub mod overrides;
pub mod rollouts;
pub mod sign_in;
pub mod state;
pub mod status;
pub mod storable_uri;
pub mod tokens;
pub mod webhooks;

use axum::Router;
use axum::routing::{delete, get, post, put};

pub use state::AppState;

/// The `/api/v1` routes.
pub(crate) fn api() -> Router<AppState> {
    Router::new()
        .route("/gates", get(gates::list).post(gates::create))
        .route(
            "/gates/{name}",
            get(gates::get).put(gates::replace).delete(gates::delete),
        )
        .route("/gates/{name}/preview", get(gates::preview))
        .route("/gates/{name}/rollout", get(rollouts::status))
        .route("/gates/{name}/rollout/{command}", post(rollouts::command))
        .route("/gates/{name}/open", post(overrides::open))
        .route("/gates/{name}/close", post(overrides::close))
        .route("/overrides", get(overrides::list))
        .route("/overrides/{id}", delete(overrides::cancel))
        .route("/freezes", get(freezes::list).post(freezes::freeze))
        .route("/freezes/end", post(freezes::unfreeze))
        .route("/clusters", get(clusters::list).post(clusters::register))
        .route(
            "/clusters/{name}",
            get(clusters::get).delete(clusters::delete),
        )
        .route("/clusters/{name}/labels", put(clusters::relabel))
        .route("/clusters/{name}/jwks", put(clusters::set_jwks))
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
        .route("/webhooks", get(webhooks::list).post(webhooks::create))
        .route(
            "/webhooks/{name}",
            get(webhooks::get)
                .put(webhooks::replace)
                .delete(webhooks::delete),
        )
        .route(
            "/webhooks/{name}/rotate-secret",
            post(webhooks::rotate_secret),
        )
        .route("/webhooks/{name}/test", post(webhooks::test))
        .route("/webhooks/{name}/deliveries", get(webhooks::deliveries))
        .route("/webhooks/{name}/deliveries/{id}", get(webhooks::delivery))
        .route(
            "/webhooks/{name}/deliveries/{id}/redeliver",
            post(webhooks::redeliver),
        )
        .route("/webhooks/{name}/enable", post(webhooks::enable))
        .route("/webhooks/{name}/disable", post(webhooks::disable))
        .route("/auth/config", get(sign_in::config))
        .route("/auth/login", post(sign_in::login))
        .route("/auth/logout", post(sign_in::logout))
        .route("/sessions", get(sign_in::list))
        .route("/sessions/end", post(sign_in::end))
        .route("/auth/sessions", get(sign_in::mine))
        .route("/auth/sessions/end", post(sign_in::end_mine))
        .route("/access-policies", get(access_policies::list))
        .route(
            "/access-policies/{name}",
            get(access_policies::get)
                .put(access_policies::apply)
                .delete(access_policies::delete),
        )
        .route("/approvals", get(approvals::list))
        .route(
            "/approvals/{id}",
            get(approvals::get).delete(approvals::cancel),
        )
        .route("/approvals/{id}/approve", post(approvals::approve))
        .route("/approvals/{id}/reject", post(approvals::reject))
        .route("/admission-webhooks", get(admission_webhooks::list))
        .route(
            "/admission-webhooks/{name}",
            get(admission_webhooks::get)
                .put(admission_webhooks::apply)
                .delete(admission_webhooks::delete),
        )
}
