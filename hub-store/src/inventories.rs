//! `cluster_inventories`: every Flux object each cluster's spoke sees (governed or not), with
//! labels and sources, as its latest report carried it; read by the impact preview
//! (`service::gates::impact`). Written by report ingestion only when the inventory changed (its hash),
//! so a steady fleet's heartbeats write nothing here.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgConnection;

pub use fleetgate_api_types::impact::InventoryObject;

use crate::Result;

/// Stores `cluster`'s inventory unless it equals the stored one.
pub async fn write(
    conn: &mut PgConnection,
    cluster: &str,
    objects: &[InventoryObject],
    at: DateTime<Utc>,
) -> Result<()> {
    let json = serde_json::to_value(objects)
        .map_err(|e| crate::Error::Internal(format!("encoding inventory: {e}")))?;
    let hash = Sha256::digest(json.to_string().as_bytes()).to_vec();
    sqlx::query(
        "insert into cluster_inventories (cluster, objects, hash, reported_at) \
         values ($1, $2, $3, $4) \
         on conflict (cluster) do update set objects = excluded.objects, \
           hash = excluded.hash, reported_at = excluded.reported_at \
         where cluster_inventories.hash is distinct from excluded.hash",
    )
    .bind(cluster)
    .bind(&json)
    .bind(&hash)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The stored inventories of `clusters` (those that reported one), by cluster.
pub async fn for_clusters(
    conn: &mut PgConnection,
    clusters: &[String],
) -> Result<HashMap<String, Vec<InventoryObject>>> {
    let rows: Vec<(String, sqlx::types::Json<Vec<InventoryObject>>)> =
        sqlx::query_as("select cluster, objects from cluster_inventories where cluster = any($1)")
            .bind(clusters)
            .fetch_all(conn)
            .await?;
    Ok(rows.into_iter().map(|(c, o)| (c, o.0)).collect())
}
