//! The append-only `audit_log`: one row per write, written in the write's
//! transaction. The table rejects UPDATE/DELETE/TRUNCATE by trigger.

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, Postgres, QueryBuilder};

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
///
/// The statement names only the criteria given (`actor = $1`, not
/// `$1 is null or actor = $1`): a prepared statement may run on a cached
/// generic plan, and the optional form's only generic plan walks the whole
/// log backwards by id, filtering — with a long log, a filter matching few
/// entries reads all of them (see `db::fetch_named`). Each shape is
/// its own statement and can use `audit_log_actor`, `audit_log_target` or
/// `audit_log_at`.
pub async fn list(
    conn: &mut PgConnection,
    f: &AuditFilter,
    before_id: Option<i64>,
    limit: i64,
) -> Result<Vec<AuditEntry>> {
    let mut q = QueryBuilder::<Postgres>::new(
        "select id, at, actor, action, target_kind, target_name, before, after, reason \
         from audit_log where true",
    );
    for (column, value) in [
        ("actor", &f.actor),
        ("action", &f.action),
        ("target_kind", &f.target_kind),
        ("target_name", &f.target_name),
    ] {
        if let Some(v) = value {
            q.push(format_args!(" and {column} = "))
                .push_bind(v.clone());
        }
    }
    if let Some(since) = f.since {
        q.push(" and at >= ").push_bind(since);
    }
    if let Some(until) = f.until {
        q.push(" and at < ").push_bind(until);
    }
    if let Some(id) = before_id {
        q.push(" and id < ").push_bind(id);
    }
    q.push(" order by id desc limit ").push_bind(limit);
    Ok(q.build_query_as().fetch_all(conn).await?)
}
