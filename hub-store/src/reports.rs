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

use super::held_objects::{self, HeldObject};
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

/// Replaces `report.cluster`'s object statuses and held objects with the
/// report's and stamps the cluster's last-seen and report times and clock
/// offset. A report whose content hash equals the stored one writes nothing,
/// unless its snapshot revision differs from the stored one or its clock
/// offset moved by [`CLOCK_DRIFT_MS`] (then only the connection row).
/// Returns false (writing nothing) when the cluster no longer exists. A
/// transaction writing several reports writes them in cluster-name order.
pub async fn write_report(conn: &mut PgConnection, report: &ClusterReport) -> Result<bool> {
    Ok(!matches!(
        write_report_diff(conn, report).await?,
        ReportWrite::NoCluster
    ))
}

/// What [`write_report_diff`] did.
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

/// [`write_report`], also saying what the report replaced (local gate
/// changes are audited from it).
pub async fn write_report_diff(
    conn: &mut PgConnection,
    report: &ClusterReport,
) -> Result<ReportWrite> {
    let hash = report.content_hash()?;
    let revision = i64::try_from(report.revision).unwrap_or(i64::MAX);
    // A plain read, no lock: an idle fleet's heartbeats lock nothing. The
    // hash is compared again in the update, so a report written meanwhile by
    // another replica (a spoke that just moved) is never taken for this one.
    let stored: Option<(Option<Vec<u8>>,)> =
        sqlx::query_as("select report_hash from cluster_connections where cluster = $1")
            .bind(&report.cluster)
            .fetch_optional(&mut *conn)
            .await?;
    if let Some((Some(stored),)) = &stored
        && *stored == hash
    {
        // An update whose condition fails writes nothing at all (no row
        // version, no WAL). A report at a newer snapshot revision is written at
        // once: rollouts wait for it (a change of desired state, not a heartbeat).
        sqlx::query(
            "update cluster_connections set last_seen_at = greatest(last_seen_at, $2), \
             reported_at = $2, clock_offset_ms = $3, report_revision = $6 \
             , report_write_error = null, report_write_error_at = null \
             where cluster = $1 and report_hash = $4 \
             and (report_revision is distinct from $6 or clock_offset_ms is null \
                  or abs(clock_offset_ms - $3) >= $5 or report_write_error is not null)",
        )
        .bind(&report.cluster)
        .bind(report.received_at)
        .bind(report.clock_offset_ms)
        .bind(&hash)
        .bind(CLOCK_DRIFT_MS)
        .bind(revision)
        .execute(&mut *conn)
        .await?;
        if let Some(inventory) = &report.inventory {
            super::inventories::write(conn, &report.cluster, inventory, report.received_at).await?;
        }
        return Ok(ReportWrite::Unchanged);
    }
    // The key-share lock the foreign keys take anyway, taken before any row of
    // the cluster's status or connection: a concurrent delete of the cluster
    // (row lock, then cascade into those rows) makes this report wait for it
    // here, and then drop the report, instead of each waiting on the other.
    let exists = sqlx::query("select 1 from clusters where name = $1 for key share")
        .bind(&report.cluster)
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_none() {
        return Ok(ReportWrite::NoCluster);
    }
    let local_gates = serde_json::to_value(&report.local_gates)
        .map_err(|e| crate::Error::Internal(format!("encoding report: {e}")))?;
    let listed = &report.problems[..report.problems.len().min(MAX_LISTED_PROBLEMS)];
    let problems = serde_json::to_value(listed)
        .map_err(|e| crate::Error::Internal(format!("encoding report: {e}")))?;
    let problem_total = i32::try_from(report.problems.len()).unwrap_or(i32::MAX);
    // The sub-select reads the row as it was before this update (the
    // local gates it replaces), locking it as the update would.
    let previous: Option<(sqlx::types::Json<Vec<LocalGate>>,)> = sqlx::query_as(
        "update cluster_connections c set last_seen_at = $2, reported_at = $2, \
         clock_offset_ms = $3, report_hash = $4, report_revision = $5, local_gates = $6, \
         report_problems = $7, report_problem_total = $8, report_write_error = null, \
         report_write_error_at = null \
         from (select cluster, local_gates from cluster_connections where cluster = $1 \
               for update) old \
         where c.cluster = old.cluster returning coalesce(old.local_gates, '[]'::jsonb)",
    )
    .bind(&report.cluster)
    .bind(report.received_at)
    .bind(report.clock_offset_ms)
    .bind(&hash)
    .bind(revision)
    .bind(&local_gates)
    .bind(&problems)
    .bind(problem_total)
    .fetch_optional(&mut *conn)
    .await?;
    let previous_local_gates = previous.map(|(g,)| g.0).unwrap_or_default();
    let newly_held = if report.objects.iter().any(|o| o.held) {
        let before: Vec<(String, String, String, Option<String>)> = sqlx::query_as(
            "select kind, namespace, name, newest_source_revision from object_status \
             where cluster = $1 and held",
        )
        .bind(&report.cluster)
        .fetch_all(&mut *conn)
        .await?;
        let before: std::collections::HashSet<(&str, &str, &str, Option<&str>)> = before
            .iter()
            .map(|(k, ns, n, r)| (k.as_str(), ns.as_str(), n.as_str(), r.as_deref()))
            .collect();
        report
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                o.held
                    && !before.contains(&(
                        o.kind.as_str(),
                        o.namespace.as_str(),
                        o.name.as_str(),
                        o.newest_source_revision.as_deref(),
                    ))
            })
            .map(|(i, _)| i)
            .collect()
    } else {
        Vec::new()
    };
    let objects = serde_json::to_value(&report.objects)
        .map_err(|e| crate::Error::Internal(format!("encoding report: {e}")))?;
    sqlx::query(
        "delete from object_status o where o.cluster = $1 and not exists ( \
           select 1 from jsonb_to_recordset($2) as r(kind text, namespace text, name text) \
           where r.kind = o.kind and r.namespace = o.namespace and r.name = o.name)",
    )
    .bind(&report.cluster)
    .bind(&objects)
    .execute(&mut *conn)
    .await?;
    // Only the objects whose content differs from their stored row are
    // written (cost proportional to change: one object changed of 100 writes
    // one row); the others keep their row version, and their time is the
    // cluster's `reported_at` (see `status::for_cluster`). The cluster's
    // connection row is locked above, so no other report of it runs between
    // this comparison and the write. The recordset's column names are the
    // objects' JSON (camelCase) names.
    sqlx::query(
        r#"with r as (
           select r.kind, r.namespace, r.name, r.suspended,
             array(select jsonb_array_elements_text(r."suspendedBy")) as suspended_by,
             array(select jsonb_array_elements_text(r.gates)) as gates,
             r."lastAppliedRevision" as last_applied_revision,
             r."newestSourceRevision" as newest_source_revision, r.held,
             r."suspendedByHuman" as suspended_by_human,
             coalesce(r.ignored, false) as ignored, r.ready, r."readyReason" as ready_reason,
             r."readyMessage" as ready_message, coalesce(r.stalled, false) as stalled,
             r.generation, r."observedGeneration" as observed_generation,
             r."lastAttemptedRevision" as last_attempted_revision,
             array(select jsonb_array_elements_text(coalesce(r."wouldSuspendBy", '[]')))
               as would_suspend_by, coalesce(r."wouldHold", false) as would_hold
           from jsonb_to_recordset($2) as r(kind text, namespace text, name text,
             suspended bool, "suspendedBy" jsonb, gates jsonb, "lastAppliedRevision" text,
             "newestSourceRevision" text, held bool, "suspendedByHuman" bool, ignored bool,
             ready text, "readyReason" text, "readyMessage" text, stalled bool,
             generation bigint, "observedGeneration" bigint, "lastAttemptedRevision" text,
             "wouldSuspendBy" jsonb, "wouldHold" bool))
         insert into object_status (cluster, kind, namespace, name, suspended, suspended_by,
           gates, last_applied_revision, newest_source_revision, held, suspended_by_human,
           ignored, ready, ready_reason, ready_message, stalled, generation,
           observed_generation, last_attempted_revision, would_suspend_by, would_hold,
           reported_at, failing_since)
         select $1, r.kind, r.namespace, r.name, r.suspended, r.suspended_by, r.gates,
           r.last_applied_revision, r.newest_source_revision, r.held, r.suspended_by_human,
           r.ignored, r.ready, r.ready_reason, r.ready_message, r.stalled, r.generation,
           r.observed_generation, r.last_attempted_revision, r.would_suspend_by, r.would_hold, $3,
           case when r.ready = 'False' or r.stalled then $3 end
         from r
         where not exists (
           select 1 from object_status o
           where o.cluster = $1 and o.kind = r.kind and o.namespace = r.namespace
             and o.name = r.name
             and (o.suspended, o.suspended_by, o.gates, o.last_applied_revision,
                  o.newest_source_revision, o.held, o.suspended_by_human, o.ignored, o.ready,
                  o.ready_reason, o.ready_message, o.stalled, o.generation,
                  o.observed_generation, o.last_attempted_revision, o.would_suspend_by,
                  o.would_hold)
             is not distinct from
                 (r.suspended, r.suspended_by, r.gates, r.last_applied_revision,
                  r.newest_source_revision, r.held, r.suspended_by_human, r.ignored, r.ready,
                  r.ready_reason, r.ready_message, r.stalled, r.generation,
                  r.observed_generation, r.last_attempted_revision, r.would_suspend_by,
                  r.would_hold))
         on conflict (cluster, kind, namespace, name) do update set
           suspended = excluded.suspended, suspended_by = excluded.suspended_by,
           gates = excluded.gates, last_applied_revision = excluded.last_applied_revision,
           newest_source_revision = excluded.newest_source_revision, held = excluded.held,
           suspended_by_human = excluded.suspended_by_human, ignored = excluded.ignored,
           ready = excluded.ready, ready_reason = excluded.ready_reason,
           ready_message = excluded.ready_message, stalled = excluded.stalled,
           generation = excluded.generation, observed_generation = excluded.observed_generation,
           last_attempted_revision = excluded.last_attempted_revision,
           would_suspend_by = excluded.would_suspend_by, would_hold = excluded.would_hold,
           reported_at = excluded.reported_at,
           -- Still failing: since the first failing report; recovered: none.
           failing_since = case when excluded.failing_since is not null
             then coalesce(object_status.failing_since, excluded.failing_since) end"#,
    )
    .bind(&report.cluster)
    .bind(&objects)
    .bind(report.received_at)
    .execute(&mut *conn)
    .await?;
    held_objects::replace(
        conn,
        &report.cluster,
        &report.held_objects,
        report.received_at,
    )
    .await?;
    if let Some(inventory) = &report.inventory {
        super::inventories::write(conn, &report.cluster, inventory, report.received_at).await?;
    }
    Ok(ReportWrite::Written {
        previous_local_gates,
        newly_held,
    })
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
    Ok(sqlx::query_as(
        "select cluster, report_problem_total, report_write_error from cluster_connections \
         where report_problem_total > 0 or report_write_error is not null order by cluster",
    )
    .fetch_all(conn)
    .await?)
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

