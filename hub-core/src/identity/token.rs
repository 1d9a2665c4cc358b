//! The identity model of tokens: what verifying a JWT yields ([`Verified`]) or why it was
//! refused ([`JwtError`]), the identity its mapped claims describe ([`identity_of`]), and
//! what a cluster registered with an issuer accepts ([`Binding`], [`SpokeRefusal`]). The
//! verification itself (signatures, keys fetched from providers) is an adapter's, behind
//! [`super::provider`]'s traits.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use fleetgate_api_types::{Identity, IdentityKind};
use serde_json::{Map, Value};

use super::config::ClaimMapping;

/// Why a JWT was refused; [`JwtError::outcome`] is its metrics label.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JwtError {
    #[error("malformed JWT: {0}")]
    Malformed(String),
    #[error("JWT algorithm {0} is not accepted (asymmetric signatures only)")]
    Algorithm(String),
    #[error("JWT issuer '{0}' is not trusted")]
    UntrustedIssuer(String),
    #[error("no signing key of issuer '{0}' matches the JWT's kid")]
    UnknownKey(String),
    #[error("JWT signature invalid")]
    BadSignature,
    #[error("JWT audience is not one this hub accepts")]
    WrongAudience,
    #[error("JWT expired")]
    Expired,
    #[error("JWT not valid yet")]
    NotYetValid,
    #[error("JWT claim {0}")]
    Claim(String),
}

impl JwtError {
    pub fn outcome(&self) -> &'static str {
        match self {
            Self::Malformed(_) => "malformed",
            Self::Algorithm(_) => "algorithm",
            Self::UntrustedIssuer(_) => "untrusted_issuer",
            Self::UnknownKey(_) => "unknown_key",
            Self::BadSignature => "bad_signature",
            Self::WrongAudience => "wrong_audience",
            Self::Expired => "expired",
            Self::NotYetValid => "not_yet_valid",
            Self::Claim(_) => "claim",
        }
    }
}

/// A verified token: who, its claims, and when it expires.
#[derive(Debug, Clone)]
pub struct Verified {
    pub identity: Identity,
    pub claims: Map<String, Value>,
    pub expires_at: DateTime<Utc>,
}

/// Whether a bearer token is a JWT (three base64url parts) rather than an API token.
pub fn looks_like_jwt(token: &str) -> bool {
    token.starts_with("eyJ") && token.split('.').count() == 3
}

/// The unverified claims of a token (the part between its last two dots, base64url
/// without padding, as JSON), for refusal messages and audit entries: nothing when it does
/// not parse. Never a decision: only a verifier's answer authenticates.
pub fn peek(token: &str) -> Option<Map<String, Value>> {
    let (_, message) = token.rsplit_once('.')?;
    let (_, payload) = message.rsplit_once('.')?;
    let bytes = URL_SAFE_NO_PAD.decode(payload).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// `--spoke-audience`'s default.
pub const DEFAULT_AUDIENCE: &str = "fleetgate";

/// What a cluster registered with an issuer accepts.
#[derive(Debug, Clone)]
pub struct Binding {
    pub issuer: String,
    /// The exact `sub`.
    pub subject: String,
    /// Pinned keys (a JWKS document), else discovery.
    pub jwks: Option<Value>,
}

/// Why a spoke's JWT was refused: a metrics label and the words for the spoke's log and
/// the audit entry (never the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpokeRefusal {
    pub reason: &'static str,
    pub message: String,
}

impl SpokeRefusal {
    pub fn new(reason: &'static str, message: impl Into<String>) -> Self {
        Self {
            reason,
            message: message.into(),
        }
    }
}

/// The identity the mapped claims describe.
pub fn identity_of(
    issuer: &str,
    kind: IdentityKind,
    mapping: &ClaimMapping,
    claims: &Map<String, Value>,
) -> Result<Identity, JwtError> {
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| JwtError::Claim("sub missing".into()))?
        .to_string();
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(String::from)
    };
    let email = text(&mapping.email);
    let name = text(&mapping.name)
        .or_else(|| email.clone())
        .unwrap_or_else(|| subject.clone());
    let groups = match claims.get(&mapping.groups) {
        Some(Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(String::from)
            .collect(),
        Some(Value::String(one)) => vec![one.clone()],
        _ => Vec::new(),
    };
    Ok(Identity {
        kind,
        issuer: issuer.to_string(),
        subject,
        name,
        email,
        groups,
    })
}
