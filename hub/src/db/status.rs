//! Reads of `object_status` (written by the gRPC report ingestion in
//! `db/reports.rs`): governed objects per cluster and fleet-wide held counts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use utoipa::ToSchema;

use super::reports::ReportedObject;

use crate::Result;

/// A reported object with the time of the report that carried it.
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    #[serde(flatten)]
    #[sqlx(flatten)]
    pub object: ReportedObject,
    pub reported_at: DateTime<Utc>,
    /// The snapshot revision the spoke enforced when it reported this (status reported
    /// before a change reached the spoke carries an older revision).
    pub report_revision: Option<i64>,
}

/// Every reported object of `cluster`.
pub async fn for_cluster(conn: &mut PgConnection, cluster: &str) -> Result<Vec<ObjectStatus>> {
    let rows = sqlx::query_as(
        "select kind, namespace, name, suspended, suspended_by, gates, \
         last_applied_revision, newest_source_revision, held, suspended_by_human, ignored, \
         ready, ready_reason, ready_message, stalled, generation, observed_generation, \
         last_attempted_revision, reported_at, report_revision \
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
