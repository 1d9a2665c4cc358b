//! Refreshing a dashboard session at the provider. A session lives as long
//! as the provider's ID token; when it has expired and the session holds a
//! refresh token (sealed, see [`super::sessions`]), the next request
//! refreshes it: the new ID token is verified like a sign-in's and moves
//! the expiry (never past `sessionMaxAge`), and the person's name, email and
//! groups follow it.
//!
//! No database connection and no row lock is held while the provider answers. One
//! request refreshes a session at a time, across replicas: it claims the row for a bounded
//! time (`refresh_claim`, [`REFRESH_TIMEOUT`] and a margin, on the database's clock) in a
//! short transaction, asks the provider with nothing open (bounded by [`REFRESH_TIMEOUT`]),
//! then writes the result as a compare-and-swap: only while it still holds the claim and
//! the session was not ended meanwhile. A logout or an admin's end during the refresh
//! wins (the refresh answers "session ended"); a request that finds another's claim waits
//! for it (polling the row, bounded) and finds the session refreshed, so a provider that
//! rotates refresh tokens never sees the old one reused (it would revoke the grant).
//!
//! When the provider refuses (`invalid_grant`: the grant was revoked, the
//! person removed, the refresh token expired) or answers with an ID token
//! the hub refuses, the session ENDS: the row is ended with reason
//! `refresh_refused` (or `refresh_invalid`), audited as `session.end` and
//! `sign_in.refused`, and later requests get "session ended" without asking
//! the provider again. When the provider cannot be asked (down, 5xx, slower than
//! [`REFRESH_TIMEOUT`]) the request gets 401 and the session stays for a later request to
//! refresh. Counted in `fleetgate_hub_identity_session_refreshes_total{outcome}`.

use std::time::Duration;

use chrono::Duration as ChronoDuration;
use serde_json::json;
use uuid::Uuid;

use super::provider::RefreshError;
use super::refusals::{Flow, Refusal};
use super::sessions::{identity_of_row, seal, unseal};
use crate::db::audit::{NewAudit, Who};
use crate::db::sessions::{self, EndFilter, Refreshed, SessionRow};
use crate::service::Service;
use crate::{Error, Result};

/// Who ends a session the provider would not refresh (`ended_by`).
const ENDED_BY_PROVIDER: &str = "identity-provider";

/// How long a refresh waits for the provider's answer; a slower provider counts as one that
/// cannot be asked (401, the session stays).
pub const REFRESH_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a refresh's claim on the session row holds beyond [`REFRESH_TIMEOUT`] (verifying
/// the ID token and writing): a replica that died mid-refresh blocks others no longer.
const CLAIM_MARGIN: Duration = Duration::from_secs(5);

/// How often a request that found another refresh under way looks at the row again.
const WAIT_POLL: Duration = Duration::from_millis(50);

fn expired() -> Error {
    Error::Unauthenticated("session expired; sign in again".into())
}

fn ended() -> Error {
    Error::Unauthenticated("session ended; sign in again".into())
}

/// What claiming the session row found.
enum Claim {
    /// This request refreshes it.
    Mine(SessionRow),
    /// Nothing to refresh: it is refreshed already (or this is why not).
    Done(Result<SessionRow>),
}

impl Service {
    /// Refreshes the expired session `id` (see the module docs); its row
    /// as refreshed, or why the request is refused.
    pub(super) async fn refresh_session(&self, id: Uuid, secret: &str) -> Result<SessionRow> {
        let claim = Uuid::new_v4();
        let row = match self.claim_session(id, claim).await? {
            Claim::Mine(row) => row,
            Claim::Done(done) => return done,
        };
        let out = self.refresh_claimed(row, claim, secret).await;
        if out.is_err() {
            // Whatever happened, the next request may try again (a no-op when the row
            // was ended or written).
            if let Ok(mut tx) = self.begin().await
                && sessions::release_refresh(&mut tx, id, claim).await.is_ok()
            {
                let _ = tx.commit().await;
            }
        }
        out
    }

