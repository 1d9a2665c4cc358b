//! Request extractors that turn every kind of bad input into the hub's JSON
//! error (never axum's plain-text rejections): the caller's token, query
//! strings, bodies (JSON or YAML by Content-Type, size-limited), `If-Match`.

use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, IF_MATCH};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::AppState;
use crate::auth::{bearer_token, hashes_equal};
use crate::identity::sessions::{Authenticated, CSRF_HEADER, SESSION_COOKIE};
use crate::service::access::Credential;
use crate::service::{Actor, Role};
use crate::{Error, Result};

/// The authenticated caller (`Authorization: Bearer fga_...`).
#[derive(Debug, Clone)]
pub struct ApiActor(pub Actor);

impl FromRequestParts<AppState> for ApiActor {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        Caller::from_request_parts(parts, state)
            .await
            .map(|c| ApiActor(c.0.actor))
    }
}

/// The authenticated caller with the person or workload behind it.
#[derive(Debug, Clone)]
pub struct Caller(pub Authenticated);

impl FromRequestParts<AppState> for Caller {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        let credential = credential(&parts.headers)?;
        let who = state.service.authenticate(&credential).await?;
        if matches!(credential, Credential::Session(_)) && !parts.method.is_safe() {
            check_csrf(&parts.headers, who.csrf.as_deref())?;
        }
        Ok(Caller(who))
    }
}

/// The credential of a request: its bearer token, else its session cookie.
pub fn credential(headers: &HeaderMap) -> Result<Credential> {
    if let Some(header) = headers.get(AUTHORIZATION) {
        let token = header.to_str().ok().and_then(bearer_token).ok_or_else(|| {
            Error::Unauthenticated("expected Authorization: Bearer <token>".into())
        })?;
        return Ok(Credential::Bearer(token.to_string()));
    }
    match cookie(headers, SESSION_COOKIE) {
        Some(secret) => Ok(Credential::Session(secret)),
        None => Err(Error::Unauthenticated(
            "missing Authorization: Bearer token (or a dashboard session)".into(),
        )),
    }
}

/// A cookie's value.
pub fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
}

/// Cookie-authenticated writes must carry the session's CSRF token: another
/// site can make the browser send the cookie, but cannot read the token.
fn check_csrf(headers: &HeaderMap, expected: Option<&str>) -> Result<()> {
    let sent = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    match (sent, expected) {
        (Some(sent), Some(expected)) if hashes_equal(sent.as_bytes(), expected.as_bytes()) => {
            Ok(())
        }
        _ => Err(Error::Forbidden(
            "missing or wrong X-CSRF-Token on a write with a session cookie".into(),
        )),
    }
}

/// The caller holding at least the operator role. Role checks at extraction
/// run before the body extractor, so a caller whose role is too low gets 403
/// whatever the body (the service checks again, as defence in depth).
#[derive(Debug, Clone)]
pub struct ApiOperator(pub Actor);

/// The caller holding the admin role (checked before the body is read).
#[derive(Debug, Clone)]
pub struct ApiAdmin(pub Actor);

async fn actor_with(parts: &mut Parts, state: &AppState, role: Role) -> Result<Actor> {
    let ApiActor(actor) = ApiActor::from_request_parts(parts, state).await?;
    actor.require(role)?;
    Ok(actor)
}

impl FromRequestParts<AppState> for ApiOperator {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        actor_with(parts, state, Role::Operator).await.map(Self)
    }
}

impl FromRequestParts<AppState> for ApiAdmin {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self> {
        actor_with(parts, state, Role::Admin).await.map(Self)
    }
}

/// A query string; parse errors are 400 naming the parameter.
#[derive(Debug, Clone)]
pub struct Query<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = Error;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self> {
        // axum's Query (serde_urlencoded + serde_path_to_error) does the
        // parsing; its message reads `<param>: <problem>`, so name the param.
        axum::extract::Query::<T>::try_from_uri(&parts.uri)
            .map(|axum::extract::Query(v)| Query(v))
            .map_err(|e| {
                let text = e.body_text();
                let msg = text
                    .strip_prefix("Failed to deserialize query string: ")
                    .unwrap_or(&text)
                    .to_string();
                let field = match msg.split_once(": ") {
                    Some((head, _)) if !head.is_empty() && !head.contains(' ') => head.to_string(),
                    _ => "query".to_string(),
                };
                Error::bad_request(field, msg)
            })
    }
}

/// `?reason=` on writes without a body.
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ReasonQuery {
    /// Why (recorded in the audit log).
    pub reason: Option<String>,
}

/// The request body's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Yaml,
}

/// A whole request body with its format; 413 past the body limit, 415 for
/// other content types, 400 if not UTF-8.
#[derive(Debug, Clone)]
pub struct Body {
    pub text: String,
    pub format: Format,
}

impl<S: Send + Sync> FromRequest<S> for Body {
    type Rejection = Error;

