//! The `calendar_feeds` table: one row per `calendar.url` window of a gate, with the last good
//! copy of the feed, its expansion, the last fetch's outcome, when it is due next, and the lease
//! of the replica fetching it.

use chrono::{DateTime, Duration, Utc};
use sqlx::PgConnection;

use crate::Result;

/// One feed row.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FeedRow {
    pub gate: String,
    pub window_name: String,
    pub url: String,
    pub refresh_seconds: i64,
    pub max_stale_seconds: i64,
    pub secret_name: Option<String>,
    pub published_fetched_at: Option<DateTime<Utc>>,
    pub body_sha256: Option<Vec<u8>>,
    pub etag: Option<String>,
    pub last_modified: Option<String>,
    pub occurrences: serde_json::Value,
    pub rejected: serde_json::Value,
    pub expanded_from: Option<DateTime<Utc>>,
    pub expanded_to: Option<DateTime<Utc>>,
    pub refresh_hint_seconds: Option<i64>,
    pub fetched_at: Option<DateTime<Utc>>,
    pub changed_at: Option<DateTime<Utc>>,
    pub attempted_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub failures: i32,
    pub stale_announced_at: Option<DateTime<Utc>>,
    pub next_fetch_at: DateTime<Utc>,
}

const COLUMNS: &str = "gate, window_name, url, refresh_seconds, max_stale_seconds, \
     secret_name, published_fetched_at, body_sha256, etag, last_modified, occurrences, \
     rejected, expanded_from, expanded_to, refresh_hint_seconds, fetched_at, changed_at, \
     attempted_at, last_error, failures, stale_announced_at, next_fetch_at";

/// A feed window of a gate's manifest.
#[derive(Debug, Clone)]
pub struct FeedWindow {
    pub window: String,
    pub url: String,
    pub refresh: Duration,
    pub max_stale: Duration,
    pub secret_name: Option<String>,
}

/// Makes `gate`'s rows match its feed windows: rows of windows that are gone or whose URL
/// changed are dropped (a new URL starts over), new ones are due at once.
pub async fn sync(
    conn: &mut PgConnection,
    gate: &str,
    feeds: &[FeedWindow],
    now: DateTime<Utc>,
) -> Result<()> {
    let windows: Vec<&str> = feeds.iter().map(|f| f.window.as_str()).collect();
    let urls: Vec<&str> = feeds.iter().map(|f| f.url.as_str()).collect();
    let refresh: Vec<i64> = feeds.iter().map(|f| f.refresh.num_seconds()).collect();
    let max_stale: Vec<i64> = feeds.iter().map(|f| f.max_stale.num_seconds()).collect();
    let secrets: Vec<Option<&str>> = feeds.iter().map(|f| f.secret_name.as_deref()).collect();
    sqlx::query(
        "delete from calendar_feeds f where f.gate = $1 and not exists \
         (select 1 from unnest($2::text[], $3::text[]) as w(window_name, url) \
          where w.window_name = f.window_name and w.url = f.url)",
    )
    .bind(gate)
    .bind(&windows)
    .bind(&urls)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into calendar_feeds (gate, window_name, url, refresh_seconds, max_stale_seconds, \
         secret_name, next_fetch_at) select $1, w.window_name, w.url, w.refresh, w.max_stale, \
         w.secret, $4 from unnest($2::text[], $3::text[], $5::bigint[], $6::bigint[], $7::text[]) \
         as w(window_name, url, refresh, max_stale, secret) \
         on conflict (gate, window_name) do update set refresh_seconds = excluded.refresh_seconds, \
         max_stale_seconds = excluded.max_stale_seconds, secret_name = excluded.secret_name",
    )
    .bind(gate)
    .bind(&windows)
    .bind(&urls)
    .bind(now)
    .bind(&refresh)
    .bind(&max_stale)
    .bind(&secrets)
    .execute(conn)
    .await?;
    Ok(())
}

