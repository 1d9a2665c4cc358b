//! Override operations: open or close a gate for some or all of its clusters
//! for a while, list live overrides, cancel. Overrides expire by themselves:
//! an expired one is simply no longer selected (no background job).

use chrono::{DateTime, Duration, Utc};
use fleetgate_policy::{ClusterScope, GateState};
use serde::Deserialize;
use uuid::Uuid;

use super::fleet::stored_gate;
use super::gates::clusters_in;
use super::types::{OverrideClusters, OverrideRecord, OverrideRequest};
use super::{Actor, Audit, GateRef, Page, PageRequest, Role, Service, Written, to_json};
use crate::db::clusters::Scoped;
use crate::db::gates;
use crate::db::overrides::{self, OverrideFilter};
use crate::db::revision::Affected;
use crate::{Error, Result, validate};

/// Longest override duration.
pub const MAX_OVERRIDE_DAYS: i64 = 366;

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
    /// Opens or closes `gate` by override (operator).
    pub async fn create_override(
        &self,
        actor: &Actor,
        gate: &str,
        state: GateState,
        req: OverrideRequest,
    ) -> Result<OverrideRecord> {
        actor.require(Role::Operator)?;
        validate::reason("reason", &req.reason)?;
        let now = self.now();
        let starts_at = req.starts_at.unwrap_or(now);
        if starts_at > now + Duration::days(MAX_OVERRIDE_DAYS) {
            return Err(Error::invalid(
                "startsAt",
                format!("more than {MAX_OVERRIDE_DAYS} days ahead"),
            ));
        }
        let expires_at = match &req.duration {
            None => None,
            Some(d) => {
                let d = fleetgate_policy::parse_duration(d)
                    .map_err(|e| Error::invalid("for", e.message))?;
                if d > Duration::days(MAX_OVERRIDE_DAYS) {
                    return Err(Error::invalid(
                        "for",
                        format!("longer than {MAX_OVERRIDE_DAYS} days"),
                    ));
                }
                Some(starts_at + d)
            }
        };
        if expires_at.is_some_and(|e| e <= now) {
            return Err(Error::invalid(
                "startsAt",
                "the override would already be over",
            ));
        }
        let req = &req;
        let (rec, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    // Lock the gate so a concurrent replace/delete cannot slip between
                    // the scope check and the insert.
                    let g = gates::get_for_update(tx, gate)
                        .await?
                        .ok_or_else(|| Error::not_found("gate", gate))?;
                    let gate_def = stored_gate(&g.manifest)?;
                    let all = tx.scoped_clusters().await?;
                    let gate_ref = GateRef {
                        name: gate,
                        labels: &gate_def.metadata.labels,
                    };
                    let permitted = actor.clusters_for(Role::Operator, gate_ref)?;
                    let scope = match &req.clusters {
                        None => None,
                        Some(c) => Some(check_scope(c, &gate_def.spec.clusters, &all)?),
                    };
                    let (scope, narrowed) =
                        super::override_scope::narrow(scope, &permitted, &gate_def, &all)?;
                    let in_gate = clusters_in(&all, &[&gate_def.spec.clusters]);
                    let affected: Vec<String> = match &scope {
                        None => in_gate,
                        Some(s) => {
                            let narrowed = clusters_in(&all, &[s]);
                            in_gate
                                .into_iter()
                                .filter(|c| narrowed.contains(c))
                                .collect()
                        }
                    };
                    let row = overrides::insert(
                        tx,
                        &OverrideRecord {
                            id: Uuid::new_v4(),
                            gate: gate.to_string(),
                            clusters: scope,
                            state: state.as_str().to_string(),
                            starts_at,
                            expires_at,
                            actor: actor.name.clone(),
                            reason: req.reason.clone(),
                            created_at: now,
                            cancelled_at: None,
                            cancelled_by: None,
                            requested_in: None,
                            requested_by: None,
                            narrowed: None,
                        },
                    )
                    .await?;
                    let rec = OverrideRecord { narrowed, ..row };
                    // Notifications, in this transaction: the override, and
                    // the clusters whose state it changes now.
                    let live =
                        overrides::live_for_gates(tx, std::slice::from_ref(&rec.gate), now).await?;
                    let before: Vec<OverrideRecord> =
                        live.iter().filter(|o| o.id != rec.id).cloned().collect();
                    let touched: Vec<&Scoped> =
                        all.iter().filter(|c| affected.contains(&c.name)).collect();
                    crate::notify::enqueue(tx, &crate::notify::overrides::created(&rec, &affected))
                        .await?;
                    for t in crate::notify::overrides::state_changes(
                        &gate_def,
                        &touched,
                        &before,
                        &live,
                        now,
                        crate::notify::Cause::Override,
                        &actor.name,
                    ) {
                        crate::notify::enqueue(tx, &t.into_event()).await?;
                    }
                    let action = if state == GateState::Open {
                        "override.open"
                    } else {
                        "override.close"
                    };
                    let audit = Audit {
                        action,
                        target_kind: "gate",
                        target_name: gate.into(),
                        before: None,
                        after: to_json(&rec),
                        reason: Some(req.reason.clone()),
                    };
                    let affected = Affected::among(affected, all.len());
                    Ok(Written::changed(rec, audit, affected))
                })
            })
            .await?;
        Ok(rec)
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
                    super::override_scope::check_cancel(&permitted, &covered)?;
                    let affected: Vec<String> = covered.iter().map(|c| c.name.clone()).collect();
                    let before_live =
                        overrides::live_for_gates(tx, std::slice::from_ref(&old.gate), now).await?;
                    let row = overrides::cancel(tx, id, now, &actor.name).await?;
                    let after_live: Vec<OverrideRecord> =
                        before_live.iter().filter(|o| o.id != id).cloned().collect();
                    let touched: Vec<&Scoped> =
                        all.iter().filter(|c| affected.contains(&c.name)).collect();
                    crate::notify::enqueue(
                        tx,
                        &crate::notify::overrides::ended(&row, now, Some(&actor.name)),
                    )
                    .await?;
                    for t in crate::notify::overrides::state_changes(
                        &gate_def,
                        &touched,
                        &before_live,
                        &after_live,
                        now,
                        crate::notify::Cause::Override,
                        &actor.name,
                    ) {
                        crate::notify::enqueue(tx, &t.into_event()).await?;
                    }
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

/// Validates an override's cluster selection against the registered clusters
/// and the gate's scope.
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
