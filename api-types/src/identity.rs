//! Who signed in: a person from the organisation's OpenID provider or a
//! workload (CI job, Kubernetes service account) with a JWT from a trusted
//! issuer; the hub's sessions; what the CLI needs to sign in.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A person or a workload, as its issuer names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Identity {
    /// `person` (signed in through the login provider) or `workload` (a
    /// trusted issuer's JWT).
    pub kind: IdentityKind,
    /// The issuer URL (`iss`).
    pub issuer: String,
    /// The subject (`sub`), unique within the issuer.
    pub subject: String,
    /// Display name (from the configured name claim; falls back to the email, then `sub`).
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// Groups (from the configured groups claim).
    #[serde(default)]
    pub groups: Vec<String>,
}

/// Whether an [`Identity`] is a person's or a workload's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum IdentityKind {
    Person,
    Workload,
}

impl Identity {
    /// How the audit log names it: `name <email> (sub@issuer)`.
    pub fn audit_name(&self) -> String {
        let who = match &self.email {
            Some(email) if *email != self.name => format!("{} <{email}>", self.name),
            _ => self.name.clone(),
        };
        format!("{who} ({}@{})", self.subject, self.issuer)
    }
}

/// A dashboard session (`GET /api/v1/sessions`); never its secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionRecord {
    pub id: uuid::Uuid,
    pub identity: Identity,
    pub created_at: DateTime<Utc>,
    /// When it ends unless refreshed: never later than the provider's tokens.
    pub expires_at: DateTime<Utc>,
    /// When a request last presented it (updated at most once a minute).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<DateTime<Utc>>,
    /// The browser's `User-Agent` at sign-in (the device), cut at 256 characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_agent: Option<String>,
    /// The session this request came with (`GET /api/v1/auth/sessions`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub current: bool,
}

/// `POST /api/v1/sessions/end` (admin): ends every session of one person,
/// or the one session `id` names. One of `subject` and `id` is required.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndSessions {
    /// The person's subject (`sub`), or their email.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub subject: String,
    /// The issuer; default: the login provider's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Only this session (with `subject`: only if it is that person's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<uuid::Uuid>,
}

/// `POST /api/v1/auth/sessions/end`: a signed-in person ends their own
/// sessions: the one `id` names, else all of them (`keepCurrent`: all but
/// the one this request came with).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndMySessions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<uuid::Uuid>,
    /// Without `id`: keep the session this request came with ("sign out
    /// everywhere else").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_current: bool,
}

/// What `POST /api/v1/sessions/end` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionsEnded {
    pub ended: u64,
}

/// How to sign in (`GET /api/v1/auth/config`, no token needed): what
/// `fleetgate login` and the dashboard's sign-in button read.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AuthConfig {
    /// Whether people can sign in through a provider at all.
    pub enabled: bool,
    /// The provider's display name ("Sign in with <provider>").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// The public client the CLI signs in with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cli_client_id: Option<String>,
    /// Scopes the CLI asks for.
    #[serde(default)]
    pub cli_scopes: Vec<String>,
    /// Whether this request carried a session cookie (not whether it is still valid): the
    /// dashboard asks `whoami` who signed in only then, so a visitor who never signed in
    /// meets the sign-in page without a refused request.
    #[serde(default)]
    pub session_cookie: bool,
}

/// `GET /api/v1/sessions`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionList {
    pub items: Vec<SessionRecord>,
}

/// `POST /api/v1/auth/login`: where the dashboard sends the browser.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoginStart {
    /// The provider's authorization URL.
    pub url: String,
}

/// `POST /api/v1/auth/login` body.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginRequest {
    /// A path on the hub to return to after signing in (default `/`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_to: Option<String>,
}