/// Claims up to `limit` feeds due at `now` whose lease is free, for `owner` until
/// `now + lease`: one replica fetches a feed at a time (rows another transaction is claiming
/// are skipped, not waited for).
pub async fn claim_due(
    conn: &mut PgConnection,
    owner: &str,
    now: DateTime<Utc>,
    lease: Duration,
    limit: i64,
) -> Result<Vec<FeedRow>> {
    let rows = sqlx::query_as(sql!(
        "update calendar_feeds f set lease_owner = $1, lease_until = $3 \
         from (select gate, window_name from calendar_feeds \
               where next_fetch_at <= $2 and (lease_until is null or lease_until <= $2) \
               order by next_fetch_at limit $4 for update skip locked) due \
         where f.gate = due.gate and f.window_name = due.window_name \
         returning {}",
        COLUMNS
            .split(", ")
            .map(|c| format!("f.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    ))
    .bind(owner)
    .bind(now)
    .bind(now + lease)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// The row, locked, if `owner` still holds its lease (a slow fetch whose lease expired and
/// was taken over records nothing).
pub async fn get_leased(
    conn: &mut PgConnection,
    gate: &str,
    window: &str,
    owner: &str,
) -> Result<Option<FeedRow>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from calendar_feeds where gate = $1 and window_name = $2 \
         and lease_owner = $3 for update"
    ))
    .bind(gate)
    .bind(window)
    .bind(owner)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// Every feed row of `gates` (all gates when `None`), by gate and window.
pub async fn for_gates(conn: &mut PgConnection, gates: Option<&[String]>) -> Result<Vec<FeedRow>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from calendar_feeds where $1::text[] is null or gate = any($1) \
         order by gate, window_name"
    ))
    .bind(gates)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// A fetched body (new content, or the horizon moved) with its expansion.
pub struct NewCopy<'a> {
    pub body: &'a str,
    pub sha256: &'a [u8],
    pub etag: Option<&'a str>,
    pub last_modified: Option<&'a str>,
    pub occurrences: serde_json::Value,
    pub rejected: serde_json::Value,
    pub expanded_from: DateTime<Utc>,
    pub expanded_to: DateTime<Utc>,
    pub refresh_hint_seconds: Option<i64>,
    pub changed: bool,
}

/// Records a successful fetch at `now` that brought `copy` (or, with `None`, confirmed the
/// copy held: 304 or the same bytes), due again at `next`; releases the lease.
pub async fn record_success(
    conn: &mut PgConnection,
    gate: &str,
    window: &str,
    now: DateTime<Utc>,
    next: DateTime<Utc>,
    copy: Option<&NewCopy<'_>>,
    publish: bool,
) -> Result<()> {
    match copy {
        None => {
            sqlx::query(
                "update calendar_feeds set fetched_at = $3, attempted_at = $3, last_error = null, \
                 failures = 0, stale_announced_at = null, next_fetch_at = $4, lease_owner = null, \
                 lease_until = null, published_fetched_at = case when $5 then $3 \
                 else published_fetched_at end where gate = $1 and window_name = $2",
            )
            .bind(gate)
            .bind(window)
            .bind(now)
            .bind(next)
            .bind(publish)
            .execute(conn)
            .await?;
        }
        Some(c) => {
            sqlx::query(
                "update calendar_feeds set body = $3, body_sha256 = $4, etag = $5, \
                 last_modified = $6, occurrences = $7, rejected = $8, expanded_from = $9, \
                 expanded_to = $10, refresh_hint_seconds = $11, \
                 changed_at = case when $12 then $13 else changed_at end, \
                 fetched_at = $13, attempted_at = $13, last_error = null, failures = 0, \
                 stale_announced_at = null, next_fetch_at = $14, lease_owner = null, \
                 lease_until = null, published_fetched_at = $13 \
                 where gate = $1 and window_name = $2",
            )
            .bind(gate)
            .bind(window)
            .bind(c.body)
            .bind(c.sha256)
            .bind(c.etag)
            .bind(c.last_modified)
            .bind(&c.occurrences)
            .bind(&c.rejected)
            .bind(c.expanded_from)
            .bind(c.expanded_to)
            .bind(c.refresh_hint_seconds)
            .bind(c.changed)
            .bind(now)
            .bind(next)
            .execute(conn)
            .await?;
        }
    }
    Ok(())
}

