//! Writes from the spoke stream: status reports into `object_status` (a report
//! is the full set of governed objects, so objects missing from it are
//! deleted) and the spoke's connection state in `cluster_connections`. This
//! path never bumps the fleet revision and never notifies: reports are not
//! desired state. It never updates `clusters` rows, which writes lock, and
//! takes several clusters' rows only in name order, as writes do.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa::ToSchema;

use crate::Result;

/// A governed Flux object as its spoke reports it: written by report
/// ingestion, read back by the status views (with `reported_at`, see
/// [`super::status::ObjectStatus`]). A whole report is JSON-encoded into one
/// statement parameter, so it is one upsert.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub suspended: bool,
    /// Gates whose closure suspended it.
    pub suspended_by: Vec<String>,
    /// Gates governing it.
    pub gates: Vec<String>,
    pub last_applied_revision: Option<String>,
    pub newest_source_revision: Option<String>,
    /// A newer source revision waits for a gate to open.
    pub held: bool,
    /// Suspended by a person (fleetgate leaves it alone).
    pub suspended_by_human: bool,
    /// Annotated `fleetgate.io/ignore: "true"`: `gates` target it, but fleetgate never
    /// governs it (not counted as governed).
    pub ignored: bool,
    /// Its Ready condition as Flux wrote it: `True`, `False` or `Unknown`; absent while it
    /// has none (never reconciled) or from a spoke that predates health reports.
    #[serde(default)]
    pub ready: Option<String>,
    /// The Ready condition's reason, e.g. `ReconciliationFailed`, `UpgradeFailed`.
    #[serde(default)]
    pub ready_reason: Option<String>,
    /// The Ready condition's message (at most 1 KiB).
    #[serde(default)]
    pub ready_message: Option<String>,
    /// `Stalled=True`: Flux stopped retrying until the object or its input changes.
    #[serde(default)]
    pub stalled: bool,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
    /// `status.observedGeneration`; behind `generation` while Flux has not reconciled the
    /// current spec successfully.
    #[serde(default)]
    pub observed_generation: Option<i64>,
    /// `status.lastAttemptedRevision`: the revision Flux tried last, applied or failed.
    #[serde(default)]
    pub last_attempted_revision: Option<String>,
}

/// The latest report of one cluster, as the batcher flushes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterReport {
    pub cluster: String,
    /// Objects with unique (kind, namespace, name).
    pub objects: Vec<ReportedObject>,
    /// The snapshot revision the spoke enforced when it made the report.
    pub revision: u64,
    pub clock_offset_ms: i64,
    /// When the hub received the report.
    pub received_at: DateTime<Utc>,
}

