//! The append-only `audit_log`: one row per write, written in the write's
//! transaction. The table rejects UPDATE/DELETE/TRUNCATE by trigger.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;

/// One audit entry, read straight into the API type.
pub use fleetgate_api_types::AuditEntry;

/// What to record (the id is assigned by the database).
#[derive(Debug, Clone)]
pub struct NewAudit<'a> {
    pub at: DateTime<Utc>,
    pub actor: &'a str,
    pub action: &'a str,
    pub target_kind: &'a str,
    pub target_name: &'a str,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<&'a str>,
}

/// Appends an entry.
pub async fn insert(conn: &mut PgConnection, e: &NewAudit<'_>) -> Result<i64> {
    let (id,): (i64,) = sqlx::query_as(
        "insert into audit_log (at, actor, action, target_kind, target_name, before, after, \
         reason) values ($1, $2, $3, $4, $5, $6, $7, $8) returning id",
    )
    .bind(e.at)
    .bind(e.actor)
    .bind(e.action)
    .bind(e.target_kind)
    .bind(e.target_name)
    .bind(&e.before)
    .bind(&e.after)
    .bind(e.reason)
    .fetch_one(conn)
    .await?;
    Ok(id)
}

/// Filter for [`list`]; every present criterion must hold.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    pub action: Option<String>,
    pub target_kind: Option<String>,
    pub target_name: Option<String>,
    /// `at >= since`
    pub since: Option<DateTime<Utc>>,
    /// `at < until`
    pub until: Option<DateTime<Utc>>,
}

/// A page of entries, newest first (by id), with id below `before_id`.
pub async fn list(
    conn: &mut PgConnection,
    f: &AuditFilter,
    before_id: Option<i64>,
    limit: i64,
) -> Result<Vec<AuditEntry>> {
    let rows = sqlx::query_as(
        "select id, at, actor, action, target_kind, target_name, before, after, reason \
         from audit_log \
         where ($1::text is null or actor = $1) and ($2::text is null or action = $2) \
           and ($3::text is null or target_kind = $3) and ($4::text is null or target_name = $4) \
           and ($5::timestamptz is null or at >= $5) and ($6::timestamptz is null or at < $6) \
           and ($7::bigint is null or id < $7) \
         order by id desc limit $8",
    )
    .bind(&f.actor)
    .bind(&f.action)
    .bind(&f.target_kind)
    .bind(&f.target_name)
    .bind(f.since)
    .bind(f.until)
    .bind(before_id)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}
