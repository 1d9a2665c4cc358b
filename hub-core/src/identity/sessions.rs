//! Dashboard sessions: the sign-in callback turns a provider's answer into a
//! session (a random secret in an HttpOnly cookie, its sha256 in
//! PostgreSQL, so every replica knows it), requests present it, sign-out and
//! admins end it. A session never outlives the provider's ID token; with a
//! refresh token it is extended up to `sessionMaxAge` (see [`super::refresh`]). The refresh token is
//! stored sealed (ChaCha20-Poly1305) under a key derived from the session
//! secret: a database dump alone cannot use it.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Duration as ChronoDuration;
use fleetgate_api_types::{Identity, IdentityKind};
use ring::aead;
use sha2::{Digest, Sha256};

use super::provider::{IdentityProvider, Pending, random};
use super::refusals::{Flow, Refusal};
use crate::auth::{hash_token, hashes_equal};
use crate::db::revision::Affected;
use crate::db::sessions::{self, EndFilter, NewSession, SessionRow};
use crate::service::{Actor, Audit, Service, Written};
use crate::{Error, Result};

/// The session cookie.
pub const SESSION_COOKIE: &str = "fleetgate_session";
/// The cookie binding a sign-in's callback to the browser that started it.
pub const LOGIN_COOKIE: &str = "fleetgate_login";
/// Header carrying the CSRF token on cookie-authenticated writes.
pub const CSRF_HEADER: &str = "x-csrf-token";
/// How long a started sign-in waits for its callback.
const LOGIN_TTL_MINUTES: i64 = 10;

/// The CSRF token of a session: derived from its secret, so nothing more is
/// stored and another site (which never sees the cookie) cannot know it.
pub fn csrf_token(secret: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"fleetgate-csrf\0");
    h.update(secret.as_bytes());
    URL_SAFE_NO_PAD.encode(h.finalize())
}

/// Who a credential authenticated: the actor the service checks, plus the
/// person or workload behind it and, for a session, its CSRF token.
#[derive(Debug, Clone)]
pub struct Authenticated {
    pub actor: Actor,
    pub identity: Option<Identity>,
    pub csrf: Option<String>,
    /// The dashboard session the request came with.
    pub session: Option<uuid::Uuid>,
}

/// What a sign-in callback yields: the cookie's secret and where to go.
#[derive(Debug)]
pub struct SignedIn {
    pub secret: String,
    pub return_to: String,
    pub identity: Identity,
}

impl Service {
    fn login_provider(&self) -> Result<&dyn IdentityProvider> {
        self.identities()
            .login
            .as_deref()
            .ok_or_else(|| Error::NotFound {
                kind: "identity provider",
                name: "login".into(),
            })
    }

    /// Starts a sign-in: the provider URL to redirect to and the `state`
    /// for the login cookie. 502 with the reason when the provider cannot be
    /// reached.
    pub async fn begin_login(&self, return_to: &str) -> Result<(String, String)> {
        let login = self.login_provider()?;
        let pending = Pending::new();
        let url = login.authorize_url(&pending).await.map_err(|e| {
            self.identities().metrics.login("dashboard", "provider_error");
            Error::Upstream(format!(
                "sign-in is unavailable: the identity provider {} cannot be reached ({e}); signed-in sessions and API tokens keep working",
                login.config().issuer
            ))
        })?;
        let return_to = safe_return(return_to);
        let expires = self.now() + ChronoDuration::minutes(LOGIN_TTL_MINUTES);
        let mut conn = self.conn().await?;
        sessions::insert_login(
            &mut conn,
            &hash_token(&pending.state),
            &pending.nonce,
            &pending.verifier,
            &return_to,
            expires,
        )
        .await?;
        Ok((url, pending.state))
    }

