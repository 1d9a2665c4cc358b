//! Webhook subscriptions and their deliveries: CRUD, the workers' claim
//! (a lease on the head of each endpoint's queue, `FOR UPDATE SKIP LOCKED`)
//! and the record of each attempt.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use uuid::Uuid;

use crate::Result;
use fleetgate_api_types::webhooks::{
    Webhook, WebhookAttempt, WebhookDelivery, WebhookFormat, WebhookSpec,
};

/// A stored subscription, secret included (never leaves the hub).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct WebhookRow {
    pub id: Uuid,
    pub name: String,
    pub url: String,
    pub event_types: Vec<String>,
    pub gates: Vec<String>,
    pub clusters: Option<serde_json::Value>,
    pub format: String,
    pub per_cluster: bool,
    pub enabled: bool,
    pub description: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub updated_at: DateTime<Utc>,
    pub disabled_reason: Option<String>,
    pub failing_since: Option<DateTime<Utc>>,
    /// The access scopes of the scoped principal that created or last
    /// replaced it (JSON list); `None`: unscoped. Events are routed to it
    /// only for gates and clusters inside them.
    pub owner_scope: Option<serde_json::Value>,
}

const COLUMNS: &str = "id, name, url, event_types, gates, clusters, format, per_cluster, enabled, \
    description, secret, previous_secret, previous_secret_expires_at, created_at, created_by, \
    updated_at, disabled_reason, failing_since, owner_scope";

pub async fn insert(conn: &mut PgConnection, w: &WebhookRow) -> Result<WebhookRow> {
    Ok(sqlx::query_as(sql!(
        "insert into webhooks ({COLUMNS}) values \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19) \
         returning {COLUMNS}"
    ))
    .bind(w.id)
    .bind(&w.name)
    .bind(&w.url)
    .bind(&w.event_types)
    .bind(&w.gates)
    .bind(&w.clusters)
    .bind(&w.format)
    .bind(w.per_cluster)
    .bind(w.enabled)
    .bind(&w.description)
    .bind(&w.secret)
    .bind(&w.previous_secret)
    .bind(w.previous_secret_expires_at)
    .bind(w.created_at)
    .bind(&w.created_by)
    .bind(w.updated_at)
    .bind(&w.disabled_reason)
    .bind(w.failing_since)
    .bind(&w.owner_scope)
    .fetch_one(conn)
    .await?)
}

/// Replaces every field but id, name, creation and secrets.
pub async fn update(conn: &mut PgConnection, w: &WebhookRow) -> Result<WebhookRow> {
    Ok(sqlx::query_as(sql!(
        "update webhooks set url = $2, event_types = $3, gates = $4, clusters = $5, format = $6, \
         per_cluster = $7, enabled = $8, description = $9, updated_at = $10, \
         disabled_reason = $11, failing_since = $12, secret = $13, previous_secret = $14, \
         previous_secret_expires_at = $15, owner_scope = $16 where id = $1 returning {COLUMNS}"
    ))
    .bind(w.id)
    .bind(&w.url)
    .bind(&w.event_types)
    .bind(&w.gates)
    .bind(&w.clusters)
    .bind(&w.format)
    .bind(w.per_cluster)
    .bind(w.enabled)
    .bind(&w.description)
    .bind(w.updated_at)
    .bind(&w.disabled_reason)
    .bind(w.failing_since)
    .bind(&w.secret)
    .bind(&w.previous_secret)
    .bind(w.previous_secret_expires_at)
    .bind(&w.owner_scope)
    .fetch_one(conn)
    .await?)
}

pub async fn get(conn: &mut PgConnection, name: &str) -> Result<Option<WebhookRow>> {
    Ok(
        sqlx::query_as(sql!("select {COLUMNS} from webhooks where name = $1"))
            .bind(name)
            .fetch_optional(conn)
            .await?,
    )
}

pub async fn get_for_update(conn: &mut PgConnection, name: &str) -> Result<Option<WebhookRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from webhooks where name = $1 for update"
    ))
    .bind(name)
    .fetch_optional(conn)
    .await?)
}

pub async fn list(conn: &mut PgConnection) -> Result<Vec<WebhookRow>> {
    Ok(
        sqlx::query_as(sql!("select {COLUMNS} from webhooks order by name"))
            .fetch_all(conn)
            .await?,
    )
}

pub async fn delete(conn: &mut PgConnection, id: Uuid) -> Result<()> {
    sqlx::query("delete from webhooks where id = $1")
        .bind(id)
        .execute(conn)
        .await?;
    Ok(())
}

