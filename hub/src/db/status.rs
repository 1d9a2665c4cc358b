//! Reads of `object_status` (written by the gRPC report ingestion in
//! `db/reports.rs`): governed objects per cluster and fleet-wide held counts.

use sqlx::PgConnection;

use crate::Result;

/// A reported object with the time of the report that carried it.
pub use fleetgate_api_types::ObjectStatus;

/// Every reported object of `cluster`.
pub async fn for_cluster(conn: &mut PgConnection, cluster: &str) -> Result<Vec<ObjectStatus>> {
    let rows = sqlx::query_as(
        "select kind, namespace, name, suspended, suspended_by, gates, \
         last_applied_revision, newest_source_revision, held, suspended_by_human, ignored, \
         reported_at \
         from object_status where cluster = $1 order by kind, namespace, name",
    )
    .bind(cluster)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Per cluster: (cluster, governed objects, held objects, suspended objects).
pub async fn counts_by_cluster(conn: &mut PgConnection) -> Result<Vec<(String, i64, i64, i64)>> {
    let rows = sqlx::query_as(
        "select cluster, count(*) filter (where not ignored), count(*) filter (where held), \
         count(*) filter (where suspended) from object_status group by cluster",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Held objects per (cluster, governing gate), for the dashboard's grid: a
/// closed gate with held objects is shown as "closed, changes held".
pub async fn held_by_gate(conn: &mut PgConnection) -> Result<Vec<(String, String, i64)>> {
    let rows = sqlx::query_as(
        "select cluster, gate, count(*) from object_status, unnest(gates) as gate \
         where held group by cluster, gate",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows)
}
