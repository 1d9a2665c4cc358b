//! The `freezes` table: fleet freezes (the emergency stop), ending by themselves
//! (`expires_at`) or when someone unfreezes (`ended_at`).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

use crate::Result;

pub use fleetgate_api_types::FreezeRecord;

const COLUMNS: &str = "id, scope, reason, starts_at, expires_at, actor, created_at, requested_in, \
                       requested_by, ended_at, ended_by, end_reason";

/// Inserts a freeze; `None` when a freeze made in the same cluster at the same instant is
/// already recorded (a spoke resends until it sees its freeze recorded).
pub async fn insert(conn: &mut PgConnection, f: &FreezeRecord) -> Result<Option<FreezeRecord>> {
    let row = sqlx::query_as(sql!(
        "insert into freezes (id, scope, reason, starts_at, expires_at, actor, created_at, \
         requested_in, requested_by) values ($1, $2, $3, $4, $5, $6, $7, $8, $9) \
         on conflict do nothing returning {COLUMNS}"
    ))
    .bind(f.id)
    .bind(f.clusters.as_ref().map(Json))
    .bind(&f.reason)
    .bind(f.starts_at)
    .bind(f.expires_at)
    .bind(&f.actor)
    .bind(f.created_at)
    .bind(&f.requested_in)
    .bind(&f.requested_by)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// Every freeze neither ended nor expired at `now` (in force or starting later), oldest first.
pub async fn live(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<Vec<FreezeRecord>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from freezes where ended_at is null \
         and (expires_at is null or expires_at > $1) order by created_at, id"
    ))
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Freezes that may change some gate's state after `from`: neither ended nor expired by
/// then, oldest first. One that was ended ends at its end (its `expires_at` is moved there),
/// like a cancelled override in `outbox::overrides_since`.
pub async fn since(conn: &mut PgConnection, from: DateTime<Utc>) -> Result<Vec<FreezeRecord>> {
    let mut rows: Vec<FreezeRecord> = sqlx::query_as(sql!(
        "select {COLUMNS} from freezes where (ended_at is null or ended_at > $1) \
         and (expires_at is null or expires_at > $1) \
         and (ended_at is null or ended_at > starts_at) order by created_at, id"
    ))
    .bind(from)
    .fetch_all(conn)
    .await?;
    for f in &mut rows {
        if let Some(end) = f.ended_at {
            f.expires_at = Some(f.expires_at.map_or(end, |e| e.min(end)));
        }
    }
    Ok(rows)
}

/// Every live freeze, locked for ending (oldest first).
pub async fn live_for_update(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
) -> Result<Vec<FreezeRecord>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from freezes where ended_at is null \
         and (expires_at is null or expires_at > $1) order by created_at, id for update"
    ))
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Ends a freeze now.
pub async fn end(
    conn: &mut PgConnection,
    id: Uuid,
    at: DateTime<Utc>,
    by: &str,
    reason: &str,
) -> Result<FreezeRecord> {
    let row = sqlx::query_as(sql!(
        "update freezes set ended_at = $2, ended_by = $3, end_reason = $4 where id = $1 \
         returning {COLUMNS}"
    ))
    .bind(id)
    .bind(at)
    .bind(by)
    .bind(reason)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// Freezes newest first: live ones at `live_at`, or all (at most `limit`).
pub async fn list(
    conn: &mut PgConnection,
    live_at: Option<DateTime<Utc>>,
    limit: i64,
) -> Result<Vec<FreezeRecord>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from freezes where $1::timestamptz is null or (ended_at is null \
         and (expires_at is null or expires_at > $1)) order by created_at desc, id desc limit $2"
    ))
    .bind(live_at)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// The live freezes made inside `cluster` (at most one, normally).
pub async fn live_local(
    conn: &mut PgConnection,
    cluster: &str,
    now: DateTime<Utc>,
) -> Result<Vec<FreezeRecord>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from freezes where requested_in = $1 and ended_at is null \
         and (expires_at is null or expires_at > $2) order by created_at, id"
    ))
    .bind(cluster)
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// A freeze that ended after it began: when it stopped closing its clusters.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct EndedFreeze {
    #[sqlx(json(nullable))]
    pub scope: Option<fleetgate_policy::ClusterScope>,
    pub ended_at: DateTime<Utc>,
}

/// Per distinct scope, the latest end at or before `now` of a freeze that was in force for
/// a while — the hub's, or one made in a cluster (its scope names that cluster; ended when
/// its spoke reported the ConfigMap gone): the rollout gates' opening fences, like ended
/// closing overrides, so either unfreeze reopens rollout gates through their waves.
pub async fn ended(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<Vec<EndedFreeze>> {
    let rows = sqlx::query_as(
        "select distinct on (scope) scope, ended_at from ( \
           select scope, starts_at, \
             least(coalesce(ended_at, 'infinity'), coalesce(expires_at, 'infinity')) as ended_at \
           from freezes) f \
         where ended_at <= $1 and ended_at > starts_at order by scope, ended_at desc",
    )
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}
