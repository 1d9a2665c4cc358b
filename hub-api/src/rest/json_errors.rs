//! Last line of defence for the error contract: any 4xx/5xx response that is
//! not already JSON (axum's own rejections, the timeout layer's empty 408)
//! is rewritten to `{"error": {"code", "message"}}`, keeping its status and
//! headers such as `Allow` or `WWW-Authenticate`.

use axum::Json;
use axum::http::StatusCode;
use axum::http::header::{CONTENT_LENGTH, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};

use crate::error::ErrorBody;

/// Largest non-JSON error body we read to reuse as the message.
const MAX_TEXT: usize = 16 * 1024;

fn code_for(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthenticated",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "timeout",
        409 => "conflict",
        413 => "payload_too_large",
        415 => "unsupported_media_type",
        422 => "invalid",
        503 => "unavailable",
        s if s >= 500 => "internal",
        _ => "error",
    }
}

/// `axum::middleware::map_response` function.
pub async fn ensure_json_errors(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return resp;
    }
    let is_json = resp
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    if is_json {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = axum::body::to_bytes(body, MAX_TEXT)
        .await
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .unwrap_or_default();
    // Server-side text may carry internals; say only what happened.
    let message = if text.is_empty() || status.is_server_error() {
        status
            .canonical_reason()
            .unwrap_or("error")
            .to_ascii_lowercase()
    } else {
        text
    };
    let mut out = (
        status,
        Json(ErrorBody::new(code_for(status), message, None)),
    )
        .into_response();
    for (k, v) in &parts.headers {
        if k != CONTENT_TYPE && k != CONTENT_LENGTH {
            out.headers_mut().insert(k.clone(), v.clone());
        }
    }
    out
}