    /// Claims session `id` for this refresh, waiting (bounded) while another request's
    /// claim holds it.
    async fn claim_session(&self, id: Uuid, claim: Uuid) -> Result<Claim> {
        let lease = (REFRESH_TIMEOUT + CLAIM_MARGIN).as_secs_f64();
        let deadline = tokio::time::Instant::now() + REFRESH_TIMEOUT + CLAIM_MARGIN;
        loop {
            let now = self.now();
            let mut tx = self.begin().await?;
            if let Some(row) = sessions::claim_refresh(&mut tx, id, claim, lease).await? {
                if row.expires_at > now {
                    // Another request refreshed it while this one waited.
                    drop(tx);
                    return Ok(Claim::Done(Ok(row)));
                }
                tx.commit().await?;
                return Ok(Claim::Mine(row));
            }
            let row = sessions::get(&mut tx, id).await?;
            drop(tx);
            let Some(row) = row else {
                return Ok(Claim::Done(Err(expired())));
            };
            if row.ended_at.is_some() {
                return Ok(Claim::Done(Err(ended())));
            }
            if row.expires_at > now {
                return Ok(Claim::Done(Ok(row)));
            }
            // Another request is asking the provider: its answer is this one's too.
            if tokio::time::Instant::now() >= deadline {
                return Ok(Claim::Done(Err(Error::Unauthenticated(
                    "session expired and its refresh is taking too long; try again later or sign in again".into(),
                ))));
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    }

    /// The refresh of `row`, claimed as `claim`: the provider asked with no transaction
    /// open, the answer written only while the claim holds and the session lives.
    async fn refresh_claimed(
        &self,
        row: SessionRow,
        claim: Uuid,
        secret: &str,
    ) -> Result<SessionRow> {
        let ids = self.identities();
        let now = self.now();
        let (Some(sealed), Some(login)) = (&row.refresh_sealed, &ids.login) else {
            return Err(expired());
        };
        if row.max_expires_at <= now {
            // sessionMaxAge: no refresh extends it; it no longer counts as live.
            let filter = EndFilter {
                id: Some(row.id),
                ..EndFilter::default()
            };
            let mut tx = self.begin().await?;
            sessions::end(&mut tx, &filter, now, "hub", Some("reached sessionMaxAge")).await?;
            tx.commit().await?;
            return Err(expired());
        }
        let refresh = unseal(secret, sealed).ok_or_else(expired)?;
        let asked = tokio::time::timeout(REFRESH_TIMEOUT, login.refresh(&refresh)).await;
        let tokens = match asked {
            Ok(Ok(t)) => t,
            Ok(Err(RefreshError::Unavailable(e))) => {
                return Err(self.unavailable(&row, &e));
            }
            Err(_) => {
                let e = format!("no answer within {}s", REFRESH_TIMEOUT.as_secs());
                return Err(self.unavailable(&row, &e));
            }
            Ok(Err(RefreshError::Refused(e))) => {
                tracing::info!(session = %row.id, error = %e, "session refresh refused: the session ends");
                let why = "the identity provider refused to refresh it (the grant was revoked or expired)";
                return Err(self.end_unrefreshable(&row, "refresh_refused", why).await);
            }
        };
        // OIDC Core 12.2: a refresh answer may leave out the ID token; the
        // access token's lifetime then bounds the session.
        let (expires_at, identity) = match tokens.id_token.as_deref() {
            Some(id_token) => match ids.jwt.verify(id_token, now).await {
                Ok(v) if v.identity.issuer == row.issuer && v.identity.subject == row.subject => {
                    (v.expires_at, v.identity)
                }
                Ok(_) => {
                    let why = "the refreshed ID token names another person";
                    return Err(self.end_unrefreshable(&row, "refresh_invalid", why).await);
                }
                Err(e) => {
                    let why = format!("the refreshed ID token was refused: {e}");
                    return Err(self.end_unrefreshable(&row, "refresh_invalid", &why).await);
                }
            },
            None => match tokens.expires_in.filter(|s| *s > 0) {
                Some(s) => (now + ChronoDuration::seconds(s), identity_of_row(&row)),
                None => {
                    let why =
                        "the provider's refresh answer has neither an ID token nor expires_in";
                    return Err(self.end_unrefreshable(&row, "refresh_invalid", why).await);
                }
            },
        };
        let resealed = tokens
            .refresh_token
            .as_deref()
            .map(|r| seal(secret, r))
            .or_else(|| row.refresh_sealed.clone());
        let refreshed = Refreshed {
            expires_at: expires_at.min(row.max_expires_at),
            refresh_sealed: resealed.as_deref(),
            name: &identity.name,
            email: identity.email.as_deref(),
            groups: &identity.groups,
        };
        let mut tx = self.begin().await?;
        let written = sessions::extend_claimed(&mut tx, row.id, claim, &refreshed).await?;
        let Some(written) = written else {
            // Ended meanwhile (a logout, an admin): that wins. Or the claim ran out and
            // another request refreshed it: its answer stands.
            let now_row = sessions::get(&mut tx, row.id).await?;
            drop(tx);
            ids.metrics.session_refresh("superseded");
            return match now_row {
                Some(r) if r.ended_at.is_none() && r.expires_at > now => Ok(r),
                Some(r) if r.ended_at.is_some() => Err(ended()),
                _ => Err(expired()),
            };
        };
        tx.commit().await?;
        ids.metrics.session_refresh("ok");
        Ok(written)
    }

    /// The provider could not be asked: counted, logged, and the request's 401 (the
    /// session stays for a later request to refresh).
    fn unavailable(&self, row: &SessionRow, e: &str) -> Error {
        self.identities().metrics.session_refresh("unavailable");
        tracing::warn!(session = %row.id, error = %e, "session refresh: the provider could not be asked");
        Error::Unauthenticated(
            "session expired and the identity provider cannot be reached to refresh it; try again later or sign in again".into(),
        )
    }

    /// Ends `row` for good (the provider refused to refresh it, or its
    /// answer was refused), audited as `session.end` naming the
    /// person; then the refusal (`sign_in.refused`) and the error to answer.
    async fn end_unrefreshable(&self, row: &SessionRow, reason: &'static str, why: &str) -> Error {
        let ids = self.identities();
        let outcome = if reason == "refresh_refused" {
            "refused"
        } else {
            "invalid"
        };
        ids.metrics.session_refresh(outcome);
        let identity = identity_of_row(row);
        let now = self.now();
        let text = format!("{reason}: {why}");
        let ended = async {
            let mut tx = self.begin().await?;
            let filter = EndFilter {
                id: Some(row.id),
                ..EndFilter::default()
            };
            let ended =
                sessions::end(&mut tx, &filter, now, ENDED_BY_PROVIDER, Some(&text)).await?;
            if !ended.is_empty() {
                let actor = identity
                    .email
                    .clone()
                    .unwrap_or_else(|| identity.name.clone());
                let entry = NewAudit {
                    at: now,
                    actor: &actor,
                    action: "session.end",
                    target_kind: "session",
                    target_name: &identity.audit_name(),
                    before: None,
                    after: Some(json!({
                        "sessions": [row.id],
                        "issuer": identity.issuer,
                        "subject": identity.subject,
                        "name": identity.name,
                        "email": identity.email,
                        "endedBy": ENDED_BY_PROVIDER,
                        "endReason": reason,
                    })),
                    reason: Some(&text),
                    who: Who {
                        kind: Some("person".into()),
                        issuer: Some(identity.issuer.clone()),
                        subject: Some(identity.subject.clone()),
                        email: identity.email.clone(),
                        groups: Some(identity.groups.clone()),
                        ..Who::default()
                    },
                };
                crate::db::audit::insert(&mut tx, &entry).await?;
            }
            tx.commit().await?;
            Ok::<_, Error>(())
        }
        .await;
        if let Err(e) = ended {
            tracing::warn!(session = %row.id, error = %e, "could not end a session the provider would not refresh");
        }
        let error = Error::Unauthenticated(format!("session ended: {why}; sign in again"));
        let r = Refusal::new(Flow::Refresh, reason, error).by(Some(identity), true);
        self.refuse(r).await
    }
}
