//! The `replica_leases` table: one row per hub replica, renewed every few
//! seconds while it runs. Spoke liveness is derived from it (see
//! `crate::liveness`): a cluster's connection row names the replica that
//! serves its stream, and the stream counts while that replica's lease holds.

use chrono::{DateTime, Duration, Utc};
use sqlx::PgConnection;

use crate::Result;

/// Renews `replica`'s lease at `at` until `at + ttl` (creating it on the
/// replica's first renewal; `started_at` records that).
pub async fn renew(
    conn: &mut PgConnection,
    replica: &str,
    at: DateTime<Utc>,
    ttl: Duration,
) -> Result<()> {
    write(conn, replica, at, ttl, false).await
}

/// Restarts `replica`'s lease at `at` (a new run of the replica: `started_at`
/// is reset too).
pub async fn start(
    conn: &mut PgConnection,
    replica: &str,
    at: DateTime<Utc>,
    ttl: Duration,
) -> Result<()> {
    write(conn, replica, at, ttl, true).await
}

/// Holds `replica`'s lease from `at` until `at + ttl`; `restart` also moves
/// `started_at` to `at` (a new lease starts there either way).
async fn write(
    conn: &mut PgConnection,
    replica: &str,
    at: DateTime<Utc>,
    ttl: Duration,
    restart: bool,
) -> Result<()> {
    sqlx::query(
        "insert into replica_leases (replica, started_at, heartbeat_at, expires_at) \
         values ($1, $2, $2, $3) on conflict (replica) do update \
         set started_at = case when $4 then excluded.started_at \
                          else replica_leases.started_at end, \
         heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at",
    )
    .bind(replica)
    .bind(at)
    .bind(at + ttl)
    .bind(restart)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends `replica`'s lease at `at` (a drained replica serves no stream any
/// more): its heartbeat stays as the last time it was seen alive.
pub async fn end(conn: &mut PgConnection, replica: &str, at: DateTime<Utc>) -> Result<()> {
    sqlx::query(
        "update replica_leases set heartbeat_at = greatest(heartbeat_at, $2), expires_at = $2 \
         where replica = $1",
    )
    .bind(replica)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}
