//! What the identity model needs from the outside world, declared here as traits the
//! adapters (`fleetgate-hub-adapters`: the provider client, JWT verification with keys
//! fetched from issuers) implement and the binary wires into [`super::Identities`] and the
//! service: core decides (who is signed in, which session ends, what a refusal records),
//! an adapter verifies a signature or calls the provider.

use std::fmt::Debug;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use fleetgate_api_types::IdentityKind;
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::config::{ClaimMapping, LoginConfig};
use super::token::{Binding, JwtError, SpokeRefusal, Verified};

/// Verifies bearer JWTs of the trusted issuers (signatures with the issuers' published
/// keys, `iss`, `aud`, `exp`, `nbf`, `iat`, `typ`), counting each outcome.
pub trait TokenVerifier: Debug + Send + Sync {
    /// Verifies `token` at `now`, refetching the issuer's keys (rate-limited) when its
    /// `kid` is unknown.
    fn verify<'a>(
        &'a self,
        token: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<Verified, JwtError>>;

    /// The trusted issuer `iss`: the kind of identity its tokens carry and its claim names.
    fn issuer(&self, iss: &str) -> Option<(IdentityKind, ClaimMapping)>;
}

/// The OpenID provider people sign in with (discovery, the authorization request, the
/// token endpoint).
pub trait IdentityProvider: Debug + Send + Sync {
    /// Its settings.
    fn config(&self) -> &LoginConfig;

    /// Where to send the browser (after checking that the provider answers).
    fn authorize_url<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Result<String, String>>;

    /// Exchanges an authorization code.
    fn exchange<'a>(
        &'a self,
        code: &'a str,
        verifier: &'a str,
    ) -> BoxFuture<'a, Result<TokenResponse, String>>;

    /// Refreshes with a refresh token. [`RefreshError::Refused`] when the provider answers
    /// `invalid_grant` (RFC 6749 5.2: the refresh token is revoked, expired or was issued
    /// to someone else): the session is over. [`RefreshError::Unavailable`] for anything
    /// else (down, unreachable, a 5xx, the client misconfigured): a later request may
    /// succeed.
    fn refresh<'a>(
        &'a self,
        refresh_token: &'a str,
    ) -> BoxFuture<'a, Result<TokenResponse, RefreshError>>;
}

/// Verifies spokes' own JWTs against their cluster's [`Binding`] (the issuer's keys from
/// discovery, or pinned at registration).
pub trait SpokeVerifier: Debug + Send + Sync {
    /// The audience spokes' tokens must carry (`--spoke-audience`).
    fn audience(&self) -> &str;

    /// Verifies `token` against `binding`; answers when it expires.
    fn verify<'a>(
        &'a self,
        binding: &'a Binding,
        token: &'a str,
        now: DateTime<Utc>,
    ) -> BoxFuture<'a, Result<DateTime<Utc>, SpokeRefusal>>;

    /// Whether a JWKS document holds at least one usable signature key (RSA, EC or OKP
    /// public keys); `Err` says why it is not a JWKS document at all.
    fn usable_keys(&self, jwks: &Value) -> Result<bool, String>;
}

/// What the token endpoint answers.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenResponse {
    #[serde(default)]
    pub id_token: Option<String>,
    #[serde(default)]
    pub refresh_token: Option<String>,
    #[serde(default)]
    pub expires_in: Option<i64>,
}

/// A pending authorization request's secrets.
#[derive(Debug, Clone)]
pub struct Pending {
    pub state: String,
    pub nonce: String,
    pub verifier: String,
}

impl Pending {
    pub fn new() -> Self {
        Self {
            state: random(),
            nonce: random(),
            verifier: random(),
        }
    }
}

impl Default for Pending {
    fn default() -> Self {
        Self::new()
    }
}

/// 32 random bytes, base64url.
pub fn random() -> String {
    let mut bytes = [0u8; 32];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Why a session could not be refreshed.
#[derive(Debug)]
pub enum RefreshError {
    /// The provider will not refresh it: the session is over.
    Refused(String),
    /// The provider could not be asked, or failed; a later request may succeed.
    Unavailable(String),
}
