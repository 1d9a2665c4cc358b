//! Reading approval requests: one request, the paged list (scoped readers see only
//! their gates' requests), the fleet view's current requests and the pending count,
//! each pending request with what the caller may do with it (`youMay`).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use uuid::Uuid;

use super::requests::person_key;
use crate::db::approvals::{self as db, ApprovalRequest, RequestFilter, RequestRow};
use crate::db::gates;
use crate::service::fleet::stored_gate;
use crate::service::{Actor, Page, PageRequest, Role, Service};
use crate::{Error, Result};

/// Request list query (`GET /api/v1/approvals?gate=&status=`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ApprovalQuery {
    /// Only this gate's requests.
    pub gate: Option<String>,
    /// Only requests in this status: pending, approved, rejected, expired, cancelled.
    pub status: Option<String>,
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

/// How long a decided request stays in the fleet view: far longer than the view's
/// read interval, so every watcher sees each request's outcome.
const DECIDED_IN_VIEW: chrono::Duration = chrono::Duration::minutes(10);

const STATUSES: [&str; 5] = ["pending", "approved", "rejected", "expired", "cancelled"];

impl Service {
    /// One request with its approvals (viewer).
    pub async fn get_approval_request(&self, actor: &Actor, id: Uuid) -> Result<ApprovalRequest> {
        actor.require(Role::Viewer)?;
        let mut conn = self.conn().await?;
        let row = db::get(&mut conn, id)
            .await?
            .ok_or_else(|| Error::not_found("approval request", id.to_string()))?;
        if let Some(v) = self.visible_gates(&mut conn, actor).await?
            && !v.contains(&row.gate)
        {
            return Err(Error::not_found("approval request", id.to_string()));
        }
        let given = db::approvals_of(&mut conn, &[id]).await?;
        let rights = rights_of(&mut conn, actor, std::slice::from_ref(&row), &given).await?;
        let mut rec = row.into_api(given.entries(id));
        rec.you_may = rights.get(&id).copied();
        Ok(rec)
    }

    /// Lists requests, newest first (viewer).
    pub async fn list_approval_requests(
        &self,
        actor: &Actor,
        q: &ApprovalQuery,
    ) -> Result<Page<ApprovalRequest>> {
        actor.require(Role::Viewer)?;
        if let Some(s) = &q.status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(Error::invalid(
                "status",
                format!("'{s}' is not one of {}", STATUSES.join(", ")),
            ));
        }
        let page = PageRequest {
            limit: q.limit,
            cursor: q.cursor.clone(),
        };
        let limit = page.limit()?;
        let after: Option<(DateTime<Utc>, Uuid)> = page.key()?;
        let filter = RequestFilter {
            gate: q.gate.clone(),
            status: q.status.clone(),
        };
        let mut conn = self.conn().await?;
        let visible = self.visible_gates(&mut conn, actor).await?;
        // Scoped readers: keep reading pages until a page's worth is in scope.
        let mut after = after;
        let mut rows = Vec::new();
        loop {
            let page = db::list(&mut conn, &filter, after, i64::from(limit) + 1).await?;
            let last = page.len() <= limit as usize;
            for r in page {
                after = Some((r.created_at, r.id));
                if visible.as_ref().is_none_or(|v| v.contains(&r.gate)) {
                    rows.push(r);
                }
            }
            if last || rows.len() > limit as usize {
                break;
            }
        }
        rows.truncate(limit as usize + 1);
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let given = db::approvals_of(&mut conn, &ids).await?;
        let rights = rights_of(&mut conn, actor, &rows, &given).await?;
        Ok(crate::service::page::from_rows(
            rows,
            limit,
            |r| (r.created_at, r.id),
            |r: RequestRow| {
                let you_may = rights.get(&r.id).copied();
                let approvals = given.entries(r.id);
                ApprovalRequest {
                    you_may,
                    ..r.into_api(approvals)
                }
            },
        ))
    }

    /// Requests pending at `now` or decided in the last [`DECIDED_IN_VIEW`], with
    /// their approvals, by id: the change streams' part of the fleet view.
    pub(crate) async fn approvals_for_view(
        &self,
        now: DateTime<Utc>,
    ) -> Result<std::collections::BTreeMap<String, ApprovalRequest>> {
        let mut conn = self.conn().await?;
        let rows = db::current(&mut conn, now - DECIDED_IN_VIEW).await?;
        if rows.is_empty() {
            return Ok(Default::default());
        }
        let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
        let given = db::approvals_of(&mut conn, &ids).await?;
        Ok(rows
            .into_iter()
            .map(|r| {
                let approvals = given.entries(r.id);
                (r.id.to_string(), r.into_api(approvals))
            })
            .collect())
    }

    /// How many requests wait for approval (the metric).
    pub async fn pending_approvals(&self) -> Result<i64> {
        let mut conn = self.conn().await?;
        db::pending_count(&mut conn).await
    }
}

/// What `actor` may do with each pending request of `rows` (whose approvals are
/// `given`), by id.
async fn rights_of(
    conn: &mut sqlx::PgConnection,
    actor: &Actor,
    rows: &[RequestRow],
    given: &db::Given,
) -> Result<std::collections::HashMap<Uuid, fleetgate_api_types::ApprovalRights>> {
    let mut out = std::collections::HashMap::new();
    if !rows.iter().any(|r| r.status == "pending") {
        return Ok(out);
    }
    let all = crate::db::clusters::scoped(conn).await?;
    let key = person_key(&actor.identity);
    let mut gates_by_name = std::collections::HashMap::new();
    for r in rows.iter().filter(|r| r.status == "pending") {
        if !gates_by_name.contains_key(&r.gate) {
            let Some(g) = gates::get(conn, &r.gate).await? else {
                continue;
            };
            gates_by_name.insert(r.gate.clone(), stored_gate(&g.manifest)?);
        }
        if let Some(gate_def) = gates_by_name.get(&r.gate) {
            out.insert(
                r.id,
                super::rights::rights(actor, r, gate_def, &all, given.approved_by(r.id, &key)),
            );
        }
    }
    Ok(out)
}