/// Records a failed fetch at `now` (the last good copy stays), due again at `next`.
pub async fn record_failure(
    conn: &mut PgConnection,
    gate: &str,
    window: &str,
    now: DateTime<Utc>,
    next: DateTime<Utc>,
    error: &str,
) -> Result<()> {
    sqlx::query(
        "update calendar_feeds set attempted_at = $3, last_error = $4, failures = failures + 1, \
         next_fetch_at = $5, lease_owner = null, lease_until = null \
         where gate = $1 and window_name = $2",
    )
    .bind(gate)
    .bind(window)
    .bind(now)
    .bind(error)
    .bind(next)
    .execute(conn)
    .await?;
    Ok(())
}

/// Feeds whose published copy is stale at `now` (published fetch + maxStale, or never
/// fetched) and whose staleness was not announced yet.
pub async fn newly_stale(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<Vec<FeedRow>> {
    let rows = sqlx::query_as(sql!(
        "select {COLUMNS} from calendar_feeds where stale_announced_at is null and \
         coalesce(published_fetched_at + make_interval(secs => max_stale_seconds), \
                  'epoch'::timestamptz) <= $1 \
         and attempted_at is not null"
    ))
    .bind(now)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// How many feeds are stale at `now` (as [`newly_stale`] reads it, announced or not) and how
/// many are failing without being stale yet: the refresher's gauges.
pub async fn counts(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<(i64, i64)> {
    let counts = sqlx::query_as(
        "select count(*) filter (where stale), count(*) filter (where not stale and failing) \
         from (select attempted_at is not null and coalesce(published_fetched_at + \
               make_interval(secs => max_stale_seconds), 'epoch'::timestamptz) <= $1 as stale, \
               last_error is not null as failing from calendar_feeds) f",
    )
    .bind(now)
    .fetch_one(conn)
    .await?;
    Ok(counts)
}

/// Notes that the feed's staleness from `since` was announced.
pub async fn mark_stale_announced(
    conn: &mut PgConnection,
    gate: &str,
    window: &str,
    since: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "update calendar_feeds set stale_announced_at = $3 where gate = $1 and window_name = $2",
    )
    .bind(gate)
    .bind(window)
    .bind(since)
    .execute(conn)
    .await?;
    Ok(())
}

/// The body of the last good copy (to re-expand when the horizon moves).
pub async fn body(conn: &mut PgConnection, gate: &str, window: &str) -> Result<Option<String>> {
    let body: Option<(Option<String>,)> =
        sqlx::query_as("select body from calendar_feeds where gate = $1 and window_name = $2")
            .bind(gate)
            .bind(window)
            .fetch_optional(conn)
            .await?;
    Ok(body.and_then(|(b,)| b))
}

/// The fetched feeds of `gate` as compiling it needs them.
pub async fn occurrences_of(
    conn: &mut PgConnection,
    gate: &str,
) -> Result<Vec<fleetgate_policy::FeedOccurrences>> {
    let rows = for_gates(conn, Some(&[gate.to_string()])).await?;
    Ok(feed_occurrences(&rows))
}

/// The occurrences of `gate`'s feeds as spokes get them: the published copy, stale from its
/// published fetch time + maxStale. Feeds never fetched are left out (the policy reads that
/// as never fetched).
pub fn feed_occurrences(rows: &[FeedRow]) -> Vec<fleetgate_policy::FeedOccurrences> {
    rows.iter()
        .filter_map(|r| {
            let published = r.published_fetched_at?;
            Some(fleetgate_policy::FeedOccurrences {
                window: r.window_name.clone(),
                occurrences: serde_json::from_value(r.occurrences.clone()).unwrap_or_default(),
                stale_at: Some(published + Duration::seconds(r.max_stale_seconds)),
            })
        })
        .collect()
}
