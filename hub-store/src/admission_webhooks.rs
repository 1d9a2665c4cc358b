//! The `admission_webhooks` table (migration 0038).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;
use fleetgate_api_types::admission::{AdmissionWebhook, AdmissionWebhookSpec, FailurePolicy};

/// A stored admission webhook.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct AdmissionRow {
    pub name: String,
    pub url: String,
    pub operations: Vec<String>,
    pub timeout_ms: i32,
    pub failure_policy: String,
    pub ca_bundle: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

const COLUMNS: &str =
    "name, url, operations, timeout_ms, failure_policy, ca_bundle, created_at, updated_at";

/// Every admission webhook, by name.
pub async fn all(conn: &mut PgConnection) -> Result<Vec<AdmissionRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from admission_webhooks order by name"
    ))
    .fetch_all(conn)
    .await?)
}

/// The webhook `name`, locked when `lock`.
pub async fn get(conn: &mut PgConnection, name: &str, lock: bool) -> Result<Option<AdmissionRow>> {
    let q = if lock {
        sql!("select {COLUMNS} from admission_webhooks where name = $1 for update")
    } else {
        sql!("select {COLUMNS} from admission_webhooks where name = $1")
    };
    Ok(sqlx::query_as(q).bind(name).fetch_optional(conn).await?)
}

/// Creates or replaces `row` (its `created_at` kept on replace).
pub async fn upsert(conn: &mut PgConnection, row: &AdmissionRow) -> Result<AdmissionRow> {
    Ok(sqlx::query_as(sql!(
        "insert into admission_webhooks ({COLUMNS}) values ($1, $2, $3, $4, $5, $6, $7, $8) \
         on conflict (name) do update set url = excluded.url, operations = excluded.operations, \
         timeout_ms = excluded.timeout_ms, failure_policy = excluded.failure_policy, \
         ca_bundle = excluded.ca_bundle, updated_at = excluded.updated_at returning {COLUMNS}"
    ))
    .bind(&row.name)
    .bind(&row.url)
    .bind(&row.operations)
    .bind(row.timeout_ms)
    .bind(&row.failure_policy)
    .bind(&row.ca_bundle)
    .bind(row.created_at)
    .bind(row.updated_at)
    .fetch_one(conn)
    .await?)
}

/// Deletes `name`; whether it existed.
pub async fn delete(conn: &mut PgConnection, name: &str) -> Result<bool> {
    let done = sqlx::query("delete from admission_webhooks where name = $1")
        .bind(name)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

/// How a stored row becomes the API's record.
impl From<AdmissionRow> for AdmissionWebhook {
    fn from(r: AdmissionRow) -> Self {
        let timeout = u64::try_from(r.timeout_ms).unwrap_or(5000);
        Self {
            name: r.name,
            spec: AdmissionWebhookSpec {
                url: r.url,
                operations: r.operations,
                timeout: Some(fleetgate_policy::format_duration(
                    chrono::Duration::milliseconds(i64::try_from(timeout).unwrap_or(5000)),
                )),
                failure_policy: if r.failure_policy == "Ignore" {
                    FailurePolicy::Ignore
                } else {
                    FailurePolicy::Fail
                },
                ca_bundle: r.ca_bundle,
            },
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}