/// Replaces `report.cluster`'s object statuses with the report's and stamps
/// the cluster's last-seen time and clock offset. Returns false (writing
/// nothing) when the cluster no longer exists. A transaction writing several
/// reports writes them in cluster-name order.
pub async fn write_report(conn: &mut PgConnection, report: &ClusterReport) -> Result<bool> {
    // The key-share lock the foreign keys take anyway, taken before any row of
    // the cluster's status or connection: a concurrent delete of the cluster
    // (row lock, then cascade into those rows) makes this report wait for it
    // here, and then drop the report, instead of each waiting on the other.
    let exists = sqlx::query("select 1 from clusters where name = $1 for key share")
        .bind(&report.cluster)
        .fetch_optional(&mut *conn)
        .await?;
    if exists.is_none() {
        return Ok(false);
    }
    sqlx::query(
        "update cluster_connections set last_seen_at = $2, clock_offset_ms = $3 \
         where cluster = $1",
    )
    .bind(&report.cluster)
    .bind(report.received_at)
    .bind(report.clock_offset_ms)
    .execute(&mut *conn)
    .await?;
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
    // The recordset's column names are the objects' JSON (camelCase) names.
    sqlx::query(
        r#"insert into object_status (cluster, kind, namespace, name, suspended, suspended_by,
           gates, last_applied_revision, newest_source_revision, held, suspended_by_human,
           ignored, ready, ready_reason, ready_message, stalled, generation,
           observed_generation, last_attempted_revision, report_revision, reported_at)
         select $1, r.kind, r.namespace, r.name, r.suspended,
           array(select jsonb_array_elements_text(r."suspendedBy")),
           array(select jsonb_array_elements_text(r.gates)),
           r."lastAppliedRevision", r."newestSourceRevision", r.held, r."suspendedByHuman",
           coalesce(r.ignored, false), r.ready, r."readyReason", r."readyMessage",
           coalesce(r.stalled, false), r.generation, r."observedGeneration",
           r."lastAttemptedRevision", $4, $3
         from jsonb_to_recordset($2) as r(kind text, namespace text, name text, suspended bool,
           "suspendedBy" jsonb, gates jsonb, "lastAppliedRevision" text,
           "newestSourceRevision" text, held bool, "suspendedByHuman" bool, ignored bool,
           ready text, "readyReason" text, "readyMessage" text, stalled bool,
           generation bigint, "observedGeneration" bigint, "lastAttemptedRevision" text)
         on conflict (cluster, kind, namespace, name) do update set
           suspended = excluded.suspended, suspended_by = excluded.suspended_by,
           gates = excluded.gates, last_applied_revision = excluded.last_applied_revision,
           newest_source_revision = excluded.newest_source_revision, held = excluded.held,
           suspended_by_human = excluded.suspended_by_human, ignored = excluded.ignored,
           ready = excluded.ready, ready_reason = excluded.ready_reason,
           ready_message = excluded.ready_message, stalled = excluded.stalled,
           generation = excluded.generation, observed_generation = excluded.observed_generation,
           last_attempted_revision = excluded.last_attempted_revision,
           report_revision = excluded.report_revision, reported_at = excluded.reported_at"#,
    )
    .bind(&report.cluster)
    .bind(&objects)
    .bind(report.received_at)
    .bind(i64::try_from(report.revision).unwrap_or(i64::MAX))
    .execute(&mut *conn)
    .await?;
    Ok(true)
}

/// Stamps `last_seen_at` of clusters whose streams are alive (keepalives sent
/// by the serving replica), one statement for the whole batch. A newer stamp
/// already stored (a report, another replica) is kept.
pub async fn touch_seen(conn: &mut PgConnection, seen: &[(String, DateTime<Utc>)]) -> Result<()> {
    let (names, times): (Vec<&str>, Vec<DateTime<Utc>>) =
        seen.iter().map(|(n, t)| (n.as_str(), *t)).unzip();
    // Rows locked in name order, like a report batch's.
    sqlx::query(
        "update cluster_connections k set last_seen_at = greatest(k.last_seen_at, s.at) \
         from unnest($1::text[], $2::timestamptz[]) as s(name, at) \
         where k.cluster = s.name and k.cluster in (select cluster from cluster_connections \
           where cluster = any($1) order by cluster for no key update)",
    )
    .bind(&names)
    .bind(&times)
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
    sqlx::query(
        // An upsert: a cluster registered by a replica that predates
        // `cluster_connections` (during a rolling upgrade) has no row yet.
        "insert into cluster_connections \
         (cluster, connected, connected_replica, spoke_version, last_seen_at) \
         values ($1, true, $2, $3, $4) \
         on conflict (cluster) do update set connected = true, \
         connected_replica = excluded.connected_replica, \
         spoke_version = excluded.spoke_version, last_seen_at = excluded.last_seen_at",
    )
    .bind(cluster)
    .bind(replica)
    .bind(spoke_version)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that `cluster`'s spoke left `replica`, unless it has meanwhile
/// connected to another replica (which then owns the state).
pub async fn mark_disconnected(
    conn: &mut PgConnection,
    cluster: &str,
    replica: &str,
    at: DateTime<Utc>,
) -> Result<()> {
    sqlx::query(
        "update cluster_connections set connected = false, last_seen_at = $3 \
         where cluster = $1 and connected_replica = $2 and connected",
    )
    .bind(cluster)
    .bind(replica)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Clears connection state left by an earlier run of `replica` (a crash
/// leaves `connected = true` behind). Returns how many clusters it cleared.
pub async fn clear_replica(conn: &mut PgConnection, replica: &str) -> Result<u64> {
    let res = sqlx::query(
        "update cluster_connections set connected = false where cluster in \
         (select cluster from cluster_connections where connected_replica = $1 and connected \
          order by cluster for no key update)",
    )
    .bind(replica)
    .execute(conn)
    .await?;
    Ok(res.rows_affected())
}
