//! The `clusters` table: registered clusters, their labels, the hash of the
//! spoke token and `desired_revision`; rows read together with the spoke's
//! connection state from `cluster_connections` (written in `reports`).

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;

use super::WithHash;
use crate::error::on_unique;
use crate::{Result, liveness};

pub mod snapshots;

/// A registered cluster (without its token hash), as the API shows it.
pub use fleetgate_api_types::Cluster;

/// A cluster as read, with what its liveness is decided from; every read
/// below returns it as a [`Cluster`] whose `connected` is derived at the
/// caller's instant, so a crashed replica's stale flag never leaks.
#[derive(sqlx::FromRow)]
struct Read {
    #[sqlx(flatten)]
    cluster: Cluster,
    /// How long the lease of the replica serving the stream holds after a
    /// renewal, in ms (None: no stream recorded open, or a replica of a
    /// release without leases).
    lease_ttl_ms: Option<i64>,
}

impl Read {
    /// The cluster with `connected` as derived at `now`.
    fn at(self, now: DateTime<Utc>) -> Cluster {
        let mut c = self.cluster;
        c.connected = liveness::is_connected(c.connected, c.last_seen_at, self.lease_ttl_ms, now);
        c.spoke_skew = Some(fleetgate_api_types::version::spoke_skew_here(
            c.spoke_version.as_deref(),
        ));
        c
    }
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
                       case when c.identity_issuer is not null then \
                         jsonb_build_object('issuer', c.identity_issuer, \
                         'subject', c.identity_subject, \
                         'jwksPinned', c.identity_jwks is not null) end as identity, \
                       k.snapshot_persistence, k.snapshot_over_budget, \
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

/// What a cluster registered with an issuer accepts from its spoke.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IdentityBinding {
    pub issuer: String,
    pub subject: String,
    /// Pinned keys (a JWKS document), else OIDC discovery.
    pub jwks: Option<serde_json::Value>,
}

/// Registers a cluster (with its empty connection state); 409 if the name is
/// taken.
pub async fn insert(
    conn: &mut PgConnection,
    name: &str,
    labels: &BTreeMap<String, String>,
    token_hash: &[u8],
    identity: Option<&IdentityBinding>,
    now: DateTime<Utc>,
) -> Result<Cluster> {
    sqlx::query(
        "insert into clusters (name, labels, token_hash, created_at, identity_issuer, \
         identity_subject, identity_jwks) values ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(name)
    .bind(Json(labels))
    .bind(token_hash)
    .bind(now)
    .bind(identity.map(|i| &i.issuer))
    .bind(identity.map(|i| &i.subject))
    .bind(identity.and_then(|i| i.jwks.as_ref()).map(Json))
    .execute(&mut *conn)
    .await
    .map_err(|e| on_unique(e, || format!("cluster '{name}' already exists")))?;
    sqlx::query("insert into cluster_connections (cluster) values ($1)")
        .bind(name)
        .execute(&mut *conn)
        .await?;
    expect(get(conn, name, now).await?, name)
}

/// The row just written in this transaction.
fn expect(row: Option<Cluster>, name: &str) -> Result<Cluster> {
    row.ok_or_else(|| crate::Error::Internal(format!("cluster '{name}' vanished in its write")))
}

/// The cluster named `name`, as at `now`.
pub async fn get(
    conn: &mut PgConnection,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Option<Cluster>> {
    let row: Option<Read> = sqlx::query_as(sql!("select {COLUMNS} from {FROM} where c.name = $1"))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|r| r.at(now)))
}

/// The cluster named `name` as at `now`, locked until the transaction ends.
pub async fn get_for_update(
    conn: &mut PgConnection,
    name: &str,
    now: DateTime<Utc>,
) -> Result<Option<Cluster>> {
    let row: Option<Read> = sqlx::query_as(sql!(
        "select {COLUMNS} from {FROM} where c.name = $1 for update of c"
    ))
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|r| r.at(now)))
}

/// The cluster whose token hashes to `hash` as at `now`, with the stored hash.
pub async fn by_token_hash(
    conn: &mut PgConnection,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Option<(Cluster, Vec<u8>)>> {
    let found: Option<WithHash<Read>> = sqlx::query_as(sql!(
        "select {COLUMNS}, c.token_hash from {FROM} where c.token_hash = $1"
    ))
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|w| (w.row.at(now), w.token_hash)))
}

/// The clusters whose tokens hash to any of `hashes` as at `now`, with the
/// stored hashes.
pub async fn by_token_hashes(
    conn: &mut PgConnection,
    hashes: &[Vec<u8>],
    now: DateTime<Utc>,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    let found: Vec<WithHash<Read>> = sqlx::query_as(sql!(
        "select {COLUMNS}, c.token_hash from {FROM} where c.token_hash = any($1)"
    ))
    .bind(hashes)
    .fetch_all(conn)
    .await?;
    Ok(hashed_at(found, now))
}

