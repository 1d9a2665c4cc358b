//! One step of one gate's rollout inside a write transaction: read the step's inputs,
//! apply an operator's command if any, run the pure [`machine::step`], persist the result
//! (rollout rows, cluster releases with the snapshot revision that carries them) and write
//! an audit row per event — all before the change notification sends any snapshot.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::GateState;
use sqlx::PgConnection;

use super::command::Command;
use crate::db::audit::NewAudit;
use crate::db::clusters::{self, Labelled};
use crate::db::revision::Affected;
use crate::db::rollouts::{self, MemberRow};
use crate::db::{gates, overrides};
use crate::rollout::Event;
use crate::rollout::health::{ClusterHealthInput, Limits, Verdict, judge};
use crate::rollout::machine::{self, Current, ScopeCluster, StepInput};
use crate::service::WriteTx;
use crate::service::fleet::{applying, opening_fence, stored_gate, to_policy};
use crate::{Error, Result};

/// The actor name rollout steps are audited under.
pub const DRIVER_ACTOR: &str = "fleetgate-rollout";

/// What a step changed: its events and the clusters whose snapshot changed.
#[derive(Debug, Default)]
pub struct Stepped {
    pub events: Vec<Event>,
    pub affected: Vec<String>,
    /// The gate's next scheduled change (for the `gate.opened` of a release).
    pub next_transition: Option<DateTime<Utc>>,
}

/// Runs one step of `gate`'s rollout at `now` (after `command`, an operator's, if given).
/// The caller holds the write transaction and the gate's rollout lock.
pub(crate) async fn step_gate(
    tx: &mut WriteTx<'_>,
    gate_name: &str,
    now: DateTime<Utc>,
    command: Option<Command>,
) -> Result<Stepped> {
    let Some(gate_row) = gates::get(tx, gate_name).await? else {
        return Err(Error::not_found("gate", gate_name));
    };
    let gate = stored_gate(&gate_row.manifest)?;
    let feeds = crate::db::calendar_feeds::occurrences_of(tx, gate_name).await?;
    let compiled = crate::service::calendars::compile_at(&gate, &feeds, now)
        .map_err(|e| Error::Internal(format!("stored gate does not compile: {e}")))?;
    let before = rollouts::current(tx, gate_name)
        .await?
        .map(|(row, members)| Current { row, members });
    let mut current = before.clone();
    let mut events = Vec::new();
    if let Some(command) = command {
        let c = current.as_mut().ok_or_else(|| {
            Error::conflict(format!("gate '{gate_name}' has no rollout in progress"))
        })?;
        events.push(command.apply(c, now)?);
    }

    // Names and labels only, from the replica's copy while the clusters are unchanged:
    // every rollout gate is stepped every tick inside a write, and reading every cluster
    // row there (connection state included) grew with the fleet, not with the rollout.
    let all = tx.scoped_clusters().await?;
    let rows = overrides::live_for_gates(tx, &[gate_name.to_string()], now).await?;
    let live_freezes = crate::db::freezes::live(tx, now).await?;
    let mut gate_wide: Vec<_> = rows
        .iter()
        .filter(|r| r.clusters.is_none())
        .map(to_policy)
        .collect();
    gate_wide.extend(
        live_freezes
            .iter()
            .filter(|f| f.clusters.is_none())
            .map(crate::service::freezes::to_policy),
    );
    // Freezes that ended are not among the live overrides: their ends fence the opening,
    // so one the driver never saw (created and cancelled between two steps, or ended while
    // every replica was down) still ends this rollout and stages the reopening.
    let mut ended = overrides::ended_closes(tx, &[gate_name.to_string()], now).await?;
    ended.extend(crate::service::freezes::as_ended_closes(
        &crate::db::freezes::ended(tx, now).await?,
        gate_name,
    ));
    let gate_open_since = compiled.open_since_fenced(now, &gate_wide, opening_fence(&ended, None));
    let scope: Vec<ScopeCluster> = all
        .iter()
        .filter(|c| {
            crate::service::fleet::reaches(
                &gate,
                gate_row.writer_scope.as_ref().map(|w| w.0.as_slice()),
                *c,
            )
        })
        .map(|c| {
            let own = applying(&gate, c, &rows, &live_freezes);
            let evaluation = compiled.evaluate(now, &own);
            let bypass = evaluation.state == GateState::Open
                && rows.iter().any(|r| {
                    r.clusters.is_some()
                        && r.state == "open"
                        && to_policy(r).is_active(now)
                        && crate::service::fleet::applies(&gate, c, r)
                });
            ScopeCluster {
                name: c.name.clone(),
                labels: c.labels.clone(),
                open_since: compiled.open_since_fenced(
                    now,
                    &own,
                    opening_fence(&ended, Some(c as &dyn Labelled)),
                ),
                bypass,
            }
        })
        .collect();

    let mut health = HashMap::new();
    if let Some(c) = &current {
        health = judge_wave(tx, c, now).await?;
    }
    let spec = gate.spec.rollout.as_ref();
    let input = StepInput {
        now,
        gate: gate_name,
        spec,
        gate_open_since,
        scope: &scope,
        health: &health,
    };
    let outcome = machine::step(&input, current);
    events.extend(outcome.events);

    // Persist: the ended rollout, the current one, and every changed cluster row.
    let next_revision = crate::db::revision::current(tx).await? + 1;
    let mut affected = Vec::new();
    if let Some(ended) = &outcome.ended {
        rollouts::save(tx, &ended.row).await?;
        affected.extend(
            ended
                .members
                .iter()
                .filter(|m| m.released_at.is_some())
                .map(|m| m.cluster.clone()),
        );
    }
    if let Some(c) = &outcome.current {
        let old: HashMap<&str, &MemberRow> = before
            .as_ref()
            .filter(|b| b.row.id == c.row.id)
            .map(|b| b.members.iter().map(|m| (m.cluster.as_str(), m)).collect())
            .unwrap_or_default();
        let row_changed = before.as_ref().is_none_or(|b| b.row != c.row);
        if row_changed {
            rollouts::save(tx, &c.row).await?;
        }
        let mut changed: Vec<MemberRow> = Vec::new();
        for m in &c.members {
            let prev = old.get(m.cluster.as_str());
            if prev.is_some_and(|p| *p == m) {
                continue;
            }
            let mut m = m.clone();
            let release_moved = prev.is_none_or(|p| {
                p.released_at.is_some() != m.released_at.is_some() || p.opening_at != m.opening_at
            });
            if release_moved {
                if m.released_at.is_some() {
                    m.release_revision = Some(next_revision);
                }
                // A new member (the rollout started, or it joined) learns its wave; a
                // released or re-closed one its release.
                if prev.is_none_or(|p| p.released_at.is_some()) || m.released_at.is_some() {
                    affected.push(m.cluster.clone());
                }
            }
            changed.push(m);
        }
        let refs: Vec<&MemberRow> = changed.iter().collect();
        rollouts::save_members(tx, c.row.id, &refs).await?;
        if events.is_empty() && (row_changed || !changed.is_empty()) {
            // A quiet change (a per-cluster opening moved): still audited.
            events.push(Event::of(&c.row, "rollout.update", None));
        }
    }
    affected.sort();
    affected.dedup();
    Ok(Stepped {
        events,
        affected,
        next_transition: compiled.evaluate(now, &[]).next_transition,
    })
}

