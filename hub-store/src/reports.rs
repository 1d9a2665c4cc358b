//! Writes from the spoke stream: status reports into `object_status`,
//! `held_objects` and `cluster_connections.local_gates` (a report is the full set of governed and held objects, so
//! objects missing from it are deleted) and the spoke's connection state in
//! `cluster_connections`. A report whose content equals the stored one (its
//! hash, kept per cluster) writes nothing unless it moves the report fence
//! (a newer snapshot revision) or the spoke's clock drifted by
//! [`CLOCK_DRIFT_MS`]; keepalives write nothing either. A changed report
//! writes only the object and held-object rows whose content changed. Liveness comes from
//! the serving replica's lease (`db::leases`, `crate::liveness`): an idle
//! fleet costs the database one row per replica every few seconds. This
//! path never bumps the fleet revision and never notifies: reports are not
//! desired state. It never updates `clusters` rows, which writes lock, and
//! takes several clusters' rows only in name order, as writes do.

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;

use super::held_objects::HeldObject;
use crate::Result;

/// An unchanged report rewrites the stored clock offset only when it moved
/// by at least this much (the offset is shown to operators to spot skewed
/// clusters; round-trip jitter must not cost a write per heartbeat).
pub const CLOCK_DRIFT_MS: i64 = 1_000;

/// A governed Flux object as its spoke reports it, written by report ingestion and read
/// back by the status views (one type for both, shared with REST clients).
pub use fleetgate_api_types::ReportedObject;
pub use fleetgate_api_types::status::{LocalGate, ReportProblem, ReportProblems};

/// The latest report of one cluster, as the batcher flushes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterReport {
    pub cluster: String,
    /// Objects with unique (kind, namespace, name).
    pub objects: Vec<ReportedObject>,
    /// Objects inside Kustomizations that holdObjects gates select, unique by
    /// (group, kind, namespace, name); empty from spokes that predate them.
    pub held_objects: Vec<HeldObject>,
    /// Gate objects made in the cluster, by name; empty from spokes that
    /// predate them.
    pub local_gates: Vec<LocalGate>,
    /// Objects stored repaired or left out (`service::reports::objects`).
    pub problems: Vec<ReportProblem>,
    /// Every Flux object the spoke sees (the impact preview's input); `None`: the report
    /// carries none (unchanged since the stream's last, or a spoke that predates it), so
    /// the stored inventory is left as it is.
    pub inventory: Option<Vec<super::inventories::InventoryObject>>,
    /// The snapshot revision the spoke enforced when it made the report: the
    /// fence rollouts judge health by (see `rollout::health`).
    pub revision: u64,
    pub clock_offset_ms: i64,
    /// When the hub received the report.
    pub received_at: DateTime<Utc>,
}

impl ClusterReport {
    /// SHA-256 of the report's content: everything a report stores except
    /// when it arrived, the clock offset and the inventory (stored apart with
    /// its own hash, and carried only by reports where it changed). The destructuring lists every
    /// field, so a field added to reports must be decided on here; objects
    /// are hashed through their JSON, so a field added to [`ReportedObject`]
    /// or [`HeldObject`] is covered without a change here.
    pub fn content_hash(&self) -> Result<Vec<u8>> {
        let Self {
            cluster: _,
            objects,
            held_objects,
            local_gates,
            problems,
            // `cluster_inventories`, with its own hash: a report that carries
            // it and one that does not are the same report.
            inventory: _,
            // Kept per cluster, beside the hash: a newer revision with the same
            // content updates that one column, no object row.
            revision: _,
            clock_offset_ms: _,
            received_at: _,
        } = self;
        let json = serde_json::to_vec(&(objects, held_objects, local_gates, problems))
            .map_err(|e| crate::Error::Internal(format!("encoding report: {e}")))?;
        Ok(Sha256::digest(&json).to_vec())
    }
}

/// What [`write_report_diff`](super::report_batch::write_report_diff) did.
#[derive(Debug, Clone, PartialEq)]
pub enum ReportWrite {
    /// The cluster no longer exists: nothing written.
    NoCluster,
    /// Same content as stored: at most the connection row's times.
    Unchanged,
    /// The content was replaced; the local gates stored before it, and the
    /// report's objects (indices into `objects`) whose newest revision
    /// started waiting with it (held now, not held at that revision before).
    Written {
        previous_local_gates: Vec<LocalGate>,
        newly_held: Vec<usize>,
    },
}