/// Clusters as at `now` with their spoke token hashes, by name: all of them,
/// or those of `names` that exist.
pub async fn with_token_hash(
    conn: &mut PgConnection,
    names: Option<&[String]>,
    now: DateTime<Utc>,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    let found: Vec<WithHash<Read>> = super::fetch_named(
        conn,
        &format!("select {COLUMNS}, c.token_hash from {FROM}"),
        "where c.name = any($1)",
        "order by c.name",
        names,
    )
    .await?;
    Ok(hashed_at(found, now))
}

/// [`FROM`] for a scoped read: each selected cluster's connection row is looked up by its
/// primary key (a lateral subquery the planner cannot flatten), so the read touches the
/// scope's rows only. With the plain join, PostgreSQL costs 100 index probes above one
/// sequential scan and hashes all of `cluster_connections` (10,000 rows: 1.7 of the 2.7 ms
/// of a team's cluster read at 10,000 clusters, `EXPLAIN ANALYZE`, docs/performance.md).
const FROM_WITHIN: &str = "clusters c cross join fleet_revision f \
                    left join lateral (select * from cluster_connections k0 \
                      where k0.cluster = c.name offset 0) k on true \
                    left join replica_leases l on l.replica = k.connected_replica";

/// The clusters one of `scopes` matches, as at `now`, with their spoke token hashes, by
/// name: what a scoped reader's fleet read starts from. The scope is decided by PostgreSQL
/// ([`crate::scope_sql`]), and each match's connection row is read by key
/// ([`FROM_WITHIN`]), so the read costs the reader's share of the fleet, not all of it.
pub async fn with_token_hash_within(
    conn: &mut PgConnection,
    scopes: &[fleetgate_policy::ClusterScope],
    now: DateTime<Utc>,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    let mut q = sqlx::QueryBuilder::new(format!(
        "select {COLUMNS}, c.token_hash from {FROM_WITHIN} where "
    ));
    crate::scope_sql::push_within(&mut q, "c", scopes);
    q.push(" order by c.name");
    let found: Vec<WithHash<Read>> = q.build_query_as().fetch_all(conn).await?;
    Ok(hashed_at(found, now))
}

/// `found` as at `now`, each with its stored hash.
fn hashed_at(found: Vec<WithHash<Read>>, now: DateTime<Utc>) -> Vec<(Cluster, Vec<u8>)> {
    found
        .into_iter()
        .map(|w| (w.row.at(now), w.token_hash))
        .collect()
}

/// A replica's copy of [`scoped`], valid while `fleet_revision.clusters_version`
/// (changed by a trigger on every insert, delete and name or label update of
/// `clusters`) holds the value it was read at.
#[derive(Debug, Default)]
pub struct ScopedCache(std::sync::Mutex<Option<(uuid::Uuid, Arc<Vec<Scoped>>)>>);

