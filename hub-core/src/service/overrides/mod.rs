//! Override operations: open or close a gate for some or all of its clusters
//! for a while, list live overrides, cancel. Overrides expire by themselves:
//! an expired one is simply no longer selected (no background job).

mod insert;
pub mod scope;

pub use insert::MAX_OVERRIDE_DAYS;
use insert::override_action;
pub(super) use insert::{NewOverride, OverrideTimes, insert_override};

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, GateState};
use serde::Deserialize;
use uuid::Uuid;

use super::fleet::stored_gate;
use super::types::{OverrideClusters, OverrideRecord, OverrideRequest};
use super::{Actor, Audit, Clusters, GateRef, Page, PageRequest, Role, Service, Written, to_json};
use crate::db::clusters::Scoped;
use crate::db::gates;
use crate::db::overrides::{self, OverrideFilter};
use crate::db::revision::Affected;
use crate::{Error, Result, validate};
pub use fleetgate_api_types::OverrideOutcome;

/// Override list query (`GET /api/v1/overrides?gate=&all=`).
#[derive(Debug, Clone, Default, Deserialize, utoipa::IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct OverrideQuery {
    /// Only this gate's overrides.
    pub gate: Option<String>,
    /// Include cancelled and expired overrides (default: only live ones,
    /// i.e. active now or starting later).
    pub all: Option<bool>,
    /// Page size, 1..=1000 (default 100).
    pub limit: Option<u32>,
    /// The `nextCursor` of the previous page.
    pub cursor: Option<String>,
}

impl Service {
    /// Opens or closes `gate` by override (operator), for callers that expect the override
    /// itself (gRPC `CreateOverride`, tests): where the gate's `spec.approval` would make
    /// the override wait, 409 and nothing written; `RequestOverride` and REST ask for
    /// approval instead ([`Service::request_override`]).
    pub async fn create_override(
        &self,
        actor: &Actor,
        gate: &str,
        state: GateState,
        req: OverrideRequest,
    ) -> Result<OverrideRecord> {
        match self
            .override_or_request(actor, gate, state, req, false)
            .await?
        {
            OverrideOutcome::Created(rec) => Ok(*rec),
            OverrideOutcome::Pending(p) => Err(Error::Internal(format!(
                "request {} made where none was allowed",
                p.id
            ))),
        }
    }

    /// Opens or closes `gate` by override (operator). Through a gate whose
    /// `spec.approval` covers `state` the override waits for approvers
    /// ([`OverrideOutcome::Pending`]) unless an admin declares an emergency.
    pub async fn request_override(
        &self,
        actor: &Actor,
        gate: &str,
        state: GateState,
        req: OverrideRequest,
    ) -> Result<OverrideOutcome> {
        self.override_or_request(actor, gate, state, req, true)
            .await
    }