    /// Completes a sign-in from the provider's callback: the `state` must be
    /// pending and the one this browser's login cookie holds; the code is
    /// exchanged (with the PKCE verifier), the ID token verified (signature,
    /// issuer, audience, expiry, nonce), the role resolved, the session
    /// written and audited. A refusal is counted and audited
    /// ([`Service::refuse`]).
    pub async fn finish_login(
        &self,
        code: &str,
        state: &str,
        cookie_state: Option<&str>,
        user_agent: Option<&str>,
    ) -> Result<SignedIn> {
        match self
            .try_finish_login(code, state, cookie_state, user_agent)
            .await?
        {
            Ok(done) => Ok(done),
            Err(refused) => Err(self.refuse(refused).await),
        }
    }

    /// A callback that carries the provider's `error` instead of a code
    /// (the person declined, or the provider refused the client): counted,
    /// audited, and the error to show.
    pub async fn login_refused_by_provider(&self, error: &str, description: Option<&str>) -> Error {
        let text = format!(
            "the identity provider refused the sign-in: {error}{}",
            description.map(|d| format!(" ({d})")).unwrap_or_default()
        );
        let r = Refusal::new(
            Flow::Dashboard,
            "provider_error",
            Error::Unauthenticated(text),
        );
        self.refuse(r).await
    }

    /// A callback without `code` and `state`.
    pub async fn login_callback_malformed(&self) -> Error {
        let e = Error::bad_request("code", "the callback needs code and state");
        self.refuse(Refusal::new(Flow::Dashboard, "callback", e))
            .await
    }

    /// [`Service::finish_login`]: `Err` for what failed inside the hub,
    /// `Ok(Err)` for a refusal.
    async fn try_finish_login(
        &self,
        code: &str,
        state: &str,
        cookie_state: Option<&str>,
        user_agent: Option<&str>,
    ) -> Result<std::result::Result<SignedIn, Refusal>> {
        let ids = self.identities();
        let login = self.login_provider()?;
        let refused = |reason, e| Ok(Err(Refusal::new(Flow::Dashboard, reason, e)));
        if !cookie_state.is_some_and(|c| hashes_equal(&hash_token(c), &hash_token(state))) {
            return refused(
                "state",
                Error::bad_request(
                    "state",
                    "this sign-in was not started in this browser; start again",
                ),
            );
        }
        let now = self.now();
        let pending = {
            let mut conn = self.conn().await?;
            sessions::take_login(&mut conn, &hash_token(state), now).await?
        };
        let Some((nonce, verifier, return_to)) = pending else {
            return refused(
                "state",
                Error::bad_request("state", "unknown or expired sign-in; start again"),
            );
        };
        let tokens = match login.exchange(code, &verifier).await {
            Ok(t) => t,
            Err(e) => {
                return refused(
                    "token_exchange",
                    Error::Upstream(format!("the identity provider refused the sign-in: {e}")),
                );
            }
        };
        let Some(id_token) = tokens.id_token.as_deref() else {
            return refused(
                "no_id_token",
                Error::Upstream("the provider returned no ID token".into()),
            );
        };
        let verified = match ids.jwt.verify(id_token, now).await {
            Ok(v) => v,
            Err(e) => {
                let error = Error::Unauthenticated(format!("ID token refused: {e}"));
                return Ok(Err(Refusal::jwt(
                    Flow::Dashboard,
                    &*ids.jwt,
                    id_token,
                    e,
                    error,
                )));
            }
        };
        if verified.identity.issuer != login.config().issuer
            || verified.claims.get("nonce").and_then(|v| v.as_str()) != Some(nonce.as_str())
        {
            let e = Error::Unauthenticated("ID token refused: wrong issuer or nonce".into());
            return Ok(Err(
                Refusal::new(Flow::Dashboard, "nonce", e).by(Some(verified.identity), true)
            ));
        }
        let identity = verified.identity;
        let actor = match self.actor_of(&identity, &verified.claims).await {
            Ok(a) => a,
            Err(e @ Error::Forbidden(_)) => {
                return Ok(Err(
                    Refusal::new(Flow::Dashboard, "no_role", e).by(Some(identity), true)
                ));
            }
            Err(e) => return Err(e),
        };
        let secret = random();
        let max = now
            + ChronoDuration::from_std(ids.config.session_max_age)
                .unwrap_or(ChronoDuration::hours(12));
        let expires_at = verified.expires_at.min(max);
        let sealed = tokens.refresh_token.as_deref().map(|r| seal(&secret, r));
        let new = NewSession {
            secret_hash: &hash_token(&secret),
            issuer: &identity.issuer,
            subject: &identity.subject,
            name: &identity.name,
            email: identity.email.as_deref(),
            groups: &identity.groups,
            now,
            expires_at,
            max_expires_at: max,
            refresh_sealed: sealed.as_deref(),
            user_agent: user_agent.map(|ua| cut(ua, USER_AGENT_MAX)),
        };
        let (new, identity_ref) = (&new, &identity);
        self.write(&actor, now, |tx| {
            Box::pin(async move {
                let row = sessions::insert(tx, new).await?;
                Ok(Written::changed(
                    (),
                    session_audit("session.sign_in", identity_ref, &row, None),
                    Affected::Clusters(Vec::new()),
                ))
            })
        })
        .await?;
        ids.metrics.login("dashboard", "ok");
        Ok(Ok(SignedIn {
            secret,
            return_to,
            identity,
        }))
    }

