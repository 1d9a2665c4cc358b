//! Two-person approval of overrides (a gate's `spec.approval`): the pending request,
//! approve, reject, the requester's cancel and expiry. A request lives in
//! `approval_requests` until the last approval turns it into an override in the same
//! transaction, so nothing pending ever reaches a spoke. Approvers are compared on the
//! person (OIDC issuer + subject, token name), never on the session.

use chrono::{DateTime, Utc};
use fleetgate_policy::{Gate, GateState};
use serde::Deserialize;
use uuid::Uuid;

use super::fleet::stored_gate;
use super::overrides::{NewOverride, OverrideTimes, covered_clusters, insert_override};
use super::types::OverrideRequest;
use super::{Actor, Audit, Identity, Page, PageRequest, Role, Service, WriteTx, Written, to_json};
use crate::db::approvals::{self as db, ApprovalRequest, RequestFilter, RequestRow};
use crate::db::gates;
use crate::db::revision::Affected;
use crate::notify::NewEvent;
use crate::{Error, Result, validate};

pub use fleetgate_api_types::OverrideOutcome;

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

/// The person behind an actor, as approvals compare them: the same person through a
/// dashboard session, the CLI or a second session is one key.
pub fn person_key(identity: &Identity) -> String {
    match identity {
        Identity::Person(p) => format!("person {} {}", p.issuer, p.sub),
        Identity::Workload(w) => format!("workload {} {}", w.issuer, w.sub),
        Identity::Token(t) => format!("token {}", t.name),
        Identity::System { name } => format!("system {name}"),
    }
}

/// Whether `identity` is among a gate's `approval.from` (absent: anyone).
pub(super) fn in_from(approval: &fleetgate_policy::Approval, identity: &Identity) -> bool {
    let Some(from) = &approval.from else {
        return true;
    };
    match identity {
        Identity::Person(p) => {
            p.groups.iter().any(|g| from.groups.contains(g))
                || from.users.iter().any(|u| {
                    Some(u) == p.email.as_ref() || *u == p.sub || Some(u) == p.name.as_ref()
                })
        }
        Identity::Token(t) => from.tokens.contains(&t.name),
        Identity::Workload(w) => from.users.contains(&w.sub),
        Identity::System { name } => from.users.contains(name) || from.tokens.contains(name),
    }
}

/// What a pending request asks for: the override state, the clusters it is
/// narrowed to, the caller's request and the admission webhooks' outcomes.
pub(super) struct NewRequest<'a> {
    pub state: GateState,
    pub scope: Option<fleetgate_policy::ClusterScope>,
    pub req: &'a OverrideRequest,
    pub admission: &'a [fleetgate_api_types::admission::AdmissionOutcome],
}

/// Inserts the pending request for an override through a gate with approval (in the
/// caller's write, the gate locked). Checks what the override would be checked on now
/// (clusters, times), so approval never fails on the request's own input.
pub(super) async fn insert_pending(
    tx: &mut WriteTx<'_>,
    actor: &Actor,
    gate_def: &Gate,
    new: NewRequest<'_>,
    now: DateTime<Utc>,
) -> Result<Written<OverrideOutcome>> {
    let NewRequest {
        state,
        scope,
        req,
        admission,
    } = new;
    let approval = gate_def
        .spec
        .approval
        .as_ref()
        .ok_or_else(|| Error::Internal("insert_pending without spec.approval".into()))?;
    let covered = covered_clusters(tx, gate_def, scope.as_ref()).await?;
    let row = db::insert(
        tx,
        &RequestRow {
            id: Uuid::new_v4(),
            gate: gate_def.name().to_string(),
            state: state.as_str().to_string(),
            scope,
            duration: req.duration.clone(),
            starts_at: req.starts_at,
            reason: req.reason.clone(),
            ticket: req.ticket.clone(),
            requester: actor.name.clone(),
            requester_key: person_key(&actor.identity),
            required: i32::try_from(approval.approvers).unwrap_or(1),
            status: "pending".into(),
            created_at: now,
            expires_at: now + approval.expiry(),
            decided_at: None,
            decided_by: None,
            decision_reason: None,
            override_id: None,
        },
    )
    .await?;
    let rec = row.into_api(Vec::new());
    let clusters: Vec<String> = covered.iter().map(|c| c.name.clone()).collect();
    crate::notify::enqueue(tx, &event("approval.pending", &rec, &clusters, now)).await?;
    let audit = Audit {
        action: "approval.request",
        target_kind: "gate",
        target_name: rec.gate.clone(),
        before: None,
        after: super::admission::with_outcomes(to_json(&rec), admission),
        reason: Some(rec.reason.clone()),
    };
    // Nothing reaches a spoke: no cluster's snapshot changes.
    Ok(Written::changed(
        OverrideOutcome::Pending(Box::new(rec)),
        audit,
        Affected::Clusters(Vec::new()),
    ))
}