    async fn from_request(req: Request, state: &S) -> Result<Self> {
        let format = format_of(req.headers())?;
        let bytes = Bytes::from_request(req, state).await.map_err(|e| {
            if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                Error::PayloadTooLarge
            } else {
                Error::bad_request("body", e.body_text())
            }
        })?;
        let text = String::from_utf8(bytes.to_vec())
            .map_err(|_| Error::bad_request("body", "not valid UTF-8"))?;
        Ok(Body { text, format })
    }
}

fn format_of(headers: &HeaderMap) -> Result<Format> {
    let Some(ct) = headers.get(CONTENT_TYPE) else {
        return Ok(Format::Json);
    };
    let ct = ct.to_str().unwrap_or_default();
    let mime = ct
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    match mime.as_str() {
        "application/json" | "" => Ok(Format::Json),
        "application/yaml" | "application/x-yaml" | "text/yaml" | "text/x-yaml" => Ok(Format::Yaml),
        other => Err(Error::UnsupportedMediaType(format!(
            "Content-Type '{other}' not supported; use application/json or application/yaml"
        ))),
    }
}

impl Body {
    /// Deserialises the body: syntax errors are 400, wrong or unknown fields
    /// 422 naming the field path.
    pub fn parse<T: DeserializeOwned>(&self) -> Result<T> {
        if self.text.trim().is_empty() {
            return Err(Error::bad_request("body", "empty body"));
        }
        // Syntax first (400), then shape (422 with the path), so a truncated
        // body is never reported as a wrong type.
        let value = self.value()?;
        serde_path_to_error::deserialize(value)
            .map_err(|e| Error::invalid(path_of(e.path()), e.into_inner().to_string()))
    }

    /// Like [`Body::parse`], but an empty body is `T::default()` (bodies whose every
    /// field is optional).
    pub fn parse_or_default<T: DeserializeOwned + Default>(&self) -> Result<T> {
        if self.text.trim().is_empty() {
            return Ok(T::default());
        }
        self.parse()
    }

    /// The body as a JSON value; malformed text (or YAML past the parser's
    /// limits) is 400.
    /// Strings PostgreSQL cannot store are 422 naming their path
    /// (`crate::validate::storable`): every body passes here, so no handler
    /// can forget it.
    fn value(&self) -> Result<serde_json::Value> {
        let value = match self.format {
            Format::Json => serde_json::from_str(&self.text)
                .map_err(|e| Error::bad_request("body", format!("malformed JSON: {e}"))),
            Format::Yaml => fleetgate_policy::yaml::from_str(&self.text)
                .map_err(|e| Error::bad_request("body", format!("malformed YAML: {}", e.message))),
        }?;
        crate::validate::storable_json("", &value)?;
        Ok(value)
    }

    /// Parses a Gate manifest: malformed text is 400, schema errors 422 with
    /// the field path.
    pub fn gate(&self) -> Result<fleetgate_policy::Gate> {
        if self.text.trim().is_empty() {
            return Err(Error::bad_request("body", "empty body"));
        }
        let value = self.value()?;
        match self.format {
            Format::Json => fleetgate_policy::parse_gate_json(value).map_err(gate_error),
            // From the text again, so schema errors also name the line and column.
            Format::Yaml => fleetgate_policy::parse_gate(&self.text).map_err(gate_error),
        }
    }
}

fn gate_error(e: fleetgate_policy::PolicyError) -> Error {
    let field = if e.path.is_empty() {
        "body".to_string()
    } else {
        e.path
    };
    Error::invalid(field, e.message)
}

fn path_of(p: &serde_path_to_error::Path) -> String {
    let s = p.to_string();
    if s == "." { "body".to_string() } else { s }
}

/// The version in `If-Match` (`"3"`, `W/"3"` or `3`); `*` or absent = any.
pub fn if_match(headers: &HeaderMap) -> Result<Option<i64>> {
    let Some(v) = headers.get(IF_MATCH) else {
        return Ok(None);
    };
    let bad = || Error::bad_request("If-Match", "expected the gate's ETag, e.g. \"3\"");
    let s = v.to_str().map_err(|_| bad())?.trim();
    if s == "*" {
        return Ok(None);
    }
    let s = s.strip_prefix("W/").unwrap_or(s).trim_matches('"');
    s.parse::<i64>().map(Some).map_err(|_| bad())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn if_match_forms() {
        let mut h = HeaderMap::new();
        assert_eq!(if_match(&h).unwrap(), None);
        for (v, want) in [
            ("\"3\"", Some(3)),
            ("W/\"4\"", Some(4)),
            ("5", Some(5)),
            ("*", None),
        ] {
            h.insert(IF_MATCH, HeaderValue::from_static(v));
            assert_eq!(if_match(&h).unwrap(), want, "{v}");
        }
        h.insert(IF_MATCH, HeaderValue::from_static("\"x\""));
        assert_eq!(if_match(&h).unwrap_err().field(), Some("If-Match"));
    }
}
