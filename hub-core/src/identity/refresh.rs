//! Refreshing a dashboard session at the provider. A session lives as long
//! as the provider's ID token; when it has expired and the session holds a
//! refresh token (sealed, see [`super::sessions`]), the next request
//! refreshes it: the new ID token is verified like a sign-in's and moves
//! the expiry (never past `sessionMaxAge`), and the person's name, email and
//! groups follow it. One request refreshes a session at a time, across
//! replicas: the row is locked while the provider answers, and a request
//! that waited finds it refreshed (a provider that rotates refresh tokens
//! would otherwise see the old one reused and revoke the grant).
//!
//! When the provider refuses (`invalid_grant`: the grant was revoked, the
//! person removed, the refresh token expired) or answers with an ID token
//! the hub refuses, the session ENDS: the row is ended with reason
//! `refresh_refused` (or `refresh_invalid`), audited as `session.end` and
//! `sign_in.refused`, and later requests get "session ended" without asking
//! the provider again. When the provider cannot be asked (down, 5xx) the
//! request gets 401 and the session stays for a later request to refresh.
//! Counted in `fleetgate_hub_identity_session_refreshes_total{outcome}`.

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

fn expired() -> Error {
    Error::Unauthenticated("session expired; sign in again".into())
}

impl Service {
    /// Refreshes the expired session `id` (see the module docs); its row
    /// as refreshed, or why the request is refused.
    pub(super) async fn refresh_session(&self, id: Uuid, secret: &str) -> Result<SessionRow> {
        let ids = self.identities();
        let now = self.now();
        let mut tx = self.begin().await?;
        let Some(row) = sessions::lock(&mut tx, id).await? else {
            return Err(expired());
        };
        if row.ended_at.is_some() {
            return Err(Error::Unauthenticated(
                "session ended; sign in again".into(),
            ));
        }
        if row.expires_at > now {
            // Another request refreshed it while this one waited.
            return Ok(row);
        }
        let (Some(sealed), Some(login)) = (&row.refresh_sealed, &ids.login) else {
            return Err(expired());
        };
        if row.max_expires_at <= now {
            // sessionMaxAge: no refresh extends it; it no longer counts as live.
            let filter = EndFilter {
                id: Some(row.id),
                ..EndFilter::default()
            };
            sessions::end(&mut tx, &filter, now, "hub", Some("reached sessionMaxAge")).await?;
            tx.commit().await?;
            return Err(expired());
        }
        let refresh = unseal(secret, sealed).ok_or_else(expired)?;
        let tokens = match login.refresh(&refresh).await {
            Ok(t) => t,
            Err(RefreshError::Unavailable(e)) => {
                drop(tx);
                ids.metrics.session_refresh("unavailable");
                tracing::warn!(session = %row.id, error = %e, "session refresh: the provider could not be asked");
                return Err(Error::Unauthenticated(
                    "session expired and the identity provider cannot be reached to refresh it; try again later or sign in again".into(),
                ));
            }
            Err(RefreshError::Refused(e)) => {
                tracing::info!(session = %row.id, error = %e, "session refresh refused: the session ends");
                let why = "the identity provider refused to refresh it (the grant was revoked or expired)";
                return Err(self
                    .end_unrefreshable(tx, &row, "refresh_refused", why)
                    .await);
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
                    return Err(self
                        .end_unrefreshable(tx, &row, "refresh_invalid", why)
                        .await);
                }
                Err(e) => {
                    let why = format!("the refreshed ID token was refused: {e}");
                    return Err(self
                        .end_unrefreshable(tx, &row, "refresh_invalid", &why)
                        .await);
                }
            },
            None => match tokens.expires_in.filter(|s| *s > 0) {
                Some(s) => (now + ChronoDuration::seconds(s), identity_of_row(&row)),
                None => {
                    let why =
                        "the provider's refresh answer has neither an ID token nor expires_in";
                    return Err(self
                        .end_unrefreshable(tx, &row, "refresh_invalid", why)
                        .await);
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
        let row = sessions::extend(&mut tx, row.id, &refreshed)
            .await?
            .ok_or_else(expired)?;
        tx.commit().await?;
        ids.metrics.session_refresh("ok");
        Ok(row)
    }

    /// Ends `row` for good (the provider refused to refresh it, or its
    /// answer was refused) in `tx`, audited as `session.end` naming the
    /// person; then the refusal (`sign_in.refused`) and the error to answer.
    async fn end_unrefreshable(
        &self,
        mut tx: sqlx::Transaction<'static, sqlx::Postgres>,
        row: &SessionRow,
        reason: &'static str,
        why: &str,
    ) -> Error {
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
