//! Rollout operations: the driver's step of every rollout gate (run by
//! [`driver::run`] on every replica; one runs each gate's step at a time, under a
//! transaction-scoped advisory lock), an operator's pause/resume/abort/release-next, and
//! the rollout's status.

mod cluster;
pub mod command;
pub mod drive;
pub mod driver;
pub mod status;

use chrono::{DateTime, Utc};

use super::{Actor, Audit, Role, Service, WriteTx, Written};
use crate::db::{self, rollouts};
use crate::rollout::Event;
use crate::{Error, Result};
pub use command::Command;
use drive::{DRIVER_ACTOR, Stepped, audit_all_but_last, step_gate};
pub use status::{RolloutClusterStatus, RolloutStatus, WaveStatus};

impl Service {
    /// One step of every rollout gate at the service clock's now; the events of the steps
    /// this replica ran (gates another transaction was stepping are skipped).
    pub async fn step_rollouts(&self) -> Result<Vec<Event>> {
        let gates = {
            let mut conn = self.conn().await?;
            rollouts::gates_to_drive(&mut conn).await?
        };
        let actor = Actor::new(DRIVER_ACTOR, Role::Admin);
        let mut events = Vec::new();
        for gate in &gates {
            let now = self.now();
            let (stepped, _) = self
                .write(&actor, now, |tx| {
                    Box::pin(async move {
                        if !rollouts::try_lock_gate(tx, gate).await? {
                            return Ok(Written::unchanged(Stepped::default()));
                        }
                        let stepped = step_gate(tx, gate, now, None).await?;
                        finish(tx, DRIVER_ACTOR, now, stepped).await
                    })
                })
                .await?;
            events.extend(stepped.events);
        }
        Ok(events)
    }

    /// Applies an operator's `command` to `gate`'s current rollout and steps it at once
    /// (operator); the rollout's status after it.
    pub async fn rollout_command(
        &self,
        actor: &Actor,
        gate: &str,
        command: Command,
    ) -> Result<(RolloutStatus, Vec<Event>)> {
        actor.require(Role::Operator)?;
        let now = self.now();
        let name = actor.name.as_str();
        let (stepped, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    rollouts::lock_gate(tx, gate).await?;
                    operates_whole_gate(tx, actor, gate).await?;
                    let stepped = step_gate(tx, gate, now, Some(command)).await?;
                    finish(tx, name, now, stepped).await
                })
            })
            .await?;
        let status = self.rollout_status(actor, gate).await?;
        Ok((status, stepped.events))
    }

    /// The current (else the latest) rollout of `gate` (viewer); 404 if the gate has none.
    pub async fn rollout_status(&self, actor: &Actor, gate: &str) -> Result<RolloutStatus> {
        actor.require(Role::Viewer)?;
        let now = self.now();
        let mut tx = self.begin().await?;
        db::read_snapshot(&mut tx).await?;
        if let Some(row) = crate::db::gates::get(&mut tx, gate).await? {
            let labels = crate::service::gates::manifest_labels(&row.manifest);
            actor.require_visible_gate(gate, &labels)?;
        }
        let status = status::read(&mut tx, gate, now).await?;
        tx.commit().await?;
        status.ok_or_else(|| Error::not_found("rollout of gate", gate))
    }
}

/// 403 unless `actor` holds operator for `gate` on every cluster the gate
/// reaches now: a rollout command moves the whole gate.
async fn operates_whole_gate(tx: &mut WriteTx<'_>, actor: &Actor, gate: &str) -> Result<()> {
    let row = crate::db::gates::get(tx, gate)
        .await?
        .ok_or_else(|| Error::not_found("gate", gate))?;
    let def = crate::service::fleet::stored_gate(&row.manifest)?;
    let gate_ref = crate::service::GateRef {
        name: gate,
        labels: &def.metadata.labels,
    };
    let permitted = actor.clusters_for(Role::Operator, gate_ref)?;
    let within = row.writer_scope.as_ref().map(|w| w.0.as_slice());
    let all = tx.scoped_clusters().await?;
    let reached: Vec<&crate::db::clusters::Scoped> = all
        .iter()
        .filter(|c| crate::service::fleet::reaches(&def, within, *c))
        .collect();
    crate::service::overrides::scope::check_cancel(&permitted, &reached).map_err(|_| {
        Error::Forbidden(format!(
            "a rollout command moves every cluster of gate '{gate}'; some are outside your cluster scope"
        ))
    })
}

/// Audits the step's events and hands the write its last one; unchanged when nothing moved.
async fn finish(
    tx: &mut sqlx::PgConnection,
    actor: &str,
    at: DateTime<Utc>,
    stepped: Stepped,
) -> Result<Written<Stepped>> {
    let Some(last) = stepped.events.last().cloned() else {
        return Ok(Written::unchanged(stepped));
    };
    audit_all_but_last(tx, actor, at, &stepped.events).await?;
    for e in &stepped.events {
        for ev in crate::notify::rollouts::events(e, at, stepped.next_transition) {
            crate::notify::enqueue(tx, &ev).await?;
        }
    }
    let affected = drive::affected(&stepped);
    let audit = Audit {
        action: last.action,
        target_kind: "gate",
        target_name: last.gate.clone(),
        before: None,
        after: Some(last.audit_json()),
        reason: last.detail.clone(),
    };
    Ok(Written::changed(stepped, audit, affected))
}
