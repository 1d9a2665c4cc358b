//! The `identity_sessions` and `identity_logins` tables (see migration 0018).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::Result;

/// One session (without its secret hash).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SessionRow {
    pub id: Uuid,
    pub issuer: String,
    pub subject: String,
    pub name: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub max_expires_at: DateTime<Utc>,
    pub refresh_sealed: Option<Vec<u8>>,
    pub ended_at: Option<DateTime<Utc>>,
    pub user_agent: Option<String>,
    pub last_used_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, issuer, subject, name, email, groups, created_at, expires_at, \
    max_expires_at, refresh_sealed, ended_at, user_agent, last_used_at";

/// How often a session's `last_used_at` is written (not on every request).
const TOUCH_EVERY_SECONDS: f64 = 60.0;

/// A new session.
pub struct NewSession<'a> {
    pub secret_hash: &'a [u8],
    pub issuer: &'a str,
    pub subject: &'a str,
    pub name: &'a str,
    pub email: Option<&'a str>,
    pub groups: &'a [String],
    pub now: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub max_expires_at: DateTime<Utc>,
    pub refresh_sealed: Option<&'a [u8]>,
    pub user_agent: Option<&'a str>,
}

pub async fn insert(conn: &mut PgConnection, s: &NewSession<'_>) -> Result<SessionRow> {
    Ok(sqlx::query_as(sql!(
        "insert into identity_sessions (id, secret_hash, issuer, subject, name, email, groups, \
         created_at, expires_at, max_expires_at, refresh_sealed, user_agent, last_used_at) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $8) returning {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(s.secret_hash)
    .bind(s.issuer)
    .bind(s.subject)
    .bind(s.name)
    .bind(s.email)
    .bind(s.groups)
    .bind(s.now)
    .bind(s.expires_at)
    .bind(s.max_expires_at)
    .bind(s.refresh_sealed)
    .bind(s.user_agent)
    .fetch_one(conn)
    .await?)
}

/// The session whose secret hashes to `hash`, with the stored hash.
pub async fn by_hash(
    conn: &mut PgConnection,
    hash: &[u8],
) -> Result<Option<(SessionRow, Vec<u8>)>> {
    #[derive(sqlx::FromRow)]
    struct Found {
        #[sqlx(flatten)]
        row: SessionRow,
        secret_hash: Vec<u8>,
    }
    let found: Option<Found> = sqlx::query_as(sql!(
        "select {COLUMNS}, secret_hash from identity_sessions where secret_hash = $1"
    ))
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|f| (f.row, f.secret_hash)))
}

/// The session `id` as it is now (no lock).
pub async fn get(conn: &mut PgConnection, id: Uuid) -> Result<Option<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from identity_sessions where id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?)
}

/// Claims the live session `id` for one refresh as `claim`, for `lease_seconds` on the
/// database's clock: the row as claimed, or `None` when it is ended, gone, or another
/// refresh holds an unexpired claim. The claim replaces the row lock a refresh held while
/// the provider answered: the caller commits at once and asks the provider with no
/// transaction open.
pub async fn claim_refresh(
    conn: &mut PgConnection,
    id: Uuid,
    claim: Uuid,
    lease_seconds: f64,
) -> Result<Option<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "update identity_sessions set refresh_claim = $2, \
         refresh_claim_until = now() + make_interval(secs => $3) \
         where id = $1 and ended_at is null \
           and (refresh_claim_until is null or refresh_claim_until <= now()) \
         returning {COLUMNS}"
    ))
    .bind(id)
    .bind(claim)
    .bind(lease_seconds)
    .fetch_optional(conn)
    .await?)
}

/// Gives up `claim` on session `id` (the provider could not be asked, or another
/// refresh got there first).
pub async fn release_refresh(conn: &mut PgConnection, id: Uuid, claim: Uuid) -> Result<()> {
    sqlx::query(
        "update identity_sessions set refresh_claim = null, refresh_claim_until = null \
         where id = $1 and refresh_claim = $2",
    )
    .bind(id)
    .bind(claim)
    .execute(conn)
    .await?;
    Ok(())
}

/// A refreshed session's new expiry, refresh token and claims, as a compare-and-swap: only while `claim` still holds the row and the session
/// is not ended (a logout or an admin's end during the refresh wins: `None`), releasing
/// the claim.
pub async fn extend_claimed(
    conn: &mut PgConnection,
    id: Uuid,
    claim: Uuid,
    r: &Refreshed<'_>,
) -> Result<Option<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "update identity_sessions set expires_at = $2, refresh_sealed = $3, name = $4, \
         email = $5, groups = $6, refresh_claim = null, refresh_claim_until = null \
         where id = $1 and ended_at is null and refresh_claim = $7 returning {COLUMNS}"
    ))
    .bind(id)
    .bind(r.expires_at)
    .bind(r.refresh_sealed)
    .bind(r.name)
    .bind(r.email)
    .bind(r.groups)
    .bind(claim)
    .fetch_optional(conn)
    .await?)
}

