//! fleetgate hub, **store** layer: all SQL of the hub lives in this crate: one file per
//! table, plain async functions taking a connection (a pooled one or a transaction), so the
//! service layer decides the transaction boundaries; the row types; the embedded migrations;
//! the hub's one error type ([`Error`]).
//!
//! Layers, bottom to top: **`fleetgate-hub-store`** → `fleetgate-hub-core` →
//! `fleetgate-hub-adapters` → `fleetgate-hub-api` → `fleetgate-hub` (binary). This crate
//! imports no other hub crate and knows no service, notification, identity or API type: what
//! it stores it takes as plain data (e.g. [`outbox::NewEvent`]). Inside it, no two files
//! import each other in a circle.
#![forbid(unsafe_code)]

/// `format!` for SQL text built only from our own constants (column lists,
/// table names), never from input: sqlx 0.9 accepts dynamic SQL only when
/// marked audited, and every value still goes through `.bind`.
macro_rules! sql {
    ($($arg:tt)*) => {
        sqlx::AssertSqlSafe(format!($($arg)*))
    };
}

pub mod access_policies;
pub mod admission_webhooks;
pub mod approvals;
pub mod audit;
pub mod calendar_feeds;
pub mod clusters;
pub mod freezes;
pub mod gates;
pub mod health;
pub mod held_objects;
pub mod inventories;
pub mod leases;
pub mod outbox;
pub mod overrides;
pub mod report_batch;
pub mod reports;
pub mod retry;
pub mod revision;
pub mod rollouts;
pub mod scope_sql;
pub mod sessions;
pub mod status;
pub mod tokens;
pub mod webhooks;

pub mod error;
pub mod liveness;

pub use error::{Error, Result};

use std::time::Duration;

use sqlx::postgres::{PgPoolOptions, PgRow};
use sqlx::{FromRow, PgConnection, PgPool};

/// The embedded migrations (`migrations/` at the workspace root).
pub static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("../migrations");

/// Connects a pool to `url`.
pub async fn connect(url: &str, max_connections: u32) -> Result<PgPool> {
    let pool = PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .connect(url)
        .await?;
    Ok(pool)
}

/// Applies pending migrations (idempotent; concurrent replicas serialise on
/// sqlx's advisory lock). Migrations a newer release applied are not an error:
/// during a rolling update (or a roll-back) this release's replicas start on
/// the schema of the next one, which only added to this one's
/// (docs/hub-operations.md, "Upgrades and version skew").
pub async fn migrate(pool: &PgPool) -> Result<()> {
    let mut migrator = sqlx::migrate!("../migrations");
    migrator.set_ignore_missing(true);
    migrator.run(pool).await?;
    Ok(())
}

/// `select 1`: is the database reachable?
/// Makes the transaction just begun on `tx` read-only REPEATABLE READ: every
/// query in it sees the same committed state, so a revision read in it
/// matches the data.
pub async fn read_snapshot(tx: &mut PgConnection) -> Result<()> {
    sqlx::query("set transaction isolation level repeatable read read only")
        .execute(tx)
        .await?;
    Ok(())
}

/// Takes the transaction-scoped advisory lock `key` (released at commit or
/// rollback).
pub async fn advisory_xact_lock(conn: &mut PgConnection, key: i64) -> Result<()> {
    sqlx::query("select pg_advisory_xact_lock($1)")
        .bind(key)
        .execute(conn)
        .await?;
    Ok(())
}

/// Tries the transaction-scoped advisory lock `key` without waiting: `true` if this
/// transaction now holds it (released at commit or rollback), `false` if another does.
pub async fn try_advisory_xact_lock(conn: &mut PgConnection, key: i64) -> Result<bool> {
    let (locked,): (bool,) = sqlx::query_as("select pg_try_advisory_xact_lock($1)")
        .bind(key)
        .fetch_one(conn)
        .await?;
    Ok(locked)
}

/// A lazily connecting one-connection pool like `pool`, whose session is
/// named `application_name` (visible in `pg_stat_activity`). Its acquire
/// timeout is short: while the server refuses connections the pool retries
/// with a backoff of up to a fifth of that timeout (sqlx), and with the
/// default 30 s a listener reconnected up to 6 s after PostgreSQL was back.
pub fn dedicated_connection(pool: &PgPool, application_name: &str) -> PgPool {
    let options = (*pool.connect_options())
        .clone()
        .application_name(application_name);
    PgPoolOptions::new()
        .max_connections(1)
        .acquire_timeout(Duration::from_secs(1))
        .connect_lazy_with(options)
}

pub async fn ping(pool: &PgPool) -> Result<()> {
    sqlx::query("select 1").execute(pool).await?;
    Ok(())
}

/// `select`, then `order`, and in between `filter` (a condition on `$1`, the
/// names) when `names` is given: all rows, or those of the named clusters.
///
/// One statement per shape, never `$1 is null or name = any($1)`: after five
/// executions PostgreSQL may cache a generic plan for a prepared statement,
/// and the generic plan of the optional filter is a sequential scan comparing
/// every row with every name of the array. Chosen while the fleet was small,
/// it stayed when it grew: 500-name batches at 10,000 clusters took ~200 ms
/// instead of a few (fleetgate-bench --spokes 1000,10000, the hub's `fan-out
/// refresh` debug line; `hub/tests/query_plans.rs`).
pub(crate) async fn fetch_named<T>(
    conn: &mut PgConnection,
    select: &str,
    filter: &str,
    order: &str,
    names: Option<&[String]>,
) -> Result<Vec<T>>
where
    T: for<'r> FromRow<'r, PgRow> + Send + Unpin,
{
    Ok(match names {
        Some(names) => {
            sqlx::query_as(sql!("{select} {filter} {order}"))
                .bind(names)
                .fetch_all(conn)
                .await?
        }
        None => {
            sqlx::query_as(sql!("{select} {order}"))
                .fetch_all(conn)
                .await?
        }
    })
}

/// A keyset page of `table` ordered by its unique `name` column: the first
/// `limit` rows whose name sorts after `after`.
pub(crate) async fn page_by_name<T>(
    conn: &mut PgConnection,
    table: &str,
    columns: &str,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<T>>
where
    T: for<'r> FromRow<'r, PgRow> + Send + Unpin,
{
    // One statement per shape (see `fetch_named`): under a generic plan,
    // `$1 is null or name > $1` would start every page at the first name.
    let rows = match after {
        Some(after) => {
            sqlx::query_as(sql!(
                "select {columns} from {table} where name > $1 order by name limit $2"
            ))
            .bind(after)
            .bind(limit)
            .fetch_all(conn)
            .await?
        }
        None => {
            sqlx::query_as(sql!("select {columns} from {table} order by name limit $1"))
                .bind(limit)
                .fetch_all(conn)
                .await?
        }
    };
    Ok(rows)
}

/// A row together with the stored hash of its secret.
#[derive(Debug, FromRow)]
pub(crate) struct WithHash<T> {
    #[sqlx(flatten)]
    pub row: T,
    pub token_hash: Vec<u8>,
}
