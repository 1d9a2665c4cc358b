//! Reads of `object_status` (written by the gRPC report ingestion in
//! `db/reports.rs`): governed objects per cluster and fleet-wide held counts.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;

/// One governed Flux object as last reported by its spoke.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ObjectStatusRow {
    pub cluster: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub suspended: bool,
    pub suspended_by: Vec<String>,
    pub gates: Vec<String>,
    pub last_applied_revision: Option<String>,
    pub newest_source_revision: Option<String>,
    pub held: bool,
    pub suspended_by_human: bool,
    pub ignored: bool,
    pub reported_at: DateTime<Utc>,
}

/// Every reported object of `cluster`.
pub async fn for_cluster(conn: &mut PgConnection, cluster: &str) -> Result<Vec<ObjectStatusRow>> {
    let rows = sqlx::query_as(
        "select cluster, kind, namespace, name, suspended, suspended_by, gates, \
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