    async fn override_or_request(
        &self,
        actor: &Actor,
        gate: &str,
        state: GateState,
        req: OverrideRequest,
        may_wait: bool,
    ) -> Result<OverrideOutcome> {
        actor.require(Role::Operator)?;
        validate::reason("reason", &req.reason)?;
        if req.emergency {
            actor.require(Role::Admin).map_err(|_| {
                Error::Forbidden(format!(
                    "{} '{}' may not declare an emergency: break-glass needs the admin role",
                    actor.identity.kind(),
                    actor.name
                ))
            })?;
        }
        if let Some(t) = &req.ticket {
            validate::ticket("ticket", t)?;
        }
        let now = self.now();
        let times = OverrideTimes::of(&req, now)?;
        let requested_scope = req.clusters.as_ref().map(|c| ClusterScope {
            names: c.names.clone(),
            selector: c.selector.clone(),
        });
        // Authorization and validation before admission: a refused caller or a
        // scope outside the caller's clusters never reaches a webhook. The write
        // below checks again under the gate's lock.
        {
            let mut conn = self.conn().await?;
            let g = gates::get(&mut conn, gate)
                .await?
                .ok_or_else(|| Error::not_found("gate", gate))?;
            let gate_def = stored_gate(&g.manifest)?;
            let permitted = permitted(actor, gate, &gate_def, &req)?;
            // The fleet's clusters only where this check looks at them: a requested
            // cluster list, or a caller whose grant is limited to some clusters (the
            // write below reads them in any case, for the clusters the override touches).
            let all = if req.clusters.is_some() || matches!(permitted, Clusters::Within(_)) {
                crate::db::clusters::scoped_cached(&mut conn, &self.scoped).await?
            } else {
                std::sync::Arc::default()
            };
            override_scope(&permitted, gate, &gate_def, state, &req, &all, may_wait)?;
        }
        let admission = self
            .admit(
                actor,
                super::admission::Admit {
                    operation: "override",
                    gate,
                    scope: requested_scope.as_ref(),
                    state,
                    duration: req.duration.as_deref(),
                    reason: &req.reason,
                    requester: &actor.name,
                    approver: None,
                    ticket: req.ticket.as_deref(),
                    emergency: req.emergency,
                },
            )
            .await?;
        let admission = &admission;
        let req = &req;
        let (outcome, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    // Lock the gate so a concurrent replace/delete cannot slip between
                    // the scope check and the insert.
                    let g = gates::get_for_update(tx, gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", gate))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let all = tx.scoped_clusters().await?;
                    let permitted = permitted(actor, gate, &gate_def, req)?;
                    let (scope, narrowed) =
                        override_scope(&permitted, gate, &gate_def, state, req, &all, may_wait)?;
                    if gate_def.spec.needs_approval(state) && !req.emergency {
                        let written = super::approvals::requests::insert_pending(
                            tx,
                            actor,
                            &gate_def,
                            super::approvals::requests::NewRequest {
                                state,
                                scope,
                                req,
                                admission,
                            },
                            now,
                        )
                        .await?;
                        return Ok(written);
                    }
                    let (rec, affected) = insert_override(
                        tx,
                        &gate_def,
                        &all,
                        NewOverride {
                            state,
                            scope,
                            times,
                            actor: &actor.name,
                            reason: &req.reason,
                            emergency: req.emergency,
                            approval_request: None,
                            now,
                        },
                    )
                    .await?;
                    let rec = OverrideRecord { narrowed, ..rec };
                    let audit = Audit {
                        action: override_action(state, req.emergency),
                        target_kind: "gate",
                        target_name: gate.into(),
                        before: None,
                        after: super::admission::with_outcomes(to_json(&rec), admission),
                        reason: Some(req.reason.clone()),
                    };
                    Ok(Written::changed(
                        OverrideOutcome::Created(Box::new(rec)),
                        audit,
                        affected,
                    ))
                })
            })
            .await?;
        if let OverrideOutcome::Pending(_) = &outcome {
            self.approval_metrics().decided("requested");
        }
        if let OverrideOutcome::Created(rec) = &outcome
            && rec.emergency
        {
            tracing::warn!(gate, actor = %actor.name, id = %rec.id, "break-glass override: approval skipped");
        }
        Ok(outcome)
    }

    /// Cancels a live override (operator); 409 if already cancelled or expired.
    pub async fn cancel_override(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<OverrideRecord> {
        actor.require(Role::Operator)?;
        validate::optional_reason("reason", reason)?;
        let now = self.now();
        let (rec, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = overrides::get_for_update(tx, id)
                        .await?
                        .ok_or_else(|| Error::not_found("override", id.to_string()))?;
                    if old.cancelled_at.is_some() {
                        return Err(Error::conflict(format!(
                            "override {id} is already cancelled"
                        )));
                    }
                    if old.expires_at.is_some_and(|e| e <= now) {
                        return Err(Error::conflict(format!(
                            "override {id} has already expired"
                        )));
                    }
                    let g = gates::get(tx, &old.gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", old.gate.clone()))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let all = tx.scoped_clusters().await?;
                    let gate_ref = GateRef {
                        name: &old.gate,
                        labels: &gate_def.metadata.labels,
                    };
                    let permitted = actor.clusters_for(Role::Operator, gate_ref)?;
                    let covered: Vec<&crate::db::clusters::Scoped> = all
                        .iter()
                        .filter(|c| super::fleet::applies(&gate_def, *c, &old))
                        .collect();
                    scope::check_cancel(&permitted, &covered)?;
                    let affected: Vec<String> = covered.iter().map(|c| c.name.clone()).collect();
                    let before_live =
                        overrides::live_for_gates(tx, std::slice::from_ref(&old.gate), now).await?;
                    let row = overrides::cancel(tx, id, now, &actor.name).await?;
                    let after_live: Vec<OverrideRecord> =
                        before_live.iter().filter(|o| o.id != id).cloned().collect();
                    crate::notify::enqueue(
                        tx,
                        &crate::notify::overrides::ended(&row, now, Some(&actor.name)),
                    )
                    .await?;
                    let freezes = crate::db::freezes::live(tx, now).await?;
                    let changes = crate::notify::overrides::state_changes(
                        &gate_def,
                        &covered,
                        &before_live,
                        &after_live,
                        &freezes,
                        now,
                        crate::notify::Cause::Override,
                        &actor.name,
                    );
                    crate::notify::enqueue_transitions_among(
                        tx,
                        Some(&gate_def),
                        changes,
                        None,
                        Some(all.as_slice()),
                    )
                    .await?;
                    let before = to_json(&old);
                    let rec = row;
                    let audit = Audit {
                        action: "override.cancel",
                        target_kind: "gate",
                        target_name: rec.gate.clone(),
                        before,
                        after: to_json(&rec),
                        reason: reason.map(Into::into),
                    };
                    let affected = Affected::among(affected, all.len());
                    Ok(Written::changed(rec, audit, affected))
                })
            })
            .await?;
        Ok(rec)
    }

    /// Lists overrides, newest first (viewer): live ones unless `all`.
    pub async fn list_overrides(
        &self,
        actor: &Actor,
        q: &OverrideQuery,
    ) -> Result<Page<OverrideRecord>> {
        actor.require(Role::Viewer)?;
        let page = PageRequest {
            limit: q.limit,
            cursor: q.cursor.clone(),
        };
        let limit = page.limit()?;
        let after: Option<(DateTime<Utc>, Uuid)> = page.key()?;
        let filter = OverrideFilter {
            gate: q.gate.clone(),
            live_at: (!q.all.unwrap_or(false)).then(|| self.now()),
        };
        let mut conn = self.conn().await?;
        let Some(visible) = self.visible_gates(&mut conn, actor).await? else {
            let rows = overrides::list(&mut conn, &filter, after, i64::from(limit) + 1).await?;
            return Ok(super::page::from_rows(
                rows,
                limit,
                |r| (r.created_at, r.id),
                Into::into,
            ));
        };
        // Scoped: keep reading pages until a page's worth is in scope.
        let mut after = after;
        let mut kept = Vec::new();
        loop {
            let rows = overrides::list(&mut conn, &filter, after, i64::from(limit) + 1).await?;
            let last = rows.len() <= limit as usize;
            for r in rows {
                after = Some((r.created_at, r.id));
                if visible.contains(&r.gate) {
                    kept.push(r);
                }
            }
            if last || kept.len() > limit as usize {
                break;
            }
        }
        kept.truncate(limit as usize + 1);
        Ok(super::page::from_rows(
            kept,
            limit,
            |r| (r.created_at, r.id),
            Into::into,
        ))
    }

    /// The names of the gates `actor` may see; `None` when it sees all.
    pub(crate) async fn visible_gates(
        &self,
        conn: &mut sqlx::PgConnection,
        actor: &Actor,
    ) -> Result<Option<std::collections::HashSet<String>>> {
        let Some(scope) = actor.read_scope() else {
            return Ok(None);
        };
        Ok(Some(
            gates::all(conn)
                .await?
                .into_iter()
                .filter(|g| scope.gate(&g.name, &super::gates::manifest_labels(&g.manifest)))
                .map(|g| g.name)
                .collect(),
        ))
    }
}

