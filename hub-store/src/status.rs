//! Reads of `object_status` (written by the gRPC report ingestion in
//! `db/reports.rs`): governed objects per cluster and fleet-wide held counts.

use sqlx::PgConnection;

use crate::Result;

/// A reported object with the time of the latest report that carried it: a
/// connected spoke re-sends its full report every heartbeat and the hub
/// writes only changes, so while its stream is open (and its replica's lease
/// holds) its objects are as reported at the lease's latest renewal.
pub use fleetgate_api_types::ObjectStatus;

/// Every reported object of `cluster`.
pub async fn for_cluster(conn: &mut PgConnection, cluster: &str) -> Result<Vec<ObjectStatus>> {
    let rows = sqlx::query_as(
        // An unchanged report leaves every row alone; the cluster's
        // `reported_at` is the latest written report's (every object of it was
        // in it: reports are full sets), the lease's renewal while the
        // stream is open; rows written by older replicas carry their own time.
        "select o.kind, o.namespace, o.name, o.suspended, o.suspended_by, o.gates, \
         o.last_applied_revision, o.newest_source_revision, o.held, o.suspended_by_human, \
         o.ignored, o.ready, o.ready_reason, o.ready_message, o.stalled, o.generation, \
         o.observed_generation, o.last_attempted_revision, o.would_suspend_by, o.would_hold, \
         greatest(o.reported_at, k.reported_at, \
         case when k.connected then l.heartbeat_at end) as reported_at, k.report_revision \
         from object_status o left join cluster_connections k on k.cluster = o.cluster \
         left join replica_leases l on l.replica = k.connected_replica \
         where o.cluster = $1 order by o.kind, o.namespace, o.name",
    )
    .bind(cluster)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// One cluster's reported-object counts.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ClusterObjectCounts {
    pub cluster: String,
    pub governed: i64,
    pub held: i64,
    pub suspended: i64,
    /// Objects closed warn gates would suspend.
    pub would_suspend: i64,
    /// Objects whose newer revision a closed warn gate would hold.
    pub would_hold: i64,
}

/// Per cluster: governed, held, suspended and would-suspend/would-hold objects.
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn counts_by_cluster_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<ClusterObjectCounts>> {
    crate::fetch_named(
        conn,
        "select cluster, count(*) filter (where not ignored) as governed, \
         count(*) filter (where held) as held, count(*) filter (where suspended) as suspended, \
         count(*) filter (where cardinality(would_suspend_by) > 0) as would_suspend, \
         count(*) filter (where would_hold) as would_hold \
         from object_status",
        "where cluster = any($1)",
        "group by cluster",
        names,
    )
    .await
}

/// Held objects per (cluster, governing gate), for the dashboard's grid: a
/// closed gate with held objects is shown as "closed, changes held".
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn held_by_gate_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(String, String, i64)>> {
    crate::fetch_named(
        conn,
        "select cluster, gate, count(*) from object_status, unnest(gates) as gate where held",
        "and cluster = any($1)",
        "group by cluster, gate",
        names,
    )
    .await
}

/// Objects closed warn gates would suspend per (cluster, gate): the grid's "would close"
/// cells and the would-suspend counts of `fleetgate status`.
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn would_suspend_by_gate_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(String, String, i64)>> {
    crate::fetch_named(
        conn,
        "select cluster, gate, count(*) from object_status, unnest(would_suspend_by) as gate",
        "where cluster = any($1)",
        "group by cluster, gate",
        names,
    )
    .await
}