/// What a refresh changes: the new expiry, the sealed refresh token, and
/// the person's name, email and groups as the refreshed ID token has them.
pub struct Refreshed<'a> {
    pub expires_at: DateTime<Utc>,
    pub refresh_sealed: Option<&'a [u8]>,
    pub name: &'a str,
    pub email: Option<&'a str>,
    pub groups: &'a [String],
}

/// Records that a request presented the session, at most once a minute.
pub async fn touch(conn: &mut PgConnection, id: Uuid, now: DateTime<Utc>) -> Result<()> {
    sqlx::query(
        "update identity_sessions set last_used_at = $2 \
         where id = $1 and ended_at is null \
           and (last_used_at is null or last_used_at < $2 - make_interval(secs => $3))",
    )
    .bind(id)
    .bind(now)
    .bind(TOUCH_EVERY_SECONDS)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends the sessions matching `filter` that are still live; returns them.
pub async fn end(
    conn: &mut PgConnection,
    filter: &EndFilter<'_>,
    now: DateTime<Utc>,
    by: &str,
    reason: Option<&str>,
) -> Result<Vec<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "update identity_sessions set ended_at = $1, ended_by = $2, end_reason = $3, \
         refresh_sealed = null \
         where ended_at is null and (expires_at > $1 or refresh_sealed is not null) \
           and ($4::uuid is null or id = $4) \
           and ($5::text is null or issuer = $5) \
           and ($6::text is null or subject = $6 or lower(email) = lower($6)) \
           and ($7::text is null or subject = $7) \
           and ($8::uuid is null or id <> $8) \
         returning {COLUMNS}"
    ))
    .bind(now)
    .bind(by)
    .bind(reason)
    .bind(filter.id)
    .bind(filter.issuer)
    .bind(filter.subject_or_email)
    .bind(filter.subject)
    .bind(filter.except)
    .fetch_all(conn)
    .await?)
}

/// Which sessions to end.
#[derive(Debug, Default)]
pub struct EndFilter<'a> {
    pub id: Option<Uuid>,
    pub issuer: Option<&'a str>,
    /// Subject or email.
    pub subject_or_email: Option<&'a str>,
    /// Exactly this subject.
    pub subject: Option<&'a str>,
    /// Not this session (the caller's own, "everywhere else").
    pub except: Option<Uuid>,
}

/// Live sessions, newest first, optionally of one subject or email.
pub async fn live(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    subject: Option<&str>,
    limit: i64,
) -> Result<Vec<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from identity_sessions \
         where ended_at is null and (expires_at > $1 or refresh_sealed is not null) \
           and ($2::text is null or subject = $2 or lower(email) = lower($2)) \
         order by created_at desc limit $3"
    ))
    .bind(now)
    .bind(subject)
    .bind(limit)
    .fetch_all(conn)
    .await?)
}

/// The live sessions of one person (exact issuer and subject), newest first.
pub async fn of_person(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    issuer: &str,
    subject: &str,
    limit: i64,
) -> Result<Vec<SessionRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from identity_sessions \
         where ended_at is null and (expires_at > $1 or refresh_sealed is not null) \
           and issuer = $2 and subject = $3 \
         order by created_at desc limit $4"
    ))
    .bind(now)
    .bind(issuer)
    .bind(subject)
    .bind(limit)
    .fetch_all(conn)
    .await?)
}

/// Stores a pending authorization request.
pub async fn insert_login(
    conn: &mut PgConnection,
    state_hash: &[u8],
    nonce: &str,
    verifier: &str,
    return_to: &str,
    expires_at: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "insert into identity_logins (state_hash, nonce, code_verifier, return_to, expires_at) \
         values ($1, $2, $3, $4, $5)",
    )
    .bind(state_hash)
    .bind(nonce)
    .bind(verifier)
    .bind(return_to)
    .bind(expires_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Takes (deletes and returns) the pending request of `state_hash` if it has
/// not expired: a `state` works once. Expired requests are swept on the way.
pub async fn take_login(
    conn: &mut PgConnection,
    state_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<(String, String, String)>> {
    sqlx::query("delete from identity_logins where expires_at <= $1")
        .bind(now)
        .execute(&mut *conn)
        .await?;
    Ok(sqlx::query_as(
        "delete from identity_logins where state_hash = $1 and expires_at > $2 \
         returning nonce, code_verifier, return_to",
    )
    .bind(state_hash)
    .bind(now)
    .fetch_optional(conn)
    .await?)
}