const DELIVERY: &str = "d.id, d.event_id, e.type as event_type, e.subject, d.message_id, d.state, \
    d.attempts, d.next_attempt_at, d.last_status, d.last_error, d.delivered_at, d.created_at";

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: i64,
    event_id: i64,
    event_type: String,
    subject: String,
    message_id: String,
    state: String,
    attempts: i32,
    next_attempt_at: DateTime<Utc>,
    last_status: Option<i32>,
    last_error: Option<String>,
    delivered_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl From<DeliveryRow> for WebhookDelivery {
    fn from(r: DeliveryRow) -> Self {
        Self {
            id: r.id,
            event_id: r.event_id,
            event_type: r.event_type,
            subject: r.subject,
            message_id: r.message_id,
            state: r.state,
            attempts: r.attempts,
            next_attempt_at: r.next_attempt_at,
            last_status: r.last_status,
            last_error: r.last_error,
            delivered_at: r.delivered_at,
            created_at: r.created_at,
            attempt_log: Vec::new(),
        }
    }
}

/// A subscription's deliveries, newest first, before `before` (an id).
pub async fn deliveries(
    conn: &mut PgConnection,
    webhook: Uuid,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<WebhookDelivery>> {
    let rows: Vec<DeliveryRow> = sqlx::query_as(sql!(
        "select {DELIVERY} from webhook_deliveries d join notify_events e on e.id = d.event_id \
         where d.webhook_id = $1 and ($2::bigint is null or d.id < $2) order by d.id desc limit $3"
    ))
    .bind(webhook)
    .bind(before)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(Into::into).collect())
}

/// One delivery of `webhook` with its attempts.
pub async fn delivery(
    conn: &mut PgConnection,
    webhook: Uuid,
    id: i64,
) -> Result<Option<WebhookDelivery>> {
    let row: Option<DeliveryRow> = sqlx::query_as(sql!(
        "select {DELIVERY} from webhook_deliveries d join notify_events e on e.id = d.event_id \
         where d.webhook_id = $1 and d.id = $2"
    ))
    .bind(webhook)
    .bind(id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(row) = row else { return Ok(None) };
    let mut d = WebhookDelivery::from(row);
    d.attempt_log = sqlx::query_as::<
        _,
        (
            i32,
            DateTime<Utc>,
            String,
            Option<i32>,
            i32,
            Option<String>,
            Option<String>,
        ),
    >(
        "select attempt, at, replica, status, latency_ms, error, response_excerpt \
         from webhook_attempts where delivery_id = $1 order by id",
    )
    .bind(id)
    .fetch_all(conn)
    .await?
    .into_iter()
    .map(
        |(attempt, at, replica, status, latency_ms, error, response_excerpt)| WebhookAttempt {
            attempt,
            at,
            replica,
            status,
            latency_ms,
            error,
            response_excerpt,
        },
    )
    .collect();
    Ok(Some(d))
}

/// Puts a delivery back in its queue, due at `now` (redeliver on demand).
/// It keeps its `webhook-id`. `false` if there is no such delivery.
pub async fn redeliver(
    conn: &mut PgConnection,
    webhook: Uuid,
    id: i64,
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = sqlx::query(
        "update webhook_deliveries set state = 'pending', next_attempt_at = $3, \
         lease_owner = null, lease_until = null where webhook_id = $1 and id = $2",
    )
    .bind(webhook)
    .bind(id)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A claimed delivery with what sending it needs.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct Claimed {
    pub delivery_id: i64,
    pub message_id: String,
    pub attempts: i32,
    pub kept: Option<Vec<String>>,
    pub webhook_id: Uuid,
    pub webhook: String,
    pub url: String,
    pub format: String,
    pub secret: String,
    pub previous_secret: Option<String>,
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
    #[sqlx(flatten)]
    pub event: EventRow,
}

/// Leases up to `limit` deliveries due at `now` for `replica` for
/// `lease_secs`: of each enabled endpoint only the oldest pending one (in
/// order per endpoint), unless another replica holds its lease. Commits
/// before any HTTP call is made; an expired lease is claimed again.
///
/// Two clocks: whether a delivery is due is decided on the hub's clock
/// (`now`, [`crate::Service::now`]: a new delivery is due at once, a retry
/// at its `next_attempt_at`), while leases run on the database's wall clock
/// (they measure how long a replica has been silent). A claimed delivery's
/// `next_attempt_at` becomes `now`, the start of the attempt in flight, so
/// a delivery whose replica died is due again once its lease runs out.
pub async fn claim(
    conn: &mut PgConnection,
    replica: &str,
    lease_secs: f64,
    limit: i64,
    now: DateTime<Utc>,
) -> Result<Vec<Claimed>> {
    Ok(sqlx::query_as(
        "with claimed as ( \
           update webhook_deliveries set lease_owner = $1, \
             lease_until = now() + make_interval(secs => $2), attempts = attempts + 1, \
             next_attempt_at = $4 \
           where id in ( \
             select d.id from webhook_deliveries d join webhooks w on w.id = d.webhook_id \
             where d.state = 'pending' and w.enabled \
               and (d.attempts = 0 or d.next_attempt_at <= $4) \
               and (d.lease_until is null or d.lease_until < now()) \
               and not exists (select 1 from webhook_deliveries o where o.webhook_id = d.webhook_id \
                               and o.state = 'pending' and o.id < d.id) \
             order by d.id limit $3 for update of d skip locked) \
           returning id, message_id, attempts, clusters, webhook_id, event_id) \
         select c.id as delivery_id, c.message_id, c.attempts, c.clusters as kept, \
           w.id as webhook_id, w.name as webhook, w.url, w.format, w.secret, w.previous_secret, \
           w.previous_secret_expires_at, e.id, e.type, e.subject, e.seq, e.occurred_at, e.gate, \
           e.clusters, e.data \
         from claimed c join webhooks w on w.id = c.webhook_id join notify_events e on e.id = c.event_id \
         order by c.id",
    )
    .bind(replica)
    .bind(lease_secs)
    .bind(limit)
    .bind(now)
    .fetch_all(conn)
    .await?)
}

/// One attempt's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub status: Option<i32>,
    pub latency_ms: i32,
    pub error: Option<String>,
    pub excerpt: Option<String>,
    /// `delivered`, `pending` (retry at `next_attempt_at`) or `failed`.
    pub state: &'static str,
    pub next_attempt_at: DateTime<Utc>,
    /// When the attempt was made (the hub's clock).
    pub at: DateTime<Utc>,
}

/// Records an attempt made at `o.at` and the delivery's new state (if this
/// replica still holds its lease), and the endpoint's failure run. Returns
/// the endpoint's `failing_since` after the update.
pub async fn record(
    conn: &mut PgConnection,
    c: &Claimed,
    replica: &str,
    o: &Outcome,
) -> Result<Option<DateTime<Utc>>> {
    sqlx::query(
        "insert into webhook_attempts (delivery_id, attempt, at, replica, status, latency_ms, error, response_excerpt) \
         values ($1, $2, $8, $3, $4, $5, $6, $7)",
    )
    .bind(c.delivery_id)
    .bind(c.attempts)
    .bind(replica)
    .bind(o.status)
    .bind(o.latency_ms)
    .bind(&o.error)
    .bind(&o.excerpt)
    .bind(o.at)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "update webhook_deliveries set state = $3, next_attempt_at = $4, lease_owner = null, \
         lease_until = null, last_status = $5, last_error = $6, \
         delivered_at = case when $3 = 'delivered' then $7 else delivered_at end \
         where id = $1 and lease_owner = $2",
    )
    .bind(c.delivery_id)
    .bind(replica)
    .bind(o.state)
    .bind(o.next_attempt_at)
    .bind(o.status)
    .bind(&o.error)
    .bind(o.at)
    .execute(&mut *conn)
    .await?;
    let (failing_since,): (Option<DateTime<Utc>>,) = sqlx::query_as(
        "update webhooks set failing_since = case when $2 then null else coalesce(failing_since, $3) end \
         where id = $1 returning failing_since",
    )
    .bind(c.webhook_id)
    .bind(o.state == "delivered")
    .bind(o.at)
    .fetch_one(conn)
    .await?;
    Ok(failing_since)
}