    /// The caller behind a session cookie; refreshes an expired session at
    /// the provider when it holds a refresh token.
    pub async fn authenticate_session(&self, secret: &str) -> Result<Authenticated> {
        let presented = hash_token(secret);
        let found = {
            let mut conn = self.conn().await?;
            sessions::by_hash(&mut conn, &presented).await?
        };
        let row = match found {
            Some((row, stored)) if hashes_equal(&stored, &presented) => row,
            _ => {
                return Err(Error::Unauthenticated(
                    "unknown session; sign in again".into(),
                ));
            }
        };
        if row.ended_at.is_some() {
            return Err(Error::Unauthenticated(
                "session ended; sign in again".into(),
            ));
        }
        let now = self.now();
        let row = if row.expires_at <= now {
            self.refresh_session(row.id, secret).await?
        } else {
            row
        };
        {
            let mut conn = self.conn().await?;
            sessions::touch(&mut conn, row.id, now).await?;
        }
        let identity = identity_of_row(&row);
        let actor = self.actor_of(&identity, &serde_json::Map::new()).await?;
        Ok(Authenticated {
            actor,
            identity: Some(identity),
            csrf: Some(csrf_token(secret)),
            session: Some(row.id),
        })
    }

    /// Ends the caller's own session (sign-out). Unknown or ended: no-op.
    pub async fn logout(&self, secret: &str) -> Result<()> {
        let Ok(who) = self.authenticate_session(secret).await else {
            return Ok(());
        };
        let Some(id) = who.session else {
            return Ok(());
        };
        let now = self.now();
        let name = who.actor.name.clone();
        let (name, identity) = (&name, who.identity.as_ref());
        self.write(&who.actor, now, |tx| {
            Box::pin(async move {
                let filter = EndFilter {
                    id: Some(id),
                    ..EndFilter::default()
                };
                let ended = sessions::end(tx, &filter, now, name, Some("signed out")).await?;
                match (ended.first(), identity) {
                    (Some(row), Some(identity)) => Ok(Written::changed(
                        (),
                        session_audit("session.sign_out", identity, row, None),
                        Affected::Clusters(Vec::new()),
                    )),
                    _ => Ok(Written::unchanged(())),
                }
            })
        })
        .await?;
        Ok(())
    }

    /// The caller behind a bearer JWT of a trusted issuer. A refused token
    /// or a person no policy grants a role is counted and audited
    /// ([`Service::refuse`]).
    pub async fn authenticate_jwt(&self, token: &str) -> Result<Authenticated> {
        let jwt = &self.identities().jwt;
        let verified = match jwt.verify(token, self.now()).await {
            Ok(v) => v,
            Err(e) => {
                let error = Error::Unauthenticated(e.to_string());
                return Err(self
                    .refuse(Refusal::jwt(Flow::Bearer, &**jwt, token, e, error))
                    .await);
            }
        };
        let actor = match self.actor_of(&verified.identity, &verified.claims).await {
            Ok(a) => a,
            Err(e @ Error::Forbidden(_)) => {
                let r = Refusal::new(Flow::Bearer, "no_role", e).by(Some(verified.identity), true);
                return Err(self.refuse(r).await);
            }
            Err(e) => return Err(e),
        };
        Ok(Authenticated {
            actor,
            identity: Some(verified.identity),
            csrf: None,
            session: None,
        })
    }
}

