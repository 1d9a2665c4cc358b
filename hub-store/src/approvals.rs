//! The `approval_requests` and `approvals` tables: override requests waiting for other
//! people's approval (migration 0037), and the approvals given.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::types::Json;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

use crate::Result;
pub use fleetgate_api_types::{ApprovalEntry, ApprovalRequest};

const COLUMNS: &str = "id, gate, state, scope, duration, starts_at, reason, ticket, requester, \
                       requester_key, required, status, created_at, expires_at, decided_at, \
                       decided_by, decision_reason, override_id";

/// A stored request; `requester_key` (the person behind the requester) stays inside the hub.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RequestRow {
    pub id: Uuid,
    pub gate: String,
    pub state: String,
    #[sqlx(json(nullable))]
    pub scope: Option<fleetgate_policy::ClusterScope>,
    pub duration: Option<String>,
    pub starts_at: Option<DateTime<Utc>>,
    pub reason: String,
    pub ticket: Option<String>,
    pub requester: String,
    pub requester_key: String,
    pub required: i32,
    pub status: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub decided_at: Option<DateTime<Utc>>,
    pub decided_by: Option<String>,
    pub decision_reason: Option<String>,
    pub override_id: Option<Uuid>,
}

impl RequestRow {
    /// The API view, with its approvals.
    pub fn into_api(self, approvals: Vec<ApprovalEntry>) -> ApprovalRequest {
        ApprovalRequest {
            id: self.id,
            gate: self.gate,
            state: self.state,
            clusters: self.scope,
            duration: self.duration,
            starts_at: self.starts_at,
            reason: self.reason,
            ticket: self.ticket,
            requester: self.requester,
            required: u32::try_from(self.required).unwrap_or(1),
            status: self.status,
            created_at: self.created_at,
            expires_at: self.expires_at,
            decided_at: self.decided_at,
            decided_by: self.decided_by,
            decision_reason: self.decision_reason,
            override_id: self.override_id,
            approvals,
            you_may: None,
        }
    }
}

/// Inserts a pending request.
pub async fn insert(conn: &mut PgConnection, r: &RequestRow) -> Result<RequestRow> {
    let row = sqlx::query_as(sql!(
        "insert into approval_requests (id, gate, state, scope, duration, starts_at, reason, \
         ticket, requester, requester_key, required, status, created_at, expires_at) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending', $12, $13) \
         returning {COLUMNS}"
    ))
    .bind(r.id)
    .bind(&r.gate)
    .bind(&r.state)
    .bind(r.scope.as_ref().map(Json))
    .bind(&r.duration)
    .bind(r.starts_at)
    .bind(&r.reason)
    .bind(&r.ticket)
    .bind(&r.requester)
    .bind(&r.requester_key)
    .bind(r.required)
    .bind(r.created_at)
    .bind(r.expires_at)
    .fetch_one(conn)
    .await?;
    Ok(row)
}

/// The request with `id`, locked until the transaction ends: approvals of one request
/// (on any replica) take turns, so exactly one of them sees the last one missing.
pub async fn get_for_update(conn: &mut PgConnection, id: Uuid) -> Result<Option<RequestRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from approval_requests where id = $1 for update"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?)
}

/// The request with `id`.
pub async fn get(conn: &mut PgConnection, id: Uuid) -> Result<Option<RequestRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from approval_requests where id = $1"
    ))
    .bind(id)
    .fetch_optional(conn)
    .await?)
}

/// Ends a pending request: `status` is approved, rejected, expired or cancelled. Only a
/// pending row changes; `None` if it was not pending any more.
#[allow(clippy::too_many_arguments)]
pub async fn decide(
    conn: &mut PgConnection,
    id: Uuid,
    status: &str,
    at: DateTime<Utc>,
    by: &str,
    reason: Option<&str>,
    override_id: Option<Uuid>,
) -> Result<Option<RequestRow>> {
    Ok(sqlx::query_as(sql!(
        "update approval_requests set status = $2, decided_at = $3, decided_by = $4, \
         decision_reason = $5, override_id = $6 where id = $1 and status = 'pending' \
         returning {COLUMNS}"
    ))
    .bind(id)
    .bind(status)
    .bind(at)
    .bind(by)
    .bind(reason)
    .bind(override_id)
    .fetch_optional(conn)
    .await?)
}