/// Records whether the hub holds `cluster` closed because its snapshot is over its budget
/// (`over`), or no longer (`None`), keeping `since` while it stays over. Writes only when
/// that changes; returns whether it did.
pub async fn set_snapshot_over_budget(
    conn: &mut PgConnection,
    cluster: &str,
    over: Option<&fleetgate_api_types::SnapshotOverBudget>,
) -> Result<bool> {
    let done = match over {
        Some(o) => {
            sqlx::query(
                "update cluster_connections set snapshot_over_budget = jsonb_set($2::jsonb, \
                 '{since}', coalesce(snapshot_over_budget->'since', $2::jsonb->'since')) \
                 where cluster = $1 and (snapshot_over_budget is null \
                   or snapshot_over_budget->'bytes' is distinct from $2::jsonb->'bytes' \
                   or snapshot_over_budget->'revision' is distinct from $2::jsonb->'revision')",
            )
            .bind(cluster)
            .bind(sqlx::types::Json(o))
            .execute(conn)
            .await?
        }
        None => {
            sqlx::query(
                "update cluster_connections set snapshot_over_budget = null \
                 where cluster = $1 and snapshot_over_budget is not null",
            )
            .bind(cluster)
            .execute(conn)
            .await?
        }
    };
    Ok(done.rows_affected() > 0)
}

/// Records what `cluster`'s spoke last reported of its persisted snapshot (`None`: a spoke
/// that predates it). Writes only when it changed; returns whether it did.
pub async fn set_snapshot_persistence(
    conn: &mut PgConnection,
    cluster: &str,
    persistence: Option<&fleetgate_api_types::SnapshotPersistence>,
) -> Result<bool> {
    let done = sqlx::query(
        "update cluster_connections set snapshot_persistence = $2 \
         where cluster = $1 and snapshot_persistence is distinct from $2",
    )
    .bind(cluster)
    .bind(persistence.map(sqlx::types::Json))
    .execute(conn)
    .await?;
    Ok(done.rows_affected() > 0)
}
