//! The `clusters` table: registered clusters, their labels, the hash of the
//! spoke token and `desired_revision`; rows read together with the spoke's
//! connection state from `cluster_connections` (written in `reports`).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;

use super::WithHash;
use crate::Result;
use crate::error::on_unique;

/// One registered cluster (without its token hash).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClusterRow {
    pub name: String,
    pub labels: Json<BTreeMap<String, String>>,
    pub created_at: DateTime<Utc>,
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    pub connected: bool,
    pub connected_replica: Option<String>,
    pub clock_offset_ms: Option<i64>,
    pub desired_revision: i64,
    /// How long the lease of the replica serving the stream holds after a
    /// renewal, in ms (None: no stream recorded open, or a replica of a
    /// release without leases).
    pub lease_ttl_ms: Option<i64>,
}

/// `last_seen_at` of a cluster whose stream is recorded open is its
/// replica's latest lease renewal (streams write nothing while idle: the
/// lease says the replica, and so the stream it holds, was alive then).
const COLUMNS: &str = "c.name, c.labels, c.created_at, \
                       case when k.connected then greatest(k.last_seen_at, l.heartbeat_at) \
                         else k.last_seen_at end as last_seen_at, k.spoke_version, \
                       coalesce(k.connected, false) as connected, k.connected_replica, \
                       k.clock_offset_ms, \
                       greatest(c.desired_revision, f.all_revision) as desired_revision, \
                       case when k.connected then \
                         (extract(epoch from l.expires_at - l.heartbeat_at) * 1000)::bigint \
                       end as lease_ttl_ms";

/// `clusters` with each one's connection state (every cluster has a row in
/// `cluster_connections`; the outer join only guards against a missing one),
/// the lease of the replica serving its stream, and the fleet-wide revision
/// (`desired_revision` is [`super::revision::EFFECTIVE_REVISION`]).
const FROM: &str = "clusters c cross join fleet_revision f \
                    left join cluster_connections k on k.cluster = c.name \
                    left join replica_leases l on l.replica = k.connected_replica";

/// Registers a cluster (with its empty connection state); 409 if the name is
/// taken.
pub async fn insert(
    conn: &mut PgConnection,
    name: &str,
    labels: &BTreeMap<String, String>,
    token_hash: &[u8],
    now: DateTime<Utc>,
) -> Result<ClusterRow> {
    sqlx::query(
        "insert into clusters (name, labels, token_hash, created_at) values ($1, $2, $3, $4)",
    )
    .bind(name)
    .bind(Json(labels))
    .bind(token_hash)
    .bind(now)
    .execute(&mut *conn)
    .await
    .map_err(|e| on_unique(e, || format!("cluster '{name}' already exists")))?;
    sqlx::query("insert into cluster_connections (cluster) values ($1)")
        .bind(name)
        .execute(&mut *conn)
        .await?;
    expect(get(conn, name).await?, name)
}

/// The row just written in this transaction.
fn expect(row: Option<ClusterRow>, name: &str) -> Result<ClusterRow> {
    row.ok_or_else(|| crate::Error::Internal(format!("cluster '{name}' vanished in its write")))
}

/// The cluster named `name`.
pub async fn get(conn: &mut PgConnection, name: &str) -> Result<Option<ClusterRow>> {
    let row = sqlx::query_as(sql!("select {COLUMNS} from {FROM} where c.name = $1"))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// The cluster named `name`, locked until the transaction ends.
pub async fn get_for_update(conn: &mut PgConnection, name: &str) -> Result<Option<ClusterRow>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from {FROM} where c.name = $1 for update of c"
    ))
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// The cluster whose token hashes to `hash`, with the stored hash.
pub async fn by_token_hash(
    conn: &mut PgConnection,
    hash: &[u8],
) -> Result<Option<(ClusterRow, Vec<u8>)>> {
    let found: Option<WithHash<_>> = sqlx::query_as(sql!(
        "select {COLUMNS}, c.token_hash from {FROM} where c.token_hash = $1"
    ))
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|w| (w.row, w.token_hash)))
}

/// The clusters whose tokens hash to any of `hashes`, with the stored hashes.
pub async fn by_token_hashes(
    conn: &mut PgConnection,
    hashes: &[Vec<u8>],
) -> Result<Vec<(ClusterRow, Vec<u8>)>> {
    let found: Vec<WithHash<ClusterRow>> = sqlx::query_as(sql!(
        "select {COLUMNS}, c.token_hash from {FROM} where c.token_hash = any($1)"
    ))
    .bind(hashes)
    .fetch_all(conn)
    .await?;
    Ok(found.into_iter().map(|w| (w.row, w.token_hash)).collect())
}

/// Clusters with their spoke token hashes, by name: all of them, or those of
/// `names` that exist.
pub async fn with_token_hash(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(ClusterRow, Vec<u8>)>> {
    let found: Vec<WithHash<ClusterRow>> = sqlx::query_as(sql!(
        "select {COLUMNS}, c.token_hash from {FROM} \
         where $1::text[] is null or c.name = any($1) order by c.name"
    ))
    .bind(names)
    .fetch_all(conn)
    .await?;
    Ok(found.into_iter().map(|w| (w.row, w.token_hash)).collect())
}

/// A page of clusters ordered by name, after `after`.
pub async fn list(
    conn: &mut PgConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<ClusterRow>> {
    super::page_by_name(conn, FROM, COLUMNS, after, limit).await
}

/// Every cluster (for scope matching and the fleet summary).
pub async fn all(conn: &mut PgConnection) -> Result<Vec<ClusterRow>> {
    let rows = sqlx::query_as(sql!("select {COLUMNS} from {FROM} order by c.name"))
        .fetch_all(conn)
        .await?;
    Ok(rows)
}

/// Replaces the labels.
pub async fn set_labels(
    conn: &mut PgConnection,
    name: &str,
    labels: &BTreeMap<String, String>,
) -> Result<ClusterRow> {
    sqlx::query("update clusters set labels = $2 where name = $1")
        .bind(name)
        .bind(Json(labels))
        .execute(&mut *conn)
        .await?;
    expect(get(conn, name).await?, name)
}

/// Replaces the token hash (the old token stops working on commit).
pub async fn set_token_hash(conn: &mut PgConnection, name: &str, hash: &[u8]) -> Result<()> {
    sqlx::query("update clusters set token_hash = $2 where name = $1")
        .bind(name)
        .bind(hash)
        .execute(conn)
        .await?;
    Ok(())
}

/// Deletes the cluster (its object status goes with it).
pub async fn delete(conn: &mut PgConnection, name: &str) -> Result<()> {
    sqlx::query("delete from clusters where name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}