/// The health of the current wave's released clusters (and of every released cluster for
/// status displays, which call this too).
/// Judges the health of `c`'s released members (only their rows are read, not the
/// whole fleet's).
pub(crate) async fn judge_wave(
    tx: &mut PgConnection,
    c: &Current,
    now: DateTime<Utc>,
) -> Result<HashMap<String, Verdict>> {
    let released: Vec<&MemberRow> = c
        .members
        .iter()
        .filter(|m| m.released_at.is_some())
        .collect();
    let names: Vec<String> = released.iter().map(|m| m.cluster.clone()).collect();
    let rows = clusters::named(tx, &names, now).await?;
    let connected: HashMap<&str, bool> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.connected))
        .collect();
    let objects = rollouts::object_health(tx, &c.row.gate, &names).await?;
    let limits = Limits::of(&c.row.spec);
    let empty = Vec::new();
    Ok(released
        .into_iter()
        .map(|m| {
            // Clusters of earlier waves are judged from their own release.
            let since = if m.wave == c.row.wave {
                c.row.health_since.or(m.released_at)
            } else {
                m.released_at
            }
            .unwrap_or(now);
            let input = ClusterHealthInput {
                connected: connected.get(m.cluster.as_str()).copied().unwrap_or(false),
                release_revision: m.release_revision.unwrap_or(0),
                since: since.max(m.released_at.unwrap_or(since)),
                objects: objects.get(&m.cluster).unwrap_or(&empty),
            };
            (m.cluster.clone(), judge(&input, now, limits))
        })
        .collect())
}

/// Audits every event but the last (the write audits that one with its commit).
pub(crate) async fn audit_all_but_last(
    tx: &mut PgConnection,
    actor: &str,
    at: DateTime<Utc>,
    events: &[Event],
) -> Result<()> {
    for e in events.iter().take(events.len().saturating_sub(1)) {
        crate::db::audit::insert(
            tx,
            &NewAudit {
                at,
                actor,
                action: e.action,
                target_kind: "gate",
                target_name: &e.gate,
                before: None,
                after: Some(e.audit_json()),
                reason: e.detail.as_deref(),
                who: crate::db::audit::Who {
                    kind: Some("system".into()),
                    ..crate::db::audit::Who::default()
                },
            },
        )
        .await?;
    }
    Ok(())
}

/// The affected set of a step.
pub(crate) fn affected(stepped: &Stepped) -> Affected {
    Affected::Clusters(stepped.affected.clone())
}
