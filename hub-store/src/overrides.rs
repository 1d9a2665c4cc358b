//! The `overrides` table: manual opens/closes of a gate for some of its
//! clusters, expiring by themselves (`expires_at`) or cancelled.

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::Result;

/// One stored override, read straight into the API type (its `clusters` are the
/// `scope` column).
pub use fleetgate_api_types::OverrideRecord;

pub(crate) const COLUMNS: &str = "id, gate, scope, state, starts_at, expires_at, actor, reason, \
                       created_at, cancelled_at, cancelled_by, requested_in, requested_by, emergency, \
                       approval_request";

/// Inserts an override.
pub async fn insert(conn: &mut PgConnection, o: &OverrideRecord) -> Result<OverrideRecord> {
    let row = sqlx::query_as(sql!(
        "insert into overrides (id, gate, scope, state, starts_at, expires_at, actor, reason, \
         created_at, requested_in, requested_by, emergency, approval_request) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) returning {COLUMNS}"
    ))
    .bind(o.id)
    .bind(&o.gate)
    .bind(o.clusters.as_ref().map(Json))
    .bind(&o.state)
    .bind(o.starts_at)
    .bind(o.expires_at)
    .bind(&o.actor)
    .bind(&o.reason)
    .bind(o.created_at)
    .bind(&o.requested_in)
    .bind(&o.requested_by)
    .bind(o.emergency)
    .bind(o.approval_request)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// The override with `id`, locked until the transaction ends.
pub async fn get_for_update(conn: &mut PgConnection, id: Uuid) -> Result<Option<OverrideRecord>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from overrides where id = $1 for update"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// Marks the override cancelled.
pub async fn cancel(
    conn: &mut PgConnection,
    id: Uuid,
    at: DateTime<Utc>,
    by: &str,
) -> Result<OverrideRecord> {
    let row = sqlx::query_as(sql!(
        "update overrides set cancelled_at = $2, cancelled_by = $3 where id = $1 \
         returning {COLUMNS}"
    ))
    .bind(id)
    .bind(at)
    .bind(by)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// Filter for [`list`].
#[derive(Debug, Clone, Default)]
pub struct OverrideFilter {
    /// Only this gate's overrides.
    pub gate: Option<String>,
    /// Only overrides not cancelled and not expired at this instant
    /// (active now or starting later).
    pub live_at: Option<DateTime<Utc>>,
}

/// A page of overrides, newest first, after the `(created_at, id)` cursor.
pub async fn list(
    conn: &mut PgConnection,
    filter: &OverrideFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<OverrideRecord>> {
    // Only the criteria given, one statement per shape (see `audit::list`).
    let mut q =
        QueryBuilder::<Postgres>::new(format!("select {COLUMNS} from overrides where true"));
    if let Some(gate) = &filter.gate {
        q.push(" and gate = ").push_bind(gate.clone());
    }
    if let Some(at) = filter.live_at {
        q.push(" and cancelled_at is null and (expires_at is null or expires_at > ")
            .push_bind(at)
            .push(")");
    }
    if let Some((at, id)) = after {
        q.push(" and (created_at, id) < (")
            .push_bind(at)
            .push(", ")
            .push_bind(id)
            .push(")");
    }
    q.push(" order by created_at desc, id desc limit ")
        .push_bind(limit);
    Ok(q.build_query_as().fetch_all(conn).await?)
}

/// Every override of `gates` not cancelled and not expired at `now`.
pub async fn live_for_gates(
    conn: &mut PgConnection,
    gates: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<OverrideRecord>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from overrides where gate = any($1) and cancelled_at is null \
         and (expires_at is null or expires_at > $2) order by created_at, id"
    ))
    .bind(gates)
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// A closing override that ended (expired or was cancelled) after it had begun: the latest
/// such end per gate and scope ([`ended_closes`]).
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EndedClose {
    pub gate: String,
    /// Which clusters; `None`: the gate's whole scope.
    #[sqlx(json(nullable))]
    pub scope: Option<fleetgate_policy::ClusterScope>,
    /// When it stopped closing the gate: the earlier of its expiry and its cancellation.
    pub ended_at: DateTime<Utc>,
}

/// For each of `gates` and each distinct override scope, the latest end at or before `now`
/// of a closing override that was in effect for a while (cancelled before its start: never
/// closed anything). One row per (gate, scope), however many freezes the gate has had:
/// only the latest end fences an opening (docs/rollouts.md). Read through
/// `overrides_by_gate` (migration 0016): a gate's own history, not every override ever made.
pub async fn ended_closes(
    conn: &mut PgConnection,
    gates: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<EndedClose>> {
    let rows = sqlx::query_as(sql!(
        "select distinct on (gate, scope) gate, scope, ended_at from (            select gate, scope, starts_at,                   least(coalesce(cancelled_at, 'infinity'), coalesce(expires_at, 'infinity'))                   as ended_at            from overrides where gate = any($1) and state = 'closed') o          where ended_at <= $2 and ended_at > starts_at          order by gate, scope, ended_at desc"
    ))
    .bind(gates)
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// The override recording a request made in a cluster, cancelled or not: a
/// spoke resends a request until it sees it, so a repeat must find the first.
pub async fn find_recorded(
    conn: &mut PgConnection,
    gate: &str,
    state: &str,
    created_at: DateTime<Utc>,
    actor: &str,
) -> Result<Option<OverrideRecord>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from overrides where gate = $1 and state = $2 and created_at = $3 \
         and actor = $4 limit 1"
    ))
    .bind(gate)
    .bind(state)
    .bind(created_at)
    .bind(actor)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}
