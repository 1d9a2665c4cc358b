//! The `api_tokens` table: named API tokens with a role, stored as the sha256
//! of the secret; revoked tokens stay for the audit trail.

use chrono::{DateTime, Utc};
use fleetgate_api_types::AccessScope;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

use super::WithHash;
use crate::Result;
use crate::error::on_unique;

/// One API token (without its hash).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TokenRow {
    pub id: Uuid,
    pub name: String,
    pub role: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// The token's own scope (`AccessScope`); none: unscoped.
    pub scope: Option<Json<AccessScope>>,
}

const COLUMNS: &str = "id, name, role, created_at, revoked_at, scope";

/// Creates a token; 409 if the name is taken.
pub async fn insert(
    conn: &mut PgConnection,
    name: &str,
    role: &str,
    scope: Option<&AccessScope>,
    hash: &[u8],
    now: DateTime<Utc>,
) -> Result<TokenRow> {
    sqlx::query_as(sql!(
        "insert into api_tokens (id, name, role, token_hash, created_at, scope) \
         values ($1, $2, $3, $4, $5, $6) returning {COLUMNS}"
    ))
    .bind(Uuid::new_v4())
    .bind(name)
    .bind(role)
    .bind(hash)
    .bind(now)
    .bind(scope.map(Json))
    .fetch_one(conn)
    .await
    .map_err(|e| on_unique(e, || format!("API token '{name}' already exists")))
}

/// The token whose secret hashes to `hash`, with the stored hash.
pub async fn by_hash(conn: &mut PgConnection, hash: &[u8]) -> Result<Option<(TokenRow, Vec<u8>)>> {
    let found: Option<WithHash<_>> = sqlx::query_as(sql!(
        "select {COLUMNS}, token_hash from api_tokens where token_hash = $1"
    ))
    .bind(hash)
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|w| (w.row, w.token_hash)))
}

/// The token named `name`, with its hash, locked until the transaction ends.
pub async fn by_name_for_update(
    conn: &mut PgConnection,
    name: &str,
) -> Result<Option<(TokenRow, Vec<u8>)>> {
    let found: Option<WithHash<_>> = sqlx::query_as(sql!(
        "select {COLUMNS}, token_hash from api_tokens where name = $1 for update"
    ))
    .bind(name)
    .fetch_optional(conn)
    .await?;
    Ok(found.map(|w| (w.row, w.token_hash)))
}

/// Sets a new secret hash and role, un-revoking the token.
pub async fn reset(conn: &mut PgConnection, id: Uuid, role: &str, hash: &[u8]) -> Result<TokenRow> {
    let row = sqlx::query_as(sql!(
        "update api_tokens set role = $2, token_hash = $3, revoked_at = null, scope = null \
         where id = $1 \
         returning {COLUMNS}"
    ))
    .bind(id)
    .bind(role)
    .bind(hash)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// The token with `id`, locked until the transaction ends.
pub async fn get_for_update(conn: &mut PgConnection, id: Uuid) -> Result<Option<TokenRow>> {
    let row = sqlx::query_as(sql!(
        "select {COLUMNS} from api_tokens where id = $1 for update"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?;
    Ok(row)
}

/// Marks the token revoked.
pub async fn revoke(conn: &mut PgConnection, id: Uuid, at: DateTime<Utc>) -> Result<TokenRow> {
    let row = sqlx::query_as(sql!(
        "update api_tokens set revoked_at = $2 where id = $1 returning {COLUMNS}"
    ))
    .bind(id)
    .bind(at)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// A page of tokens ordered by name, after `after`.
pub async fn list(
    conn: &mut PgConnection,
    after: Option<&str>,
    limit: i64,
) -> Result<Vec<TokenRow>> {
    super::page_by_name(conn, "api_tokens", COLUMNS, after, limit).await
}

impl From<TokenRow> for fleetgate_api_types::records::ApiToken {
    fn from(r: TokenRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            role: r.role,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
            scope: r.scope.map(|s| s.0),
        }
    }
}