/// Problems of one report a cluster's status lists at most (all are counted).
pub const MAX_LISTED_PROBLEMS: usize = 100;

/// Whether `e`, from writing one cluster's report, is the database refusing
/// that report's content (a data exception, a constraint, a size limit, or
/// a report that cannot be encoded), not the database failing: such a
/// report is set aside and recorded, the others of its batch are written.
pub fn refused_report(e: &crate::Error) -> bool {
    match e {
        crate::Error::Database(sqlx::Error::Database(db)) => db
            .code()
            .is_some_and(|c| c.starts_with("22") || c.starts_with("23") || c.starts_with("54")),
        crate::Error::Database(sqlx::Error::Encode(_)) | crate::Error::Internal(_) => true,
        _ => false,
    }
}

/// Records on `report`'s cluster that the database refused the report
/// (`error`): the cluster keeps its last stored status, and shows why.
pub async fn record_write_error(
    conn: &mut PgConnection,
    report: &ClusterReport,
    error: &str,
) -> Result<()> {
    let error: String = error.chars().take(1000).collect();
    sqlx::query(
        "update cluster_connections set report_write_error = $2, report_write_error_at = $3 \
         where cluster = $1",
    )
    .bind(&report.cluster)
    .bind(fleetgate_policy::text::replace_str(&error).as_ref())
    .bind(report.received_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Per cluster whose latest report had problems or was refused: how many
/// problems, and the refusal (fleet views and change streams).
pub async fn problem_briefs(conn: &mut PgConnection) -> Result<Vec<(String, i32, Option<String>)>> {
    problem_briefs_of(conn, None).await
}

/// [`problem_briefs`] of every cluster, or only of `names`.
pub async fn problem_briefs_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(String, i32, Option<String>)>> {
    crate::fetch_named(
        conn,
        "select cluster, report_problem_total, report_write_error from cluster_connections \
         where (report_problem_total > 0 or report_write_error is not null)",
        "and cluster = any($1)",
        "order by cluster",
        names,
    )
    .await
}

/// What went wrong with `cluster`'s latest reports (nothing: the default).
pub async fn problems(conn: &mut PgConnection, cluster: &str) -> Result<ReportProblems> {
    type Row = (
        sqlx::types::Json<Vec<ReportProblem>>,
        i32,
        Option<String>,
        Option<DateTime<Utc>>,
    );
    let row: Option<Row> = sqlx::query_as(
        "select report_problems, report_problem_total, report_write_error, \
         report_write_error_at from cluster_connections where cluster = $1",
    )
    .bind(cluster)
    .fetch_optional(conn)
    .await?;
    Ok(row
        .map(
            |(items, total, write_error, write_error_at)| ReportProblems {
                items: items.0,
                total: u32::try_from(total).unwrap_or(0),
                write_error,
                write_error_at,
            },
        )
        .unwrap_or_default())
}

/// Records that each `(cluster, spoke version, at)` spoke connected to
/// `replica` (one statement; clusters deleted meanwhile are skipped).
pub async fn mark_connected_many(
    conn: &mut PgConnection,
    connected: &[(&str, &str, DateTime<Utc>)],
    replica: &str,
) -> Result<()> {
    if connected.is_empty() {
        return Ok(());
    }
    let mut names = Vec::with_capacity(connected.len());
    let mut versions = Vec::with_capacity(connected.len());
    let mut times = Vec::with_capacity(connected.len());
    for (n, v, t) in connected {
        names.push(*n);
        versions.push(*v);
        times.push(*t);
    }
    sqlx::query(
        // An upsert: a cluster registered by a replica that predates
        // `cluster_connections` (during a rolling upgrade) has no row yet.
        "insert into cluster_connections \
         (cluster, connected, connected_replica, spoke_version, last_seen_at) \
         select s.name, true, $4, s.version, s.at \
         from unnest($1::text[], $2::text[], $3::timestamptz[]) as s(name, version, at) \
         where exists (select 1 from clusters c where c.name = s.name) \
         order by s.name \
         on conflict (cluster) do update set connected = true, \
         connected_replica = excluded.connected_replica, \
         spoke_version = excluded.spoke_version, last_seen_at = excluded.last_seen_at",
    )
    .bind(&names)
    .bind(&versions)
    .bind(&times)
    .bind(replica)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that `cluster`'s spoke connected to `replica`.
pub async fn mark_connected(
    conn: &mut PgConnection,
    cluster: &str,
    replica: &str,
    spoke_version: &str,
    at: DateTime<Utc>,
) -> Result<()> {
    mark_connected_many(conn, &[(cluster, spoke_version, at)], replica).await
}

/// Records that each `(cluster, at)` spoke left `replica`, unless it has
/// meanwhile connected to another replica (which then owns the state).
pub async fn mark_disconnected_many(
    conn: &mut PgConnection,
    disconnected: &[(&str, DateTime<Utc>)],
    replica: &str,
) -> Result<()> {
    if disconnected.is_empty() {
        return Ok(());
    }
    let (names, times): (Vec<&str>, Vec<DateTime<Utc>>) = disconnected.iter().copied().unzip();
    sqlx::query(
        "update cluster_connections k set connected = false, last_seen_at = s.at \
         from unnest($1::text[], $2::timestamptz[]) as s(name, at) \
         where k.cluster = s.name and k.connected_replica = $3 and k.connected",
    )
    .bind(&names)
    .bind(&times)
    .bind(replica)
    .execute(conn)
    .await?;
    Ok(())
}

/// Clears connection state left by an earlier run of `replica` (a crash
/// leaves `connected = true` behind) or by the streams its drain ended
/// (`at`: when they ended). Their `last_seen_at` becomes the last time the
/// replica was known to hold them: `at`, else its lease's last renewal.
/// Returns how many clusters it cleared.
pub async fn clear_replica(
    conn: &mut PgConnection,
    replica: &str,
    at: Option<DateTime<Utc>>,
) -> Result<u64> {
    let res = sqlx::query(
        "update cluster_connections set connected = false, last_seen_at = greatest(last_seen_at, \
           $2, (select heartbeat_at from replica_leases where replica = $1)) \
         where cluster in \
         (select cluster from cluster_connections where connected_replica = $1 and connected \
          order by cluster for no key update)",
    )
    .bind(replica)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(res.rows_affected())
}

/// [`local_gates`] of those of `names` that reported any, by cluster name.
pub async fn local_gates_of(
    conn: &mut PgConnection,
    names: &[String],
) -> Result<Vec<(String, Vec<LocalGate>)>> {
    let rows: Vec<(String, sqlx::types::Json<Vec<LocalGate>>)> = sqlx::query_as(
        "select cluster, local_gates from cluster_connections \
         where cluster = any($1) and local_gates <> '[]'::jsonb order by cluster",
    )
    .bind(names)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(c, g)| (c, g.0)).collect())
}

/// Every cluster's reported local gates (clusters without any absent), or
/// only `cluster`'s.
pub async fn local_gates(
    conn: &mut PgConnection,
    cluster: Option<&str>,
) -> Result<Vec<(String, Vec<LocalGate>)>> {
    // One statement per shape (see `db::fetch_named`): one cluster's
    // read is a key lookup, not a scan of every cluster's row.
    let rows: Vec<(String, sqlx::types::Json<Vec<LocalGate>>)> = match cluster {
        Some(cluster) => {
            sqlx::query_as(
                "select cluster, local_gates from cluster_connections \
                 where cluster = $1 and local_gates <> '[]'::jsonb",
            )
            .bind(cluster)
            .fetch_all(conn)
            .await?
        }
        None => {
            sqlx::query_as(
                "select cluster, local_gates from cluster_connections \
                 where local_gates <> '[]'::jsonb order by cluster",
            )
            .fetch_all(conn)
            .await?
        }
    };
    Ok(rows.into_iter().map(|(c, g)| (c, g.0)).collect())
}

/// What writing one of a cluster's snapshot-state fields did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StateWrite {
    /// The stored value changed.
    pub written: bool,
    /// It changed in what the change streams announce
    /// (`fleet::SnapshotBrief::announced`): the persistence state, or whether the cluster
    /// is over its budget. A new persisted revision or another size over the budget is
    /// written without it.
    pub transition: bool,
}

