//! Deciding a pending approval request: approve (the approval that makes the count
//! creates the override in the same transaction), reject, and the requester's cancel.
//! Who may do which is checked in `approval_rights`; every decision is audited and
//! sent as an `approval.*` event.

use chrono::{DateTime, Utc};
use fleetgate_policy::GateState;
use uuid::Uuid;

use super::requests::{event, person_key};
use crate::db::approvals::{self as db, ApprovalRequest, RequestRow};
use crate::db::gates;
use crate::db::revision::Affected;
use crate::service::fleet::stored_gate;
use crate::service::overrides::scope::covered_in;
use crate::service::overrides::{NewOverride, OverrideTimes, insert_override};
use crate::service::{Actor, Audit, Role, Service, WriteTx, Written, to_json};
use crate::{Error, Result, validate};

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
        // Authorization before admission: an approver the hub refuses (the
        // requester, someone outside `from` or the clusters) never reaches a
        // webhook. The write below checks again under the request's lock.
        let admission = {
            let mut conn = self.conn().await?;
            match db::get(&mut conn, id).await? {
                Some(r) if r.status == "pending" && r.expires_at > self.now() => {
                    let g = gates::get(&mut conn, &r.gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", r.gate.clone()))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let all = crate::db::clusters::scoped_cached(&mut conn, &self.scoped).await?;
                    let covered = covered_in(&all, &gate_def, r.scope.as_ref());
                    super::rights::check_approver(actor, &r, &gate_def, &covered)?;
                    let key = person_key(&actor.identity);
                    if db::approvals_of(&mut conn, &[id])
                        .await?
                        .approved_by(id, &key)
                    {
                        return Err(already_approved(actor, id));
                    }
                    drop(conn);
                    let state: GateState = r.state.parse().unwrap_or(GateState::Open);
                    self.admit(
                        actor,
                        crate::service::admission::Admit {
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
                    let all = tx.scoped_clusters().await?;
                    let covered = covered_in(&all, &gate_def, row.scope.as_ref());
                    super::rights::check_approver(actor, &row, &gate_def, &covered)?;
                    if !db::add_approval(tx, id, &key, &actor.name, reason, now).await? {
                        return Err(already_approved(actor, id));
                    }
                    let approvals = db::approvals_of(tx, &[id]).await?.entries(id);
                    let names: Vec<String> = covered.iter().map(|c| c.name.clone()).collect();
                    if approvals.len() < usize::try_from(row.required).unwrap_or(1) {
                        let rec = row.into_api(approvals);
                        let audit = Audit {
                            action: "approval.approve",
                            target_kind: "gate",
                            target_name: rec.gate.clone(),
                            before: None,
                            after: crate::service::admission::with_outcomes(
                                to_json(&rec),
                                admission,
                            ),
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
                        &all,
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
                        after: crate::service::admission::with_outcomes(
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
                            super::rights::check_rejecter(actor, &row, &gate_def)?;
                            ("rejected", "approval.reject", "approval.rejected")
                        }
                        Ending::Cancel => {
                            super::rights::check_canceller(actor, &row, &gate_def)?;
                            ("cancelled", "approval.cancel", "approval.cancelled")
                        }
                    };
                    let approvals = db::approvals_of(tx, &[id]).await?.entries(id);
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
}

fn already_approved(actor: &Actor, id: Uuid) -> Error {
    Error::conflict(format!(
        "{} '{}' has already approved request {id}",
        actor.identity.kind(),
        actor.name
    ))
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
