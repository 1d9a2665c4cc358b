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
    /// Who beyond the display name (see [`Who`]).
    pub who: Who,
}

/// The principal behind an entry: kind, issuer, subject, email, groups,
/// what granted the action and the access policies among that.
#[derive(Debug, Clone, Default)]
pub struct Who {
    pub kind: Option<String>,
    pub issuer: Option<String>,
    pub subject: Option<String>,
    pub email: Option<String>,
    pub groups: Option<Vec<String>>,
    pub granted_by: Option<Vec<String>>,
    pub policies: Option<Vec<String>>,
}

/// Appends an entry.
pub async fn insert(conn: &mut PgConnection, e: &NewAudit<'_>) -> Result<i64> {
    let (id,): (i64,) = sqlx::query_as(
        "insert into audit_log (at, actor, action, target_kind, target_name, before, after, \
         reason, actor_kind, actor_issuer, actor_subject, actor_email, actor_groups, granted_by, \
         actor_policies) values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, \
         $15) returning id",
    )
    .bind(e.at)
    .bind(e.actor)
    .bind(e.action)
    .bind(e.target_kind)
    .bind(e.target_name)
    .bind(&e.before)
    .bind(&e.after)
    .bind(e.reason)
    .bind(&e.who.kind)
    .bind(&e.who.issuer)
    .bind(&e.who.subject)
    .bind(&e.who.email)
    .bind(&e.who.groups)
    .bind(&e.who.granted_by)
    .bind(&e.who.policies)
    .fetch_one(conn)
    .await?;
    Ok(id)
}

/// Filter for [`list`]; every present criterion must hold.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    pub actor: Option<String>,
    /// A person: their `sub`, email (any case) or display name (`actor`).
    pub person: Option<String>,
    /// A team: the access policy that granted the action, or a group of
    /// the person who made it.
    pub team: Option<String>,
    pub action: Option<String>,
    pub target_kind: Option<String>,
    pub target_name: Option<String>,
    /// A scoped reader's gates and clusters: only entries about them.
    pub within: Option<(Vec<String>, Vec<String>)>,
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
        "select id, at, actor, action, target_kind, target_name, before, after, reason, \
         actor_kind, actor_issuer, actor_subject, actor_email, actor_groups, granted_by \
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
    if let Some(p) = &f.person {
        q.push(" and (actor_subject = ")
            .push_bind(p.clone())
            .push(" or lower(actor_email) = lower(")
            .push_bind(p.clone())
            .push(") or actor = ")
            .push_bind(p.clone())
            .push(")");
    }
    if let Some(t) = &f.team {
        q.push(" and (actor_policies @> array[")
            .push_bind(t.clone())
            .push("]::text[] or actor_groups @> array[")
            .push_bind(t.clone())
            .push("]::text[])");
    }
    if let Some((gates, clusters)) = &f.within {
        q.push(" and ((target_kind = 'gate' and target_name = any(")
            .push_bind(gates.clone())
            .push(")) or (target_kind = 'cluster' and target_name = any(")
            .push_bind(clusters.clone())
            .push(")))");
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