/// An `approval.*` event for the outbox.
pub(super) fn event(
    kind: &str,
    rec: &ApprovalRequest,
    clusters: &[String],
    at: DateTime<Utc>,
) -> NewEvent {
    NewEvent {
        event_type: kind.into(),
        subject: format!("approval/{}", rec.id),
        dedup_key: Some(format!("{kind}/{}", rec.id)),
        occurred_at: at,
        gate: Some(rec.gate.clone()),
        clusters: clusters.to_vec(),
        data: serde_json::json!({ "request": rec, "clusters": clusters }),
    }
}

/// What ends a pending request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    Reject,
    Cancel,
}

impl Service {
    /// Approves a pending request (operator or higher over the gate and every cluster it
    /// covers, in the gate's `approval.from`, not the requester). The approval that makes
    /// the count creates the override, in the same transaction.
    pub async fn approve_request(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<ApprovalRequest> {
        actor.require(Role::Operator)?;
        validate::optional_reason("reason", reason)?;
        let admission = {
            let mut conn = self.conn().await?;
            match db::get(&mut conn, id).await? {
                Some(r) if r.status == "pending" => {
                    drop(conn);
                    let state: GateState = r.state.parse().unwrap_or(GateState::Open);
                    self.admit(
                        actor,
                        super::admission::Admit {
                            operation: "approval",
                            gate: &r.gate,
                            scope: r.scope.as_ref(),
                            state,
                            duration: r.duration.as_deref(),
                            reason: &r.reason,
                            requester: &r.requester,
                            approver: Some(&actor.name),
                            ticket: r.ticket.as_deref(),
                            emergency: false,
                        },
                    )
                    .await?
                }
                _ => Vec::new(),
            }
        };
        let admission = &admission;
        let now = self.now();
        let (rec, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let row = pending_for_update(tx, id, now).await?;
                    let key = person_key(&actor.identity);
                    let g = gates::get_for_update(tx, &row.gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", row.gate.clone()))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let covered = covered_clusters(tx, &gate_def, row.scope.as_ref()).await?;
                    super::approval_rights::check_approver(actor, &row, &gate_def, &covered)?;
                    if !db::add_approval(tx, id, &key, &actor.name, reason, now).await? {
                        return Err(Error::conflict(format!(
                            "{} '{}' has already approved request {id}",
                            actor.identity.kind(),
                            actor.name
                        )));
                    }
                    let given = db::approvals_of(tx, &[id]).await?;
                    let approvals: Vec<_> = given.into_iter().map(|(_, a)| a).collect();
                    let names: Vec<String> = covered.iter().map(|c| c.name.clone()).collect();
                    if approvals.len() < usize::try_from(row.required).unwrap_or(1) {
                        let rec = row.into_api(approvals);
                        let audit = Audit {
                            action: "approval.approve",
                            target_kind: "gate",
                            target_name: rec.gate.clone(),
                            before: None,
                            after: super::admission::with_outcomes(to_json(&rec), admission),
                            reason: reason.map(Into::into),
                        };
                        return Ok(Written::changed(rec, audit, Affected::Clusters(Vec::new())));
                    }
                    let state: GateState = row
                        .state
                        .parse()
                        .map_err(|_| Error::Internal(format!("request {id}: bad state")))?;
                    let times =
                        OverrideTimes::approved(row.starts_at, row.duration.as_deref(), now)?;
                    let (ov, affected) = insert_override(
                        tx,
                        &gate_def,
                        NewOverride {
                            state,
                            scope: row.scope.clone(),
                            times,
                            actor: &row.requester,
                            reason: &row.reason,
                            emergency: false,
                            approval_request: Some(id),
                            now,
                        },
                    )
                    .await?;
                    let decided =
                        db::decide(tx, id, "approved", now, &actor.name, reason, Some(ov.id))
                            .await?
                            .ok_or_else(|| {
                                Error::conflict(format!("request {id} is no longer pending"))
                            })?;
                    let rec = decided.into_api(approvals);
                    crate::notify::enqueue(tx, &event("approval.approved", &rec, &names, now))
                        .await?;
                    let audit = Audit {
                        action: "approval.approve",
                        target_kind: "gate",
                        target_name: rec.gate.clone(),
                        before: None,
                        after: super::admission::with_outcomes(
                            Some(serde_json::json!({ "request": rec, "override": ov })),
                            admission,
                        ),
                        reason: reason.map(Into::into),
                    };
                    Ok(Written::changed(rec, audit, affected))
                })
            })
            .await?;
        self.approval_metrics().decided("approved");
        Ok(rec)
    }

    /// Rejects a pending request (the same people who may approve it; a reason is required).
    pub async fn reject_request(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: &str,
    ) -> Result<ApprovalRequest> {
        actor.require(Role::Operator)?;
        validate::reason("reason", reason)?;
        let r = self
            .end_request(actor, id, Ending::Reject, Some(reason))
            .await?;
        self.approval_metrics().decided("rejected");
        Ok(r)
    }

    /// Withdraws a pending request: its requester, or an admin.
    pub async fn cancel_request(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<ApprovalRequest> {
        actor.require(Role::Viewer)?;
        validate::optional_reason("reason", reason)?;
        let r = self.end_request(actor, id, Ending::Cancel, reason).await?;
        self.approval_metrics().decided("cancelled");
        Ok(r)
    }

    async fn end_request(
        &self,
        actor: &Actor,
        id: Uuid,
        how: Ending,
        reason: Option<&str>,
    ) -> Result<ApprovalRequest> {
        let now = self.now();
        let (rec, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let row = pending_for_update(tx, id, now).await?;
                    let g = gates::get(tx, &row.gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", row.gate.clone()))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let (status, action, kind) = match how {
                        Ending::Reject => {
                            super::approval_rights::check_rejecter(actor, &row, &gate_def)?;
                            ("rejected", "approval.reject", "approval.rejected")
                        }
                        Ending::Cancel => {
                            super::approval_rights::check_canceller(actor, &row, &gate_def)?;
                            ("cancelled", "approval.cancel", "approval.cancelled")
                        }
                    };
                    let approvals: Vec<_> = db::approvals_of(tx, &[id])
                        .await?
                        .into_iter()
                        .map(|(_, a)| a)
                        .collect();
                    let decided = db::decide(tx, id, status, now, &actor.name, reason, None)
                        .await?
                        .ok_or_else(|| {
                            Error::conflict(format!("request {id} is no longer pending"))
                        })?;
                    let rec = decided.into_api(approvals);
                    crate::notify::enqueue(tx, &event(kind, &rec, &[], now)).await?;
                    let audit = Audit {
                        action,
                        target_kind: "gate",
                        target_name: rec.gate.clone(),
                        before: None,
                        after: to_json(&rec),
                        reason: reason.map(Into::into),
                    };
                    Ok(Written::changed(rec, audit, Affected::Clusters(Vec::new())))
                })
            })
            .await?;
        Ok(rec)
    }

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
        let approvals = db::approvals_of(&mut conn, &[id])
            .await?
            .into_iter()
            .map(|(_, a)| a)
            .collect();
        let rights = rights_of(&mut conn, actor, std::slice::from_ref(&row)).await?;
        let mut rec = row.into_api(approvals);
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
        let mut given: std::collections::HashMap<Uuid, Vec<fleetgate_api_types::ApprovalEntry>> =
            std::collections::HashMap::new();
        for (id, a) in db::approvals_of(&mut conn, &ids).await? {
            given.entry(id).or_default().push(a);
        }
        let rights = rights_of(&mut conn, actor, &rows).await?;
        Ok(super::page::from_rows(
            rows,
            limit,
            |r| (r.created_at, r.id),
            |r: RequestRow| {
                let mine = given.get(&r.id).cloned().unwrap_or_default();
                let you_may = rights.get(&r.id).copied();
                ApprovalRequest {
                    you_may,
                    ..r.into_api(mine)
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
        let mut given: std::collections::HashMap<Uuid, Vec<fleetgate_api_types::ApprovalEntry>> =
            std::collections::HashMap::new();
        for (id, a) in db::approvals_of(&mut conn, &ids).await? {
            given.entry(id).or_default().push(a);
        }
        Ok(rows
            .into_iter()
            .map(|r| {
                let mine = given.remove(&r.id).unwrap_or_default();
                (r.id.to_string(), r.into_api(mine))
            })
            .collect())
    }

    /// How many requests wait for approval (the metric).
    pub async fn pending_approvals(&self) -> Result<i64> {
        let mut conn = self.conn().await?;
        db::pending_count(&mut conn).await
    }
}

/// What `actor` may do with each pending request of `rows`, by id.
async fn rights_of(
    conn: &mut sqlx::PgConnection,
    actor: &Actor,
    rows: &[RequestRow],
) -> Result<std::collections::HashMap<Uuid, fleetgate_api_types::ApprovalRights>> {
    let mut out = std::collections::HashMap::new();
    if !rows.iter().any(|r| r.status == "pending") {
        return Ok(out);
    }
    let all = crate::db::clusters::scoped(conn).await?;
    let pending: Vec<Uuid> = rows
        .iter()
        .filter(|r| r.status == "pending")
        .map(|r| r.id)
        .collect();
    let approved: std::collections::HashSet<Uuid> =
        db::approved_by(conn, &pending, &person_key(&actor.identity))
            .await?
            .into_iter()
            .collect();
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
                super::approval_rights::rights(actor, r, gate_def, &all, approved.contains(&r.id)),
            );
        }
    }
    Ok(out)
}

