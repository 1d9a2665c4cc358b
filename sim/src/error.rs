//! The crate's error type. API failures carry a Kubernetes `Status` (code, reason,
//! message, details) shaped like the real API server's (k8s.io/apimachinery
//! pkg/api/errors/errors.go), so clients see the same errors they would on a cluster.

use axum::response::{IntoResponse, Response};
use http::StatusCode;
use serde_json::{Value, json};

use crate::crd::ResourceType;

/// A `metav1.Status` failure.
#[derive(Debug, Clone)]
pub struct ApiStatus {
    pub code: u16,
    pub reason: &'static str,
    pub message: String,
    pub details: Option<Value>,
}

impl ApiStatus {
    pub fn to_json(&self) -> Value {
        let mut s = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(d) = &self.details {
            s["details"] = d.clone();
        }
        s
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}", .0.message)]
    Api(Box<ApiStatus>),
    #[error("configuration: {0}")]
    Config(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

fn details(rt: &ResourceType, name: &str) -> Value {
    let mut d = json!({ "kind": rt.plural });
    if !name.is_empty() {
        d["name"] = json!(name);
    }
    if !rt.group.is_empty() {
        d["group"] = json!(rt.group);
    }
    d
}

impl Error {
    pub fn api(code: u16, reason: &'static str, message: String, details: Option<Value>) -> Error {
        Error::Api(Box::new(ApiStatus {
            code,
            reason,
            message,
            details,
        }))
    }

    pub fn not_found(rt: &ResourceType, name: &str) -> Error {
        Error::api(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", rt.group_resource()),
            Some(details(rt, name)),
        )
    }

    /// 404 for a path that names no served resource.
    pub fn path_not_found() -> Error {
        Error::api(
            404,
            "NotFound",
            "the server could not find the requested resource".into(),
            None,
        )
    }

    pub fn already_exists(rt: &ResourceType, name: &str) -> Error {
        Error::api(
            409,
            "AlreadyExists",
            format!("{} \"{name}\" already exists", rt.group_resource()),
            Some(details(rt, name)),
        )
    }

    /// Optimistic-concurrency failure (registry/generic/registry/store.go).
    pub fn conflict(rt: &ResourceType, name: &str) -> Error {
        Error::api(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again",
                rt.group_resource()
            ),
            Some(details(rt, name)),
        )
    }

    pub fn bad_request(message: impl Into<String>) -> Error {
        Error::api(400, "BadRequest", message.into(), None)
    }

    pub fn method_not_allowed() -> Error {
        Error::api(
            405,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource".into(),
            None,
        )
    }

    /// 422 `Invalid` with one cause per field error (errors.NewInvalid).
    pub fn invalid(group: &str, kind: &str, name: &str, causes: Vec<FieldError>) -> Error {
        let gk = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let rendered: Vec<String> = causes.iter().map(FieldError::render).collect();
        let joined = if rendered.len() == 1 {
            rendered[0].clone()
        } else {
            format!("[{}]", rendered.join(", "))
        };
        let mut d = json!({
            "name": name,
            "kind": kind,
            "causes": causes.iter().map(FieldError::cause).collect::<Vec<_>>(),
        });
        if !group.is_empty() {
            d["group"] = json!(group);
        }
        Error::api(
            422,
            "Invalid",
            format!("{gk} \"{name}\" is invalid: {joined}"),
            Some(d),
        )
    }

    pub fn gone(message: impl Into<String>) -> Error {
        Error::api(410, "Expired", message.into(), None)
    }

    pub fn unauthorized() -> Error {
        Error::api(401, "Unauthorized", "Unauthorized".into(), None)
    }

    pub fn status(&self) -> ApiStatus {
        match self {
            Error::Api(s) => (**s).clone(),
            Error::Config(m) => ApiStatus {
                code: 500,
                reason: "InternalError",
                message: m.clone(),
                details: None,
            },
        }
    }
}

/// One `field.Error` (k8s.io/apimachinery/pkg/util/validation/field/errors.go).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorKind,
    pub field: String,
    /// Rendered bad value (already quoted for strings), for Invalid/NotSupported.
    pub value: String,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FieldErrorKind {
    Invalid,
    Required,
    NotSupported,
    TooLong,
}

impl FieldError {
    pub fn invalid(field: &str, value: String, detail: String) -> FieldError {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value,
            detail,
        }
    }

    pub fn required(field: &str) -> FieldError {
        FieldError {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: String::new(),
            detail: String::new(),
        }
    }

    /// `field.Required` with a detail ("Required value: schemas are required").
    pub fn required_because(field: &str, detail: &str) -> FieldError {
        FieldError {
            detail: detail.into(),
            ..FieldError::required(field)
        }
    }

    pub fn not_supported(field: &str, value: String, supported: &[String]) -> FieldError {
        FieldError {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value,
            detail: format!("supported values: {}", supported.join(", ")),
        }
    }

    /// `field.TooLong` with a length in bytes (a ConfigMap's data as a whole: `field` "").
    pub fn too_long(field: &str, max: usize) -> FieldError {
        FieldError {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: String::new(),
            detail: format!("may not be more than {max} bytes"),
        }
    }

    /// `ErrorBody()`: the message without the field path.
    fn body(&self) -> String {
        match self.kind {
            FieldErrorKind::Required if self.detail.is_empty() => "Required value".into(),
            FieldErrorKind::Required => format!("Required value: {}", self.detail),
            FieldErrorKind::Invalid => format!("Invalid value: {}: {}", self.value, self.detail),
            FieldErrorKind::NotSupported => {
                format!("Unsupported value: {}: {}", self.value, self.detail)
            }
            FieldErrorKind::TooLong => format!("Too long: {}", self.detail),
        }
    }

    pub fn render(&self) -> String {
        format!("{}: {}", self.field, self.body())
    }

    fn cause(&self) -> Value {
        let reason = match self.kind {
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
        };
        json!({ "reason": reason, "message": self.body(), "field": self.field })
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let s = self.status();
        let code = StatusCode::from_u16(s.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (code, axum::Json(s.to_json())).into_response()
    }
}
