//! Rollout operations: the driver's step of every rollout gate (run by
//! [`driver::run`] on every replica; one runs each gate's step at a time, under a
//! transaction-scoped advisory lock), an operator's pause/resume/abort/release-next, and
//! the rollout's status.

mod cluster;
pub mod drive;
pub mod driver;
pub mod status;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{Actor, Audit, Role, Service, WriteTx, Written};
use crate::db::{self, rollouts};
use crate::rollout::machine::Current;
use crate::rollout::{Event, State};
use crate::{Error, Result};
use drive::{DRIVER_ACTOR, Stepped, audit_all_but_last, step_gate};
pub use status::{RolloutClusterStatus, RolloutStatus, WaveStatus};

/// An operator's command on a gate's current rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    /// Release no further wave until resumed.
    Pause,
    /// Continue a paused or halted rollout (a halted wave is judged afresh from now;
    /// `onFailure: close` re-releases it).
    Resume,
    /// Stop: the remaining waves stay closed until the gate opens anew.
    Abort,
    /// Release the next wave now: approve a wave waiting for approval, or end the soak.
    ReleaseNext,
}

impl std::str::FromStr for Command {
    type Err = Error;
    /// `pause|resume|abort|release-next` (404 otherwise: REST's path segment).
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "pause" => Ok(Command::Pause),
            "resume" => Ok(Command::Resume),
            "abort" => Ok(Command::Abort),
            "release-next" => Ok(Command::ReleaseNext),
            other => Err(Error::not_found("rollout command", other)),
        }
    }
}

impl Command {
    /// The audit action.
    pub fn action(&self) -> &'static str {
        match self {
            Command::Pause => "rollout.pause",
            Command::Resume => "rollout.resume",
            Command::Abort => "rollout.abort",
            Command::ReleaseNext => "rollout.release-next",
        }
    }

    /// Applies the command to `c`; 409 when the rollout's state does not allow it.
    pub fn apply(&self, c: &mut Current, now: DateTime<Utc>) -> Result<Event> {
        let state = State::parse(&c.row.state);
        let refuse = |why: String| Err(Error::conflict(why));
        let gate = c.row.gate.clone();
        match (self, state) {
            (Command::Pause, State::Running) => c.row.state = State::Paused.as_str().into(),
            (Command::Resume, State::Paused) => c.row.state = State::Running.as_str().into(),
            (Command::Resume, State::Halted) => {
                c.row.state = State::Running.as_str().into();
                c.row.detail = None;
                c.row.health_since = Some(now);
                c.row.healthy_at = None;
                let wave = c.row.wave;
                // The wave is judged afresh: its failures are forgotten until it fails again.
                for m in c.members.iter_mut().filter(|m| m.wave == wave) {
                    m.failed_at = None;
                    m.failure = None;
                }
                if c.members
                    .iter()
                    .any(|m| m.wave == wave && m.released_at.is_none())
                {
                    // onFailure close closed the wave: release it again.
                    c.row.wave_released_at = None;
                }
            }
            (Command::Abort, State::Running | State::Paused | State::Halted) => {
                c.row.state = State::Aborted.as_str().into();
            }
            (Command::ReleaseNext, State::Running) => {
                let wave = c.row.wave;
                if c.row.wave_released_at.is_none() {
                    c.row.approved_wave = Some(wave);
                } else if c.row.healthy_at.is_some() {
                    c.row.approved_wave = Some(wave + 1);
                } else {
                    return refuse(format!(
                        "rollout of gate '{gate}': wave {} is not healthy yet",
                        wave + 1
                    ));
                }
            }
            (Command::ReleaseNext, State::Paused | State::Halted) => {
                return refuse(format!(
                    "rollout of gate '{gate}' is {}: resume it first",
                    state.as_str()
                ));
            }
            (_, state) => {
                return refuse(format!(
                    "rollout of gate '{gate}' is {}: cannot {}",
                    state.as_str(),
                    self.action().trim_start_matches("rollout.")
                ));
            }
        }
        Ok(Event::of(&c.row, self.action(), None))
    }
}

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
    crate::service::override_scope::check_cancel(&permitted, &reached).map_err(|_| {
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
