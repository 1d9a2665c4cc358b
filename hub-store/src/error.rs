//! The hub's one error type. Every service method returns it; REST turns it
//! into a JSON error body with the right status (`IntoResponse`), the gRPC API
//! into a `tonic::Status`. Internal causes are logged, never sent to clients.

use axum_core::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

pub use fleetgate_api_types::{ErrorBody, ErrorDetail};

/// Result with the hub's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the hub.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No credentials, or unknown / revoked credentials (HTTP 401).
    #[error("{0}")]
    Unauthenticated(String),
    /// Authenticated, but the role is too low (HTTP 403).
    #[error("{0}")]
    Forbidden(String),
    /// Refused by a policy outside the caller's role: an admission webhook said no
    /// (HTTP 403 naming the field it judged, e.g. `ticket`).
    #[error("{message}")]
    Denied {
        field: Option<String>,
        message: String,
    },
    /// The named object does not exist (HTTP 404).
    #[error("{kind} '{name}' not found")]
    NotFound { kind: &'static str, name: String },
    /// Optimistic-concurrency failure or duplicate name (HTTP 409).
    #[error("{message}")]
    Conflict {
        field: Option<String>,
        message: String,
    },
    /// Malformed request: unparsable JSON/YAML, bad query string (HTTP 400).
    #[error("{field}: {message}")]
    BadRequest { field: String, message: String },
    /// Well-formed but semantically invalid input (HTTP 422).
    #[error("{field}: {message}")]
    Invalid { field: String, message: String },
    /// Request body over the limit (HTTP 413).
    #[error("request body larger than the limit")]
    PayloadTooLarge,
    /// A body in a format the endpoint does not take (HTTP 415).
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// The database cannot be reached right now (HTTP 503 with
    /// `Retry-After`, gRPC UNAVAILABLE): an outage, not a fault of the request.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// A service the hub depends on for this request (the identity
    /// provider) failed or cannot be reached (HTTP 502, gRPC UNAVAILABLE);
    /// the message says which and why.
    #[error("{0}")]
    Upstream(String),
    /// A database failure (HTTP 500, logged).
    #[error("database: {0}")]
    Database(sqlx::Error),
    /// A failed schema migration.
    #[error("migration: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    /// Anything else that is our fault (HTTP 500, logged).
    #[error("internal: {0}")]
    Internal(String),
}

/// Seconds a client should wait before retrying a 503 `unavailable`.
pub const RETRY_AFTER_SECS: u64 = 5;

impl From<sqlx::Error> for Error {
    /// Connection failures become [`Error::Unavailable`], the rest
    /// [`Error::Database`].
    fn from(e: sqlx::Error) -> Self {
        if crate::health::is_unreachable(&e) {
            Self::Unavailable(e.to_string())
        } else {
            Self::Database(e)
        }
    }
}

impl Error {
    /// 503: the database is known to be unreachable.
    pub fn db_down() -> Self {
        Self::Unavailable("known to be unreachable".into())
    }

    /// 422 with a field path.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            message: message.into(),
        }
    }

    /// 400 with a field path.
    pub fn bad_request(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::BadRequest {
            field: field.into(),
            message: message.into(),
        }
    }

    /// 404 for `kind` named `name`.
    pub fn not_found(kind: &'static str, name: impl Into<String>) -> Self {
        Self::NotFound {
            kind,
            name: name.into(),
        }
    }

    /// 409 without a field.
    pub fn conflict(message: impl Into<String>) -> Self {
        Self::Conflict {
            field: None,
            message: message.into(),
        }
    }

    /// A gate-model error (`PolicyError { path, message }`) as a 422.
    pub fn from_policy(e: fleetgate_policy::PolicyError) -> Self {
        Self::invalid(e.path, e.message)
    }

    /// Stable machine-readable code, also the metric label.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthenticated(_) => "unauthenticated",
            Self::Forbidden(_) => "forbidden",
            Self::Denied { .. } => "denied",
            Self::NotFound { .. } => "not_found",
            Self::Conflict { .. } => "conflict",
            Self::BadRequest { .. } => "bad_request",
            Self::Invalid { .. } => "invalid",
            Self::PayloadTooLarge => "payload_too_large",
            Self::UnsupportedMediaType(_) => "unsupported_media_type",
            Self::Unavailable(_) => "unavailable",
            Self::Upstream(_) => "upstream_unavailable",
            Self::Database(_) | Self::Migrate(_) | Self::Internal(_) => "internal",
        }
    }

    /// The HTTP status for this error.
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
            Self::Forbidden(_) | Self::Denied { .. } => StatusCode::FORBIDDEN,
            Self::NotFound { .. } => StatusCode::NOT_FOUND,
            Self::Conflict { .. } => StatusCode::CONFLICT,
            Self::BadRequest { .. } => StatusCode::BAD_REQUEST,
            Self::Invalid { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            Self::PayloadTooLarge => StatusCode::PAYLOAD_TOO_LARGE,
            Self::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Self::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            Self::Upstream(_) => StatusCode::BAD_GATEWAY,
            Self::Database(_) | Self::Migrate(_) | Self::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The field path the error is about, if any.
    pub fn field(&self) -> Option<&str> {
        match self {
            Self::BadRequest { field, .. } | Self::Invalid { field, .. } => Some(field),
            Self::Conflict { field, .. } | Self::Denied { field, .. } => field.as_deref(),
            _ => None,
        }
    }

    /// The message safe to show a client (internal details are hidden).
    pub fn public_message(&self) -> String {
        match self {
            Self::Database(_) | Self::Migrate(_) | Self::Internal(_) => {
                "internal error; see the hub's log".to_string()
            }
            Self::Unavailable(_) => {
                format!("the hub's database is unreachable; retry in {RETRY_AFTER_SECS} s")
            }
            Self::BadRequest { message, .. } | Self::Invalid { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if let Self::Unavailable(_) = &self {
            // The outage itself is logged once by the health watcher.
            tracing::debug!(error = %self, "request failed");
        } else if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        }
        let body = ErrorBody::new(
            self.code(),
            self.public_message(),
            self.field().map(str::to_string),
        );
        // What `axum::Json` does, without axum's server half in the store.
        let mut resp = match serde_json::to_vec(&body) {
            Ok(bytes) => (
                status,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                )],
                bytes,
            )
                .into_response(),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        };
        if status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"fleetgate\""),
            );
        }
        resp
    }
}

/// Maps a unique-constraint violation to a 409, everything else to `Database`.
pub(crate) fn on_unique(e: sqlx::Error, message: impl FnOnce() -> String) -> Error {
    match &e {
        sqlx::Error::Database(db) if db.is_unique_violation() => Error::conflict(message()),
        _ => Error::from(e),
    }
}