/// Records whether the hub holds `cluster` closed because its snapshot is over its budget
/// (`over`), or no longer (`None`), keeping `since` while it stays over. Writes only when
/// that changes. The old value is read under the row's lock (`for update`), so two replicas
/// writing at once each compare with what the other committed.
pub async fn set_snapshot_over_budget(
    conn: &mut PgConnection,
    cluster: &str,
    over: Option<&fleetgate_api_types::SnapshotOverBudget>,
) -> Result<StateWrite> {
    let started: Option<(bool,)> = match over {
        Some(o) => {
            sqlx::query_as(
                "with old as (select cluster, snapshot_over_budget as was \
                   from cluster_connections where cluster = $1 for update) \
                 update cluster_connections k set snapshot_over_budget = jsonb_set($2::jsonb, \
                 '{since}', coalesce(old.was->'since', $2::jsonb->'since')) \
                 from old where k.cluster = old.cluster and (old.was is null \
                   or old.was->'bytes' is distinct from $2::jsonb->'bytes' \
                   or old.was->'revision' is distinct from $2::jsonb->'revision') \
                 returning old.was is null",
            )
            .bind(cluster)
            .bind(sqlx::types::Json(o))
            .fetch_optional(conn)
            .await?
        }
        None => {
            sqlx::query_as(
                "update cluster_connections set snapshot_over_budget = null \
                 where cluster = $1 and snapshot_over_budget is not null returning true",
            )
            .bind(cluster)
            .fetch_optional(conn)
            .await?
        }
    };
    Ok(StateWrite {
        written: started.is_some(),
        transition: started.is_some_and(|(t,)| t),
    })
}

