//! The dashboard's static files, embedded at compile time, served with a
//! strict Content-Security-Policy: scripts and styles only from the hub
//! itself, nothing inline, no framing, no form posts anywhere.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::Error;

/// Scripts and styles only from this origin, no inline code, fetch only to
/// this origin; the token lives in `sessionStorage`, so a script injected
/// from elsewhere is what CSP must stop.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
frame-ancestors 'none'";

/// (name, content type, content) of every embedded file.
const FILES: &[(&str, &str, &str)] = &[
    (
        "app.css",
        "text/css; charset=utf-8",
        include_str!("../../assets/app.css"),
    ),
    ("api.js", JS, include_str!("../../assets/api.js")),
    ("main.js", JS, include_str!("../../assets/main.js")),
    ("live.js", JS, include_str!("../../assets/live.js")),
    ("fleet.js", JS, include_str!("../../assets/fleet.js")),
    ("gate.js", JS, include_str!("../../assets/gate.js")),
    ("rollout.js", JS, include_str!("../../assets/rollout.js")),
    ("timeline.js", JS, include_str!("../../assets/timeline.js")),
    ("cluster.js", JS, include_str!("../../assets/cluster.js")),
    ("audit.js", JS, include_str!("../../assets/audit.js")),
    ("webhooks.js", JS, include_str!("../../assets/webhooks.js")),
    ("actions.js", JS, include_str!("../../assets/actions.js")),
    ("dom.js", JS, include_str!("../../assets/dom.js")),
    ("freeze.js", JS, include_str!("../../assets/freeze.js")),
    ("preview.js", JS, include_str!("../../assets/preview.js")),
    (
        "approvals.js",
        JS,
        include_str!("../../assets/approvals.js"),
    ),
    ("sessions.js", JS, include_str!("../../assets/sessions.js")),
    (
        "admission.js",
        JS,
        include_str!("../../assets/admission.js"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("../../assets/favicon.svg"),
    ),
];

const JS: &str = "text/javascript; charset=utf-8";

const INDEX: &str = include_str!("../../assets/index.html");

/// The page shell (`GET /`).
pub async fn index() -> Response {
    with_headers(INDEX, "text/html; charset=utf-8", "no-cache")
}

/// `GET /favicon.ico`: what a browser asks for on a page that names no icon
/// (the sign-in callback's redirect), the dashboard's SVG icon, so it logs no 404.
pub async fn favicon() -> Response {
    with_headers(
        include_str!("../../assets/favicon.svg"),
        "image/svg+xml",
        "no-cache",
    )
}

/// An embedded asset (`GET /assets/{file}`).
pub async fn file(Path(name): Path<String>) -> Response {
    match FILES.iter().find(|(n, _, _)| *n == name) {
        // Revalidated every time: assets are small and change with the binary.
        Some((_, ty, body)) => with_headers(body, ty, "no-cache"),
        None => Error::not_found("asset", name).into_response(),
    }
}

fn with_headers(body: &'static str, content_type: &'static str, cache: &'static str) -> Response {
    let mut res = (StatusCode::OK, body).into_response();
    let h = res.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    res
}