impl ScopedCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(uuid::Uuid, Arc<Vec<Scoped>>)>> {
        // A panicking holder leaves at worst a stale copy, which the version
        // check below never hands out.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// [`scoped`] through `cache`: read again only when the clusters changed.
/// Call it in a write transaction that holds the fleet-revision lock (every
/// write does): no other write can then change the clusters between reading
/// the version and reading them.
pub async fn scoped_cached(
    conn: &mut PgConnection,
    cache: &ScopedCache,
) -> Result<Arc<Vec<Scoped>>> {
    let (version,): (uuid::Uuid,) = sqlx::query_as("select clusters_version from fleet_revision")
        .fetch_one(&mut *conn)
        .await?;
    if let Some((v, all)) = cache.lock().as_ref()
        && *v == version
    {
        return Ok(all.clone());
    }
    let all = Arc::new(scoped(conn).await?);
    *cache.lock() = Some((version, all.clone()));
    Ok(all)
}

/// Those of `names` that exist, as at `now`, ordered by name.
pub async fn named(
    conn: &mut PgConnection,
    names: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<Cluster>> {
    let rows: Vec<Read> = super::fetch_named(
        conn,
        &format!("select {COLUMNS} from {FROM}"),
        "where c.name = any($1)",
        "order by c.name",
        Some(names),
    )
    .await?;
    Ok(rows.into_iter().map(|r| r.at(now)).collect())
}

/// A page of clusters as at `now`, ordered by name, after `after`.
pub async fn list(
    conn: &mut PgConnection,
    after: Option<&str>,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<Vec<Cluster>> {
    let rows: Vec<Read> = super::page_by_name(conn, FROM, COLUMNS, after, limit).await?;
    Ok(rows.into_iter().map(|r| r.at(now)).collect())
}

/// A cluster's name and labels: all a cluster scope is matched on.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Scoped {
    pub name: String,
    #[sqlx(json)]
    pub labels: BTreeMap<String, String>,
}

/// What gate and override scopes match a cluster on: a full [`Cluster`] row or
/// only its [`Scoped`] name and labels.
pub trait Labelled {
    fn name(&self) -> &str;
    fn labels(&self) -> &BTreeMap<String, String>;
}

impl Labelled for Cluster {
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
}

impl Labelled for Scoped {
    fn name(&self) -> &str {
        &self.name
    }
    fn labels(&self) -> &BTreeMap<String, String> {
        &self.labels
    }
}

/// Every cluster's name and labels, by name: what a write needs to find the
/// clusters its change affects. Unlike a full row, no connection state, lease or
/// revision is joined: a fleet-wide flip at 10,000 clusters reads 10,000 of
/// these inside its write transaction (fleetgate-bench, REST call of a flip).
pub async fn scoped(conn: &mut PgConnection) -> Result<Vec<Scoped>> {
    Ok(
        sqlx::query_as("select name, labels from clusters order by name")
            .fetch_all(conn)
            .await?,
    )
}

/// The name and labels of those of `names` that exist, by name: what routing one event
/// needs (its own clusters), not the whole fleet's.
pub async fn scoped_named(conn: &mut PgConnection, names: &[String]) -> Result<Vec<Scoped>> {
    Ok(
        sqlx::query_as("select name, labels from clusters where name = any($1) order by name")
            .bind(names)
            .fetch_all(conn)
            .await?,
    )
}

/// Replaces the labels; the cluster as at `now`.
pub async fn set_labels(
    conn: &mut PgConnection,
    name: &str,
    labels: &BTreeMap<String, String>,
    now: DateTime<Utc>,
) -> Result<Cluster> {
    sqlx::query("update clusters set labels = $2 where name = $1")
        .bind(name)
        .bind(Json(labels))
        .execute(&mut *conn)
        .await?;
    expect(get(conn, name, now).await?, name)
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

/// Whether a cluster named `name` exists, and the identity binding it was registered
/// with (`Some(None)`: it signs in with a cluster token).
pub async fn identity(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<Option<IdentityBinding>>> {
    Ok(identity_with_hash(conn, name).await?.map(|(b, _)| b))
}

/// [`identity`] and the cluster's credential hash, read together. For a cluster
/// registered with an issuer the hash is that of a token nobody holds, replaced whenever
/// the binding changes ([`set_jwks`]): a spoke's stream keeps the hash read with the
/// binding it was verified against, and the snapshots it is sent carry the current one
/// (`with_token_hash`), so a changed binding ends the stream as a rotated token does.
pub async fn identity_with_hash(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<(Option<IdentityBinding>, Vec<u8>)>> {
    type Row = (
        Option<String>,
        Option<String>,
        Option<serde_json::Value>,
        Vec<u8>,
    );
    let row: Option<Row> = sqlx::query_as(
        "select identity_issuer, identity_subject, identity_jwks, token_hash \
         from clusters where name = $1",
    )
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(row.map(|(issuer, subject, jwks, hash)| {
        let binding = match (issuer, subject) {
            (Some(issuer), Some(subject)) => Some(IdentityBinding {
                issuer,
                subject,
                jwks,
            }),
            _ => None,
        };
        (binding, hash)
    }))
}

/// [`identity`] of each of `names` that exists, in one query (spokes signing in
/// together: a reconnect storm).
pub async fn identities(
    conn: &mut PgConnection,
    names: &[String],
) -> Result<std::collections::HashMap<String, (Option<IdentityBinding>, Vec<u8>)>> {
    type Row = (
        String,
        Option<String>,
        Option<String>,
        Option<serde_json::Value>,
        Vec<u8>,
    );
    let rows: Vec<Row> = sqlx::query_as(
        "select name, identity_issuer, identity_subject, identity_jwks, token_hash \
         from clusters where name = any($1)",
    )
    .bind(names)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(name, issuer, subject, jwks, hash)| {
            let binding = match (issuer, subject) {
                (Some(issuer), Some(subject)) => Some(IdentityBinding {
                    issuer,
                    subject,
                    jwks,
                }),
                _ => None,
            };
            (name, (binding, hash))
        })
        .collect())
}

/// The cluster's credential hash now (`None`: no such cluster).
pub async fn credential_hash(conn: &mut PgConnection, name: &str) -> Result<Option<Vec<u8>>> {
    let row: Option<(Vec<u8>,)> = sqlx::query_as("select token_hash from clusters where name = $1")
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row.map(|(h,)| h))
}

/// Replaces the pinned keys of a cluster registered with an issuer (`None`: discovery),
/// and its credential hash with `hash` (a fresh one: streams verified against the old
/// keys end, see [`identity_with_hash`]).
pub async fn set_jwks(
    conn: &mut PgConnection,
    name: &str,
    jwks: Option<&serde_json::Value>,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<Cluster> {
    sqlx::query("update clusters set identity_jwks = $2, token_hash = $3 where name = $1")
        .bind(name)
        .bind(jwks.map(Json))
        .bind(hash)
        .execute(&mut *conn)
        .await?;
    expect(get(conn, name, now).await?, name)
}

/// Deletes the cluster (its object status goes with it).
pub async fn delete(conn: &mut PgConnection, name: &str) -> Result<()> {
    sqlx::query("delete from clusters where name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}
