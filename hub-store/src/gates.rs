//! The `gates` table: validated manifests as JSON with a version for
//! optimistic concurrency.

use chrono::{DateTime, Utc};
use fleetgate_policy::ClusterScope;
use sqlx::PgConnection;
use sqlx::types::Json;

use crate::Result;
use crate::error::on_unique;

/// One stored gate.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GateRow {
    pub name: String,
    pub manifest: serde_json::Value,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// The cluster scopes of the scoped admin that last wrote the gate
    /// (none: an unscoped principal did); the gate reaches only clusters
    /// inside one of them.
    pub writer_scope: Option<Json<Vec<ClusterScope>>>,
}

const COLUMNS: &str = "name, manifest, version, created_at, updated_at, writer_scope";

/// The gate named `name`.
pub async fn get(conn: &mut PgConnection, name: &str) -> Result<Option<GateRow>> {
    let row = sqlx::query_as(sql!("select {COLUMNS} from gates where name = $1"))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// The gate named `name`, locked until the transaction ends.
pub async fn get_for_update(conn: &mut PgConnection, name: &str) -> Result<Option<GateRow>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from gates where name = $1 for update"
    ))
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// Inserts a new gate at version 1; 409 if the name is taken.
pub async fn insert(
    conn: &mut PgConnection,
    name: &str,
    manifest: &serde_json::Value,
    writer_scope: Option<&[ClusterScope]>,
    now: DateTime<Utc>,
) -> Result<GateRow> {
    sqlx::query_as(sql!(
        "insert into gates (name, manifest, version, created_at, updated_at, writer_scope) \
         values ($1, $2, 1, $3, $3, $4) returning {COLUMNS}"
    ))
    .bind(name)
    .bind(manifest)
    .bind(now)
    .bind(writer_scope.map(Json))
    .fetch_one(conn)
    .await
    .map_err(|e| on_unique(e, || format!("gate '{name}' already exists")))
}

/// Replaces the manifest and bumps the version.
pub async fn update(
    conn: &mut PgConnection,
    name: &str,
    manifest: &serde_json::Value,
    writer_scope: Option<&[ClusterScope]>,
    now: DateTime<Utc>,
) -> Result<GateRow> {
    let row = sqlx::query_as(sql!(
        "update gates set manifest = $2, version = version + 1, updated_at = $3, \
         writer_scope = $4 where name = $1 returning {COLUMNS}"
    ))
    .bind(name)
    .bind(manifest)
    .bind(now)
    .bind(writer_scope.map(Json))
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// Deletes the gate (its overrides go with it).
pub async fn delete(conn: &mut PgConnection, name: &str) -> Result<()> {
    sqlx::query("delete from gates where name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}

/// A page of gates ordered by name, after `after`.
pub async fn list(
    conn: &mut PgConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<GateRow>> {
    super::page_by_name(conn, "gates", COLUMNS, after, limit).await
}

/// Every gate (for evaluation across the fleet).
pub async fn all(conn: &mut PgConnection) -> Result<Vec<GateRow>> {
    let rows = sqlx::query_as(sql!("select {COLUMNS} from gates order by name"))
        .fetch_all(conn)
        .await?;
    Ok(rows)
}

/// How a stored gate row becomes the API's record.
impl From<GateRow> for fleetgate_api_types::records::GateRecord {
    fn from(r: GateRow) -> Self {
        // Stored manifests were validated when written; one that no longer parses has no
        // warnings to give (reading it fails elsewhere with a clear error).
        let warnings = fleetgate_policy::parse_gate_json(r.manifest.clone())
            .map(|g| g.warnings())
            .unwrap_or_default()
            .into_iter()
            .map(|w| fleetgate_api_types::records::FieldWarning {
                path: w.path,
                message: w.message,
            })
            .collect();
        Self {
            name: r.name,
            version: r.version,
            manifest: r.manifest,
            created_at: r.created_at,
            updated_at: r.updated_at,
            warnings,
            calendars: Vec::new(),
        }
    }
}
