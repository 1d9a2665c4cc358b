//! Who may decide a pending approval request: the checks `approve_request` and
//! `reject_request` make, and the same checks as flags for the caller
//! ([`ApprovalRights`] on each pending request it lists), so the dashboard shows
//! Approve/Reject only to those who may and Cancel to the requester. Decided here
//! once; handlers and pages never decide.

use fleetgate_api_types::ApprovalRights;
use fleetgate_policy::Gate;

use super::requests::{in_from, person_key};
use crate::db::approvals::RequestRow;
use crate::db::clusters::Scoped;
use crate::service::{Actor, ClusterRef, GateRef, Role};
use crate::{Error, Result};

/// `Ok` if `actor` may approve `row` (requester ≠ approver on the person, in
/// `spec.approval.from`, operator over the gate and every cluster `covered`).
pub(crate) fn check_approver(
    actor: &Actor,
    row: &RequestRow,
    gate_def: &Gate,
    covered: &[Scoped],
) -> Result<()> {
    if person_key(&actor.identity) == row.requester_key {
        return Err(Error::Forbidden(format!(
            "{} '{}' requested this override and cannot approve it: approval needs another person",
            actor.identity.kind(),
            actor.name
        )));
    }
    if let Some(approval) = &gate_def.spec.approval
        && !in_from(approval, &actor.identity)
    {
        return Err(Error::Forbidden(format!(
            "{} '{}' is not among gate '{}' approvers (spec.approval.from)",
            actor.identity.kind(),
            actor.name,
            row.gate
        )));
    }
    let gate_ref = GateRef {
        name: &row.gate,
        labels: &gate_def.metadata.labels,
    };
    if covered.is_empty() {
        actor.clusters_for(Role::Operator, gate_ref)?;
    }
    for c in covered {
        actor.require_on(
            Role::Operator,
            gate_ref,
            ClusterRef {
                name: &c.name,
                labels: &c.labels,
            },
        )?;
    }
    Ok(())
}

/// `Ok` if `actor` may reject `row`: operator over the gate, and in `from` (or
/// the requester, who may also withdraw).
pub(crate) fn check_rejecter(actor: &Actor, row: &RequestRow, gate_def: &Gate) -> Result<()> {
    actor.require(Role::Operator)?;
    actor.clusters_for(
        Role::Operator,
        GateRef {
            name: &row.gate,
            labels: &gate_def.metadata.labels,
        },
    )?;
    if let Some(approval) = &gate_def.spec.approval
        && !in_from(approval, &actor.identity)
        && person_key(&actor.identity) != row.requester_key
    {
        return Err(Error::Forbidden(format!(
            "{} '{}' is not among gate '{}' approvers (spec.approval.from)",
            actor.identity.kind(),
            actor.name,
            row.gate
        )));
    }
    Ok(())
}

/// `Ok` if `actor` may withdraw `row`: its requester, or an admin over the gate.
pub(crate) fn check_canceller(actor: &Actor, row: &RequestRow, gate_def: &Gate) -> Result<()> {
    if person_key(&actor.identity) == row.requester_key {
        return Ok(());
    }
    actor
        .clusters_for(
            Role::Admin,
            GateRef {
                name: &row.gate,
                labels: &gate_def.metadata.labels,
            },
        )
        .map(|_| ())
        .map_err(|_| {
            Error::Forbidden(format!(
                "only the requester ({}) or an admin may cancel request {}; approvers reject it",
                row.requester, row.id
            ))
        })
}

/// What `actor` may do with `row` now (a pending request; `all` the registered
/// clusters; `approved_already` if this person has approved it, so approving
/// again would be refused with 409 at the write).
pub(crate) fn rights(
    actor: &Actor,
    row: &RequestRow,
    gate_def: &Gate,
    all: &[Scoped],
    approved_already: bool,
) -> ApprovalRights {
    let covered: Vec<Scoped> = all
        .iter()
        .filter(|c| gate_def.spec.clusters.matches(&c.name, &c.labels))
        .filter(|c| {
            row.scope
                .as_ref()
                .is_none_or(|s| s.matches(&c.name, &c.labels))
        })
        .cloned()
        .collect();
    ApprovalRights {
        approve: !approved_already
            && actor.require(Role::Operator).is_ok()
            && check_approver(actor, row, gate_def, &covered).is_ok(),
        reject: check_rejecter(actor, row, gate_def).is_ok(),
        cancel: check_canceller(actor, row, gate_def).is_ok(),
    }
}
