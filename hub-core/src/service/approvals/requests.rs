//! Two-person approval of overrides (a gate's `spec.approval`): who a request is from
//! and who may approve it ([`person_key`], `in_from`), and the pending request an
//! override through such a gate becomes. A request lives in `approval_requests` until
//! the last approval turns it into an override in the same transaction, so nothing
//! pending ever reaches a spoke. Deciding is in `approval_decisions`, reading in
//! `approval_queries`, expiry in `approval_expiry`.

use chrono::{DateTime, Utc};
use fleetgate_policy::{Gate, GateState};
use uuid::Uuid;

use crate::db::approvals::{self as db, ApprovalRequest, RequestRow};
use crate::db::revision::Affected;
use crate::notify::NewEvent;
use crate::service::overrides::scope::covered_clusters;
use crate::service::types::OverrideRequest;
use crate::service::{Actor, Audit, Identity, WriteTx, Written, to_json};
use crate::{Error, Result};

pub use fleetgate_api_types::OverrideOutcome;

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
pub(crate) fn in_from(approval: &fleetgate_policy::Approval, identity: &Identity) -> bool {
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
pub(crate) struct NewRequest<'a> {
    pub state: GateState,
    pub scope: Option<fleetgate_policy::ClusterScope>,
    pub req: &'a OverrideRequest,
    pub admission: &'a [fleetgate_api_types::admission::AdmissionOutcome],
}

/// Inserts the pending request for an override through a gate with approval (in the
/// caller's write, the gate locked). Checks what the override would be checked on now
/// (clusters, times), so approval never fails on the request's own input.
pub(crate) async fn insert_pending(
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
        after: crate::service::admission::with_outcomes(to_json(&rec), admission),
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
pub(crate) fn event(
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
#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::{Person, Role, TokenIdentity};

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
