//! The `access_policies` table: validated `AccessPolicy` manifests as JSON
//! with a version for optimistic concurrency, like gates.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;
use crate::error::on_unique;

/// One stored access policy.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PolicyRow {
    pub name: String,
    pub manifest: serde_json::Value,
    pub version: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str = "name, manifest, version, created_at, updated_at";
const SELECT: &str = "select name, manifest, version, created_at, updated_at from access_policies";

/// Every policy, by name (what a principal is resolved against; read
/// through the replica's cache, `service::access::resolve::PolicyCache`).
pub async fn all(conn: &mut PgConnection) -> Result<Vec<PolicyRow>> {
    super::fetch_named(conn, SELECT, "where name = any($1)", "order by name", None).await
}

/// A page of policies ordered by name, after `after`.
pub async fn list(
    conn: &mut PgConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<PolicyRow>> {
    super::page_by_name(conn, "access_policies", COLUMNS, after, limit).await
}

/// `fleet_revision.access_policies_version`: a new random value after every
/// change of any policy (trigger, migration 0032).
pub async fn version(conn: &mut PgConnection) -> Result<uuid::Uuid> {
    let (v,): (uuid::Uuid,) = sqlx::query_as("select access_policies_version from fleet_revision")
        .fetch_one(conn)
        .await?;
    Ok(v)
}

/// The policy named `name`, locked until the transaction ends.
pub async fn get_for_update(conn: &mut PgConnection, name: &str) -> Result<Option<PolicyRow>> {
    let row = sqlx::query_as(sql!("{SELECT} where name = $1 for update"))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// The policy named `name`.
pub async fn get(conn: &mut PgConnection, name: &str) -> Result<Option<PolicyRow>> {
    let row = sqlx::query_as(sql!("{SELECT} where name = $1"))
        .bind(name)
        .fetch_optional(conn)
        .await?;
    Ok(row)
}

/// Inserts a new policy at version 1; 409 if the name is taken.
pub async fn insert(
    conn: &mut PgConnection,
    name: &str,
    manifest: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<PolicyRow> {
    sqlx::query_as(sql!(
        "insert into access_policies (name, manifest, version, created_at, updated_at) \
         values ($1, $2, 1, $3, $3) returning {COLUMNS}"
    ))
    .bind(name)
    .bind(manifest)
    .bind(now)
    .fetch_one(conn)
    .await
    .map_err(|e| on_unique(e, || format!("access policy '{name}' already exists")))
}

/// Replaces the manifest and bumps the version.
pub async fn update(
    conn: &mut PgConnection,
    name: &str,
    manifest: &serde_json::Value,
    now: DateTime<Utc>,
) -> Result<PolicyRow> {
    let row = sqlx::query_as(sql!(
        "update access_policies set manifest = $2, version = version + 1, updated_at = $3 \
         where name = $1 returning {COLUMNS}"
    ))
    .bind(name)
    .bind(manifest)
    .bind(now)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// Deletes the policy.
pub async fn delete(conn: &mut PgConnection, name: &str) -> Result<()> {
    sqlx::query("delete from access_policies where name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(())
}
