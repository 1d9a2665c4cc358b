//! The JSON body of every error answer.

use serde::{Deserialize, Serialize};

/// The JSON error body: `{"error": {"code", "message", "field"}}`.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ErrorBody {
    pub error: ErrorDetail,
}

/// Details of an error response.
#[derive(Debug, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct ErrorDetail {
    /// Machine-readable code: unauthenticated, forbidden, not_found, conflict,
    /// bad_request, invalid, payload_too_large, unsupported_media_type,
    /// method_not_allowed, unavailable (503: the database is unreachable;
    /// retry after `Retry-After` seconds), internal.
    pub code: String,
    /// Human-readable message.
    pub message: String,
    /// Path of the offending field (e.g. `spec.windows[0].schedule`), if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

impl ErrorBody {
    /// Builds a body from its parts.
    pub fn new(code: &str, message: impl Into<String>, field: Option<String>) -> Self {
        Self {
            error: ErrorDetail {
                code: code.to_string(),
                message: message.into(),
                field,
            },
        }
    }
}