/// The clusters `actor` may override `gate` on: as an admin for an emergency,
/// else as an operator.
fn permitted<'a>(
    actor: &'a Actor,
    gate: &str,
    gate_def: &fleetgate_policy::Gate,
    req: &OverrideRequest,
) -> Result<Clusters<'a>> {
    let gate_ref = GateRef {
        name: gate,
        labels: &gate_def.metadata.labels,
    };
    let role = if req.emergency {
        Role::Admin
    } else {
        Role::Operator
    };
    actor.clusters_for(role, gate_ref)
}

/// The scope an override of `gate` gets (requested, narrowed to the caller's
/// clusters) and the narrowing note; 403 outside the caller's clusters, 422
/// for a bad scope, 409 where the gate needs approval and the caller cannot wait.
fn override_scope(
    permitted: &Clusters<'_>,
    gate: &str,
    gate_def: &fleetgate_policy::Gate,
    state: GateState,
    req: &OverrideRequest,
    all: &[Scoped],
    may_wait: bool,
) -> Result<(Option<ClusterScope>, Option<String>)> {
    let requested = match &req.clusters {
        None => None,
        Some(c) => Some(check_scope(c, &gate_def.spec.clusters, all)?),
    };
    let scoped = scope::narrow(requested, permitted, gate_def, all)?;
    if gate_def.spec.needs_approval(state) && !req.emergency && !may_wait {
        return Err(Error::conflict(format!(
            "gate '{gate}' requires approval for {state} overrides (spec.approval): request one with RequestOverride (or POST /api/v1/gates/{gate}/{}), or declare an emergency (admins)",
            if state == GateState::Open {
                "open"
            } else {
                "close"
            }
        )));
    }
    Ok(scoped)
}

fn check_scope(
    c: &OverrideClusters,
    gate_scope: &ClusterScope,
    all: &[Scoped],
) -> Result<ClusterScope> {
    if c.names.is_empty() && c.selector.is_none() {
        return Err(Error::invalid(
            "clusters",
            "give names and/or a selector, or leave clusters out for the whole gate scope",
        ));
    }
    for (i, n) in c.names.iter().enumerate() {
        let field = format!("clusters.names[{i}]");
        validate::dns_label(&field, n)?;
        let Some(row) = all.iter().find(|r| &r.name == n) else {
            return Err(Error::invalid(
                field,
                format!("cluster '{n}' is not registered"),
            ));
        };
        if !gate_scope.matches(&row.name, &row.labels) {
            return Err(Error::invalid(
                field,
                format!("cluster '{n}' is not in the gate's scope"),
            ));
        }
    }
    Ok(ClusterScope {
        names: c.names.clone(),
        selector: c.selector.clone(),
    })
}