/// The request, locked, if it is still pending and not past its expiry; 404 or 409.
async fn pending_for_update(
    tx: &mut WriteTx<'_>,
    id: Uuid,
    now: DateTime<Utc>,
) -> Result<RequestRow> {
    let row = db::get_for_update(tx, id)
        .await?
        .ok_or_else(|| Error::not_found("approval request", id.to_string()))?;
    if row.status != "pending" {
        return Err(Error::conflict(format!(
            "request {id} is {} already",
            row.status
        )));
    }
    if row.expires_at <= now {
        return Err(Error::conflict(format!(
            "request {id} expired at {}",
            row.expires_at.to_rfc3339()
        )));
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{Person, TokenIdentity};

    fn person(sub: &str, groups: &[&str]) -> Identity {
        Identity::Person(Person {
            issuer: "https://idp".into(),
            sub: sub.into(),
            name: Some(format!("{sub} name")),
            email: Some(format!("{sub}@example.com")),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        })
    }

    #[test]
    fn the_person_is_the_key_not_the_session() {
        assert_eq!(
            person_key(&person("alice", &[])),
            person_key(&person("alice", &["sre"]))
        );
        assert_ne!(
            person_key(&person("alice", &[])),
            person_key(&person("bob", &[]))
        );
        let token = Identity::Token(TokenIdentity {
            name: "alice".into(),
            role: Role::Operator,
            scope: Default::default(),
        });
        assert_ne!(person_key(&token), person_key(&person("alice", &[])));
    }

    #[test]
    fn from_matches_groups_users_and_tokens() {
        let a: fleetgate_policy::Approval = serde_json::from_value(serde_json::json!({
            "from": {"groups": ["sre"], "users": ["carol@example.com"], "tokens": ["ci"]}
        }))
        .unwrap();
        assert!(in_from(&a, &person("bob", &["sre"])));
        assert!(!in_from(&a, &person("bob", &["dev"])));
        assert!(in_from(&a, &person("carol", &[])));
        let tok = |n: &str| {
            Identity::Token(TokenIdentity {
                name: n.into(),
                role: Role::Operator,
                scope: Default::default(),
            })
        };
        assert!(in_from(&a, &tok("ci")));
        assert!(!in_from(&a, &tok("other")));
        let anyone: fleetgate_policy::Approval =
            serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(in_from(&anyone, &tok("other")));
    }
}
