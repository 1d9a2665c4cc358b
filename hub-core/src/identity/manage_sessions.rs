//! Listing and ending dashboard sessions: a signed-in person's own (the
//! dashboard's Sessions screen, `fleetgate session list --mine`), and an
//! admin's over anyone's. Every end is one audited write (`session.end`)
//! naming whose sessions ended; the audit entry's actor says who ended them.

use fleetgate_api_types::{EndMySessions, EndSessions, SessionRecord, SessionsEnded};
use uuid::Uuid;

use super::sessions::{identity_of_row, session_audit};
use crate::db::revision::Affected;
use crate::db::sessions::{self, EndFilter, SessionRow};
use crate::service::{Actor, Identity, Role, Service, Written};
use crate::{Error, Result, validate};

/// At most this many sessions are listed.
const LIST_LIMIT: i64 = 1000;

impl Service {
    /// Live sessions (admin), optionally of one subject or email; `current`
    /// (the admin's own, if any) is marked.
    pub async fn list_sessions(
        &self,
        actor: &Actor,
        current: Option<Uuid>,
        subject: Option<&str>,
    ) -> Result<Vec<SessionRecord>> {
        actor.require(Role::Admin)?;
        let mut conn = self.conn().await?;
        let rows = sessions::live(&mut conn, self.now(), subject, LIST_LIMIT).await?;
        Ok(rows.iter().map(|r| record(r, current)).collect())
    }

    /// Ends sessions (admin): every live session of a person, or the one
    /// `id` names (404 when it is not live, or not that person's).
    pub async fn end_sessions(&self, actor: &Actor, req: &EndSessions) -> Result<SessionsEnded> {
        actor.require(Role::Admin)?;
        let subject = req.subject.trim();
        if subject.is_empty() && req.id.is_none() {
            return Err(Error::invalid(
                "subject",
                "name the person (subject or email) or the session (id)",
            ));
        }
        validate::optional_reason("reason", req.reason.as_deref())?;
        let filter = EndFilter {
            id: req.id,
            issuer: req.issuer.as_deref(),
            subject_or_email: (!subject.is_empty()).then_some(subject),
            ..EndFilter::default()
        };
        let ended = self.end_audited(actor, &filter, req.reason.clone()).await?;
        not_found_if_none(req.id, ended)
    }

    /// The caller's own live sessions, newest first; `current` (the session
    /// the request came with) is marked. Only a person has sessions.
    pub async fn my_sessions(
        &self,
        actor: &Actor,
        current: Option<Uuid>,
    ) -> Result<Vec<SessionRecord>> {
        let (issuer, subject) = person_of(actor)?;
        let mut conn = self.conn().await?;
        let rows = sessions::of_person(&mut conn, self.now(), issuer, subject, LIST_LIMIT).await?;
        Ok(rows.iter().map(|r| record(r, current)).collect())
    }

    /// Ends the caller's own sessions: the one `id` names (404 when it is
    /// not one of theirs), else all of them, or all but `current` with
    /// `keepCurrent`.
    pub async fn end_my_sessions(
        &self,
        actor: &Actor,
        current: Option<Uuid>,
        req: &EndMySessions,
    ) -> Result<SessionsEnded> {
        let (issuer, subject) = person_of(actor)?;
        let filter = EndFilter {
            id: req.id,
            issuer: Some(issuer),
            subject: Some(subject),
            except: if req.id.is_none() && req.keep_current {
                current
            } else {
                None
            },
            ..EndFilter::default()
        };
        let reason = Some("ended by its owner".to_string());
        let ended = self.end_audited(actor, &filter, reason).await?;
        not_found_if_none(req.id, ended)
    }

    /// Ends the live sessions `filter` matches in one write, audited as
    /// `session.end` (the person whose sessions ended, and their ids).
    async fn end_audited(
        &self,
        actor: &Actor,
        filter: &EndFilter<'_>,
        reason: Option<String>,
    ) -> Result<u64> {
        let now = self.now();
        let by = actor.name.clone();
        let (by, reason) = (&by, &reason);
        let (ended, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let ended = sessions::end(tx, filter, now, by, reason.as_deref()).await?;
                    let Some(first) = ended.first() else {
                        return Ok(Written::unchanged(0));
                    };
                    let identity = identity_of_row(first);
                    let mut audit = session_audit("session.end", &identity, first, reason.clone());
                    audit.after = Some(serde_json::json!({
                        "sessions": ended.iter().map(|r| r.id).collect::<Vec<_>>(),
                        "issuer": identity.issuer,
                        "subject": identity.subject,
                        "name": identity.name,
                        "email": identity.email,
                    }));
                    Ok(Written::changed(
                        ended.len() as u64,
                        audit,
                        Affected::Clusters(Vec::new()),
                    ))
                })
            })
            .await?;
        Ok(ended)
    }
}

/// The issuer and subject of a signed-in person; 403 for anyone else (an
/// API token or a workload has no sessions).
fn person_of(actor: &Actor) -> Result<(&str, &str)> {
    match &actor.identity {
        Identity::Person(p) => Ok((&p.issuer, &p.sub)),
        other => Err(Error::Forbidden(format!(
            "only a person signed in through the identity provider has sessions; this caller is a {}",
            other.kind()
        ))),
    }
}

fn not_found_if_none(id: Option<Uuid>, ended: u64) -> Result<SessionsEnded> {
    match id {
        Some(id) if ended == 0 => Err(Error::NotFound {
            kind: "session",
            name: id.to_string(),
        }),
        _ => Ok(SessionsEnded { ended }),
    }
}

fn record(row: &SessionRow, current: Option<Uuid>) -> SessionRecord {
    SessionRecord {
        id: row.id,
        identity: identity_of_row(row),
        created_at: row.created_at,
        expires_at: row.expires_at,
        last_used_at: row.last_used_at,
        user_agent: row.user_agent.clone(),
        current: current == Some(row.id),
    }
}