/// The longest `User-Agent` kept with a session.
const USER_AGENT_MAX: usize = 256;

/// `text` cut at `max` characters.
fn cut(text: &str, max: usize) -> &str {
    text.char_indices()
        .nth(max)
        .map_or(text, |(i, _)| &text[..i])
}

/// Only a same-site path: never an absolute URL (no open redirect).
fn safe_return(to: &str) -> String {
    if to.starts_with('/') && !to.starts_with("//") && !to.contains('\\') {
        to.to_string()
    } else {
        "/".to_string()
    }
}

pub(super) fn identity_of_row(row: &SessionRow) -> Identity {
    Identity {
        kind: IdentityKind::Person,
        issuer: row.issuer.clone(),
        subject: row.subject.clone(),
        name: row.name.clone(),
        email: row.email.clone(),
        groups: row.groups.clone(),
    }
}

pub(super) fn session_audit(
    action: &'static str,
    identity: &Identity,
    row: &SessionRow,
    reason: Option<String>,
) -> Audit {
    Audit {
        action,
        target_kind: "session",
        target_name: identity.audit_name(),
        before: None,
        after: Some(serde_json::json!({
            "session": row.id,
            "issuer": identity.issuer,
            "subject": identity.subject,
            "name": identity.name,
            "email": identity.email,
            "groups": identity.groups,
            "expiresAt": row.expires_at,
        })),
        reason,
    }
}

fn seal_key(secret: &str) -> aead::LessSafeKey {
    let mut h = Sha256::new();
    h.update(b"fleetgate-session-seal\0");
    h.update(secret.as_bytes());
    let key = aead::UnboundKey::new(&aead::CHACHA20_POLY1305, &h.finalize()).expect("32-byte key");
    aead::LessSafeKey::new(key)
}

/// `nonce || ciphertext || tag` of `plain` under the session's key.
pub(super) fn seal(secret: &str, plain: &str) -> Vec<u8> {
    let mut nonce = [0u8; 12];
    rand::Rng::fill_bytes(&mut rand::rng(), &mut nonce);
    let mut data = plain.as_bytes().to_vec();
    seal_key(secret)
        .seal_in_place_append_tag(
            aead::Nonce::assume_unique_for_key(nonce),
            aead::Aad::empty(),
            &mut data,
        )
        .expect("sealing a short token");
    let mut out = nonce.to_vec();
    out.extend(data);
    out
}

pub(super) fn unseal(secret: &str, sealed: &[u8]) -> Option<String> {
    if sealed.len() < 12 {
        return None;
    }
    let (nonce, data) = sealed.split_at(12);
    let nonce = aead::Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut data = data.to_vec();
    let plain = seal_key(secret)
        .open_in_place(nonce, aead::Aad::empty(), &mut data)
        .ok()?;
    String::from_utf8(plain.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_refresh_tokens_open_only_with_their_session() {
        let sealed = seal("secret-a", "refresh-1");
        assert_eq!(unseal("secret-a", &sealed).as_deref(), Some("refresh-1"));
        assert_eq!(unseal("secret-b", &sealed), None);
        assert_ne!(
            seal("secret-a", "refresh-1"),
            sealed,
            "fresh nonce each time"
        );
    }

    #[test]
    fn return_paths_stay_on_the_hub() {
        assert_eq!(safe_return("/#/gates/g"), "/#/gates/g");
        for bad in [
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "javascript:x",
        ] {
            assert_eq!(safe_return(bad), "/", "{bad}");
        }
    }

    #[test]
    fn csrf_tokens_differ_per_session() {
        assert_ne!(csrf_token("a"), csrf_token("b"));
        assert_eq!(csrf_token("a"), csrf_token("a"));
    }
}
