//! The provider side of signing in: discovery (cached), the authorization
//! request (code flow with PKCE S256, `state`, `nonce`, the exact redirect
//! URI), the code exchange and refresh at the token endpoint.

use std::time::{Duration, Instant};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use sha2::{Digest, Sha256};

use super::config::LoginConfig;
use super::keys::{Metadata, discover};
use super::outbound::{Outbound, OutboundError, enc};
pub use fleetgate_hub_core::identity::provider::{
    IdentityProvider, Pending, RefreshError, TokenResponse, random,
};

/// How long a discovery document is reused.
const METADATA_TTL: Duration = Duration::from_secs(3600);

/// The login provider.
pub struct Login {
    pub config: LoginConfig,
    secret: Option<String>,
    outbound: Outbound,
    metadata: tokio::sync::Mutex<Option<(Metadata, Instant)>>,
    /// The last check that the provider answers (before a sign-in): when, and its failure.
    checked: tokio::sync::Mutex<Option<(Instant, Option<String>)>>,
}

impl std::fmt::Debug for Login {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Login")
            .field("issuer", &self.config.issuer)
            .finish_non_exhaustive()
    }
}

/// The S256 code challenge of a PKCE verifier.
pub fn challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl Login {
    pub fn new(config: LoginConfig, secret: Option<String>, outbound: Outbound) -> Self {
        Self {
            config,
            secret,
            outbound,
            metadata: tokio::sync::Mutex::new(None),
            checked: tokio::sync::Mutex::new(None),
        }
    }

    /// The provider's endpoints (cached for an hour; a failure is not cached).
    pub async fn metadata(&self) -> Result<Metadata, String> {
        let mut cached = self.metadata.lock().await;
        if let Some((meta, at)) = cached.as_ref()
            && at.elapsed() < METADATA_TTL
        {
            return Ok(meta.clone());
        }
        let meta = discover(&self.outbound, &self.config.issuer).await?;
        *cached = Some((meta.clone(), Instant::now()));
        Ok(meta)
    }

    /// The provider's endpoints, from a discovery document fetched at most `providerCheck`
    /// ago: a sign-in sends a person to the provider only when it answered lately (the
    /// document is cached for an hour for everything else, so a provider that went down
    /// since would otherwise get the person). A failed check is remembered as long.
    async fn checked_metadata(&self) -> Result<Metadata, String> {
        let mut checked = self.checked.lock().await;
        if let Some((at, failure)) = checked.as_ref()
            && at.elapsed() < self.config.provider_check
        {
            match failure {
                Some(e) => return Err(e.clone()),
                None => {
                    if let Some((meta, _)) = self.metadata.lock().await.as_ref() {
                        return Ok(meta.clone());
                    }
                }
            }
        }
        let fetched = discover(&self.outbound, &self.config.issuer).await;
        *checked = Some((Instant::now(), fetched.as_ref().err().cloned()));
        let meta = fetched?;
        *self.metadata.lock().await = Some((meta.clone(), Instant::now()));
        Ok(meta)
    }

    /// Where to send the browser (after checking that the provider answers).
    pub async fn authorize_url(&self, pending: &Pending) -> Result<String, String> {
        let meta = self.checked_metadata().await?;
        let endpoint = meta
            .authorization_endpoint
            .ok_or("the provider's discovery document has no authorization_endpoint")?;
        let scopes = self.config.scope_list();
        let mut params = vec![
            ("response_type", "code".to_string()),
            ("client_id", self.config.client_id.clone()),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("scope", scopes.join(" ")),
            ("state", pending.state.clone()),
            ("nonce", pending.nonce.clone()),
            ("code_challenge", challenge(&pending.verifier)),
            ("code_challenge_method", "S256".to_string()),
        ];
        // A refresh token for offline_access needs consent (OIDC Core 11).
        if scopes.iter().any(|s| s == "offline_access") {
            params.push(("prompt", "consent".to_string()));
        }
        let query = params
            .iter()
            .map(|(k, v)| format!("{k}={}", enc(v)))
            .collect::<Vec<_>>()
            .join("&");
        let sep = if endpoint.contains('?') { '&' } else { '?' };
        Ok(format!("{endpoint}{sep}{query}"))
    }

    /// Exchanges an authorization code.
    pub async fn exchange(&self, code: &str, verifier: &str) -> Result<TokenResponse, String> {
        let form = [
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.as_str()),
            ("code_verifier", verifier),
        ];
        self.token(&form).await
    }

    /// Refreshes with a refresh token. [`RefreshError::Refused`] when the
    /// provider answers `invalid_grant` (RFC 6749 5.2: the refresh token is
    /// revoked, expired or was issued to someone else): the session is
    /// over. [`RefreshError::Unavailable`] for anything else (down,
    /// unreachable, a 5xx, the client misconfigured): a later request may
    /// succeed.
    pub async fn refresh(&self, refresh_token: &str) -> Result<TokenResponse, RefreshError> {
        let form = [
            ("grant_type", "refresh_token"),
            ("refresh_token", refresh_token),
        ];
        match self.token_call(&form).await {
            Ok(t) => Ok(t),
            Err(Ok(e @ OutboundError::Status { .. })) if e.is_invalid_grant() => {
                Err(RefreshError::Refused(e.to_string()))
            }
            Err(Ok(e)) => Err(RefreshError::Unavailable(e.to_string())),
            Err(Err(e)) => Err(RefreshError::Unavailable(e)),
        }
    }

    async fn token(&self, form: &[(&str, &str)]) -> Result<TokenResponse, String> {
        self.token_call(form).await.map_err(|e| match e {
            Ok(e) => e.to_string(),
            Err(e) => e,
        })
    }

    /// A token endpoint call: `Err(Ok)` when the call failed, `Err(Err)`
    /// when discovery did.
    async fn token_call(
        &self,
        form: &[(&str, &str)],
    ) -> Result<TokenResponse, Result<OutboundError, String>> {
        let meta = self.metadata().await.map_err(Err)?;
        let endpoint = meta.token_endpoint.ok_or_else(|| {
            Err("the provider's discovery document has no token_endpoint".to_string())
        })?;
        let mut form = form.to_vec();
        let basic = match &self.secret {
            Some(secret) => Some((self.config.client_id.as_str(), secret.as_str())),
            None => {
                form.push(("client_id", self.config.client_id.as_str()));
                None
            }
        };
        self.outbound
            .post_form(&endpoint, &form, basic)
            .await
            .map_err(Ok)
    }
}

impl IdentityProvider for Login {
    fn config(&self) -> &LoginConfig {
        &self.config
    }

    fn authorize_url<'a>(&'a self, pending: &'a Pending) -> BoxFuture<'a, Result<String, String>> {
        Login::authorize_url(self, pending).boxed()
    }

    fn exchange<'a>(
        &'a self,
        code: &'a str,
        verifier: &'a str,
    ) -> BoxFuture<'a, Result<TokenResponse, String>> {
        Login::exchange(self, code, verifier).boxed()
    }

    fn refresh<'a>(
        &'a self,
        refresh_token: &'a str,
    ) -> BoxFuture<'a, Result<TokenResponse, RefreshError>> {
        Login::refresh(self, refresh_token).boxed()
    }
}
