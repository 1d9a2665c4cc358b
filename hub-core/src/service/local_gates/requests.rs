//! Open/close requests made inside a cluster (annotations on a Gate object),
//! reported by that cluster's spoke after it already applied them: recorded as
//! an override of that one cluster, audited with the cluster and the
//! Kubernetes field manager as the actor, so they show in the override list,
//! status and dashboard and an admin can cancel them like any override; its
//! `override.created` and the `gate.closed`/`gate.opened` it caused (cause
//! `inClusterRequest`) go to the notification outbox in the same write.

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, GateState, MAX_REQUEST_WINDOW};
use uuid::Uuid;

use crate::db::clusters::Scoped;
use crate::db::overrides;
use crate::db::revision::Affected;
use crate::db::{clusters, gates};
use crate::notify;
use crate::service::fleet::stored_gate;
use crate::service::types::OverrideRecord;
use crate::service::{Actor, Audit, Role, Service, WriteTx, Written, to_json};
use crate::{Error, Result};

/// How far ahead of the hub's clock a request may be stamped (clock skew).
const MAX_AHEAD: chrono::Duration = chrono::Duration::minutes(5);

/// A request as the spoke reports it.
#[derive(Debug, Clone)]
pub struct LocalRequest {
    pub gate: String,
    pub state: GateState,
    pub requested_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub reason: String,
    pub requested_by: String,
}

/// The actor a request is recorded under: who (the field manager that set the
/// annotation, when known) and from which cluster.
pub fn local_actor(cluster: &str, requested_by: &str) -> String {
    let who = if requested_by.trim().is_empty() {
        "someone"
    } else {
        requested_by.trim()
    };
    format!("{who}@cluster/{cluster}")
}

/// Enqueues the request's `override.created` and the `gate.opened` /
/// `gate.closed` it caused on `cluster` (cause `inClusterRequest`, at the
/// request's instant: the key a scan passing that instant would use too).
async fn announce(
    tx: &mut WriteTx<'_>,
    gate: &fleetgate_policy::Gate,
    rec: &OverrideRecord,
    cluster: &str,
    now: DateTime<Utc>,
) -> Result<()> {
    let all = tx.scoped_clusters().await?;
    let touched: Vec<&Scoped> = all.iter().filter(|c| c.name == cluster).collect();
    crate::notify::enqueue(tx, &notify::overrides::created(rec, &[cluster.to_owned()])).await?;
    let after = overrides::live_for_gates(tx, std::slice::from_ref(&rec.gate), now).await?;
    let before: Vec<OverrideRecord> = after.iter().filter(|o| o.id != rec.id).cloned().collect();
    let freezes = crate::db::freezes::live(tx, now).await?;
    let mut changes = notify::overrides::state_changes(
        gate,
        &touched,
        &before,
        &after,
        &freezes,
        now,
        notify::Cause::InClusterRequest,
        &rec.actor,
    );
    for t in &mut changes {
        t.at = rec.starts_at;
    }
    notify::enqueue_transitions(tx, Some(gate), changes, None).await?;
    Ok(())
}

impl Service {
    /// Records `req` from `cluster`'s spoke as an override of that cluster only.
    /// `Ok(None)`: already recorded (a resend) or already over. Refused
    /// (INVALID_ARGUMENT / not found) when the gate does not govern the cluster
    /// or does not allow such requests from clusters.
    pub async fn record_local_request(
        &self,
        cluster: &str,
        req: LocalRequest,
    ) -> Result<Option<OverrideRecord>> {
        let now = self.now();
        if req.requested_at > now + MAX_AHEAD {
            return Err(Error::invalid("localRequest.requestedAt", "in the future"));
        }
        if req.expires_at <= req.requested_at
            || req.expires_at - req.requested_at > MAX_REQUEST_WINDOW
        {
            return Err(Error::invalid(
                "localRequest.expiresAt",
                "must be after requestedAt, by at most the longest window (168h)",
            ));
        }
        if req.expires_at <= now {
            return Ok(None);
        }
        if req.reason.chars().count() > 1000 {
            return Err(Error::invalid(
                "localRequest.reason",
                "longer than 1000 characters",
            ));
        }
        let actor_name = local_actor(cluster, &req.requested_by);
        let actor = Actor::new(actor_name.clone(), Role::Operator);
        let req = &req;
        let (rec, _) = self
            .write(&actor, now, |tx| {
                let actor_name = actor_name.clone();
                Box::pin(async move {
                    let g = gates::get_for_update(tx, &req.gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", &req.gate))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let open = req.state == GateState::Open;
                    if !gate_def.spec.allows_local_request(open, true) {
                        return Err(Error::invalid(
                            "localRequest.state",
                            format!(
                                "gate '{}' does not allow {} requests from clusters (spec.localRequests)",
                                req.gate,
                                if open { "open" } else { "close" }
                            ),
                        ));
                    }
                    // A request cannot be approved offline: the spoke refuses open
                    // requests on such a gate; one that arrives anyway (an older spoke)
                    // is refused here too, so it never becomes an override.
                    if gate_def.spec.needs_approval(req.state) {
                        return Err(Error::invalid(
                            "localRequest.state",
                            format!(
                                "gate '{}' requires approval for {} overrides (spec.approval); request it at the hub",
                                req.gate,
                                req.state.as_str()
                            ),
                        ));
                    }
                    let in_scope = clusters::get(tx, cluster, now)
                        .await?
                        .is_some_and(|c| {
                            crate::service::fleet::reaches(
                                &gate_def,
                                g.writer_scope.as_ref().map(|w| w.0.as_slice()),
                                &c,
                            )
                        });
                    if !in_scope {
                        return Err(Error::invalid(
                            "localRequest.gate",
                            format!("gate '{}' does not apply to cluster '{cluster}'", req.gate),
                        ));
                    }
                    let state = req.state.as_str();
                    if overrides::find_recorded(tx, &req.gate, state, req.requested_at, &actor_name)
                        .await?
                        .is_some()
                    {
                        return Ok(Written::unchanged(None));
                    }
                    let reason = if req.reason.trim().is_empty() {
                        "requested in the cluster".to_owned()
                    } else {
                        req.reason.clone()
                    };
                    let row = overrides::insert(
                        tx,
                        &OverrideRecord {
                            id: Uuid::new_v4(),
                            gate: req.gate.clone(),
                            clusters: Some(ClusterScope {
                                names: vec![cluster.to_owned()],
                                selector: None,
                            }),
                            state: state.to_owned(),
                            starts_at: req.requested_at,
                            expires_at: Some(req.expires_at),
                            actor: actor_name.clone(),
                            reason: reason.clone(),
                            created_at: req.requested_at,
                            cancelled_at: None,
                            cancelled_by: None,
                            requested_in: Some(cluster.to_owned()),
                            requested_by: Some(req.requested_by.trim().to_owned())
                                .filter(|who| !who.is_empty()),
                            narrowed: None,
                            emergency: false,
                            approval_request: None,
                        },
                    )
                    .await?;
                    let rec = row;
                    announce(tx, &gate_def, &rec, cluster, now).await?;
                    let audit = Audit {
                        action: if open { "override.open" } else { "override.close" },
                        target_kind: "gate",
                        target_name: req.gate.clone(),
                        before: None,
                        after: to_json(&rec),
                        reason: Some(format!("{reason} (requested in cluster {cluster})")),
                    };
                    Ok(Written::changed(
                        Some(rec),
                        audit,
                        Affected::Clusters(vec![cluster.to_owned()]),
                    ))
                })
            })
            .await?;
        Ok(rec)
    }
}