/// Disables an endpoint at `now` with a reason (410 Gone, failing for days).
pub async fn disable(
    conn: &mut PgConnection,
    id: Uuid,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<bool> {
    let done = sqlx::query(
        "update webhooks set enabled = false, disabled_reason = $2, updated_at = $3 \
         where id = $1 and enabled",
    )
    .bind(id)
    .bind(reason)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// An outbox event as a delivery renders it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: i64,
    #[sqlx(rename = "type")]
    pub event_type: String,
    pub subject: String,
    pub seq: i64,
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    pub gate: Option<String>,
    pub clusters: Vec<String>,
    pub data: serde_json::Value,
}

/// How a stored row becomes the API's record.
impl From<WebhookRow> for Webhook {
    fn from(r: WebhookRow) -> Self {
        Self {
            id: r.id,
            spec: WebhookSpec {
                name: r.name,
                url: r.url,
                events: r.event_types,
                gates: r.gates,
                clusters: r.clusters.and_then(|c| serde_json::from_value(c).ok()),
                format: WebhookFormat::parse(&r.format).unwrap_or_default(),
                per_cluster: r.per_cluster,
                enabled: r.enabled,
                description: r.description,
            },
            created_at: r.created_at,
            created_by: r.created_by,
            updated_at: r.updated_at,
            disabled_reason: r.disabled_reason,
            failing_since: r.failing_since,
            previous_secret_expires_at: r.previous_secret_expires_at,
        }
    }
}