/// Records an approval; `false` if this approver had already approved.
pub async fn add_approval(
    conn: &mut PgConnection,
    id: Uuid,
    approver_key: &str,
    approver: &str,
    reason: Option<&str>,
    at: DateTime<Utc>,
) -> Result<bool> {
    let done = sqlx::query(
        "insert into approvals (request_id, approver_key, approver, reason, at) \
         values ($1, $2, $3, $4, $5) on conflict do nothing",
    )
    .bind(id)
    .bind(approver_key)
    .bind(approver)
    .bind(reason)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// The approvals given to some requests, by request, each oldest first, with the
/// approver's person key (OIDC issuer + subject, or token name): one read serves
/// what the API shows and whether the caller has approved already.
#[derive(Debug, Default)]
pub struct Given(HashMap<Uuid, Vec<(String, ApprovalEntry)>>);

impl Given {
    /// Request `id`'s approvals as the API shows them.
    pub fn entries(&self, id: Uuid) -> Vec<ApprovalEntry> {
        self.0
            .get(&id)
            .map(|v| v.iter().map(|(_, e)| e.clone()).collect())
            .unwrap_or_default()
    }

    /// Whether the person `approver_key` has approved request `id`.
    pub fn approved_by(&self, id: Uuid, approver_key: &str) -> bool {
        self.0
            .get(&id)
            .is_some_and(|v| v.iter().any(|(k, _)| k == approver_key))
    }
}

/// One row of `approvals`.
#[derive(sqlx::FromRow)]
struct GivenRow {
    request_id: Uuid,
    approver_key: String,
    approver: String,
    at: DateTime<Utc>,
    reason: Option<String>,
}

/// The approvals of `ids`.
pub async fn approvals_of(conn: &mut PgConnection, ids: &[Uuid]) -> Result<Given> {
    let rows: Vec<GivenRow> = sqlx::query_as(
        "select request_id, approver_key, approver, at, reason from approvals \
         where request_id = any($1) order by at, approver",
    )
    .bind(ids)
    .fetch_all(conn)
    .await?;
    let mut given = Given::default();
    for r in rows {
        given.0.entry(r.request_id).or_default().push((
            r.approver_key,
            ApprovalEntry {
                approver: r.approver,
                at: r.at,
                reason: r.reason,
            },
        ));
    }
    Ok(given)
}

/// Filter for [`list`].
#[derive(Debug, Clone, Default)]
pub struct RequestFilter {
    pub gate: Option<String>,
    pub status: Option<String>,
}

/// A page of requests, newest first, after the `(created_at, id)` cursor.
pub async fn list(
    conn: &mut PgConnection,
    filter: &RequestFilter,
    after: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> Result<Vec<RequestRow>> {
    let mut q = QueryBuilder::<Postgres>::new(format!(
        "select {COLUMNS} from approval_requests where true"
    ));
    if let Some(gate) = &filter.gate {
        q.push(" and gate = ").push_bind(gate.clone());
    }
    if let Some(status) = &filter.status {
        q.push(" and status = ").push_bind(status.clone());
    }
    if let Some((at, id)) = after {
        q.push(" and (created_at, id) < (")
            .push_bind(at)
            .push(", ")
            .push_bind(id)
            .push(")");
    }
    q.push(" order by created_at desc, id desc limit ")
        .push_bind(limit);
    Ok(q.build_query_as().fetch_all(conn).await?)
}

/// Pending requests whose time ran out at `now`, locked; rows another replica is
/// expiring right now are skipped.
pub async fn due(
    conn: &mut PgConnection,
    now: DateTime<Utc>,
    limit: i64,
) -> Result<Vec<RequestRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from approval_requests where status = 'pending' and expires_at <= $1 \
         order by expires_at limit $2 for update skip locked"
    ))
    .bind(now)
    .bind(limit)
    .fetch_all(conn)
    .await?)
}

/// Whether any pending request's time ran out at `now` (a read, before taking the
/// write lock).
pub async fn any_due(conn: &mut PgConnection, now: DateTime<Utc>) -> Result<bool> {
    Ok(sqlx::query_scalar(
        "select exists (select 1 from approval_requests where status = 'pending' \
         and expires_at <= $1)",
    )
    .bind(now)
    .fetch_one(conn)
    .await?)
}

/// How many requests are pending (metrics).
pub async fn pending_count(conn: &mut PgConnection) -> Result<i64> {
    Ok(
        sqlx::query_scalar("select count(*) from approval_requests where status = 'pending'")
            .fetch_one(conn)
            .await?,
    )
}

/// Requests pending now or decided at or after `since` (the change streams' view:
/// a request decided between two reads is still seen with its outcome).
pub async fn current(conn: &mut PgConnection, since: DateTime<Utc>) -> Result<Vec<RequestRow>> {
    Ok(sqlx::query_as(sql!(
        "select {COLUMNS} from approval_requests where status = 'pending' \
         union all select {COLUMNS} from approval_requests where status <> 'pending' \
         and decided_at >= $1"
    ))
    .bind(since)
    .fetch_all(conn)
    .await?)
}