/// Clears the over-budget record of each of `clusters` that has one (their snapshots fit
/// again), in one statement: what [`set_snapshot_over_budget`] with `None` does for one
/// cluster. The first snapshot of every stream clears it, so a reconnect storm of 10,000
/// spokes wrote 10,000 single-row statements in one flush; rows are locked in name order.
/// Returns how many were cleared (each a transition).
pub async fn clear_snapshot_over_budget_many(
    conn: &mut PgConnection,
    clusters: &[&str],
) -> Result<u64> {
    if clusters.is_empty() {
        return Ok(0);
    }
    let done = sqlx::query(
        "with old as (select cluster from cluster_connections \
           where cluster = any($1) and snapshot_over_budget is not null \
           order by cluster for update) \
         update cluster_connections k set snapshot_over_budget = null \
         from old where k.cluster = old.cluster",
    )
    .bind(clusters)
    .execute(conn)
    .await?;
    Ok(done.rows_affected())
}

/// Locks the `cluster_connections` rows of `clusters` in name order (the one order of every
/// path locking several clusters), for a transaction that then writes them one by one in
/// another order.
pub async fn lock_connections(conn: &mut PgConnection, clusters: &[&str]) -> Result<()> {
    sqlx::query(
        "select 1 from cluster_connections where cluster = any($1) \
         order by cluster for update",
    )
    .bind(clusters)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records what `cluster`'s spoke last reported of its persisted snapshot (`None`: a spoke
/// that predates it). Writes only when it changed; a transition is a change of its `state`
/// (or of whether there is one). The old value is read under the row's lock.
pub async fn set_snapshot_persistence(
    conn: &mut PgConnection,
    cluster: &str,
    persistence: Option<&fleetgate_api_types::SnapshotPersistence>,
) -> Result<StateWrite> {
    let done: Option<(bool,)> = sqlx::query_as(
        "with old as (select cluster, snapshot_persistence as was \
           from cluster_connections where cluster = $1 for update) \
         update cluster_connections k set snapshot_persistence = $2 \
         from old where k.cluster = old.cluster and old.was is distinct from $2 \
         returning old.was->>'state' is distinct from $2::jsonb->>'state'",
    )
    .bind(cluster)
    .bind(persistence.map(sqlx::types::Json))
    .fetch_optional(conn)
    .await?;
    Ok(StateWrite {
        written: done.is_some(),
        transition: done.is_some_and(|(t,)| t),
    })
}
