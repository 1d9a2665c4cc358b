//! A rollout as people see it (REST, gRPC, CLI, dashboard): its waves, each cluster's
//! release and health with the failing object's Ready message, the soak countdown and, for
//! waves not released yet, an estimated release time.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;
use crate::db::rollouts;
use crate::rollout::State;
use crate::rollout::health::Health;
use crate::rollout::machine::Current;
pub use fleetgate_api_types::rollout::{RolloutClusterStatus, RolloutStatus, WaveStatus};

/// The status of `gate`'s current (else latest) rollout at `now`; `None` if it has none.
pub(crate) async fn read(
    tx: &mut PgConnection,
    gate: &str,
    now: DateTime<Utc>,
) -> Result<Option<RolloutStatus>> {
    let Some((row, members)) = rollouts::latest(tx, gate).await? else {
        return Ok(None);
    };
    let c = Current { row, members };
    let health = super::drive::judge_wave(tx, &c, now).await?;
    Ok(Some(project(&c, &health, now)))
}

/// The status of `c` given its released clusters' health.
pub(crate) fn project(
    c: &Current,
    health: &HashMap<String, crate::rollout::health::Verdict>,
    now: DateTime<Utc>,
) -> RolloutStatus {
    let spec = &c.row.spec.0;
    let state = State::parse(&c.row.state);
    let current = c.row.wave;
    let soak = spec.soak();
    let approval = |w: i32| {
        usize::try_from(w)
            .ok()
            .and_then(|w| spec.waves.get(w))
            .is_some_and(|w| w.approval)
    };
    let waiting_for_approval = state == State::Running
        && c.row.wave_released_at.is_none()
        && approval(current)
        && c.row.approved_wave != Some(current);
    let soak_until = c.row.healthy_at.map(|t| t + soak);
    // Only a running wave has a deadline: a halted one has already failed, a paused one is
    // judged afresh from its resume.
    let health_deadline = match (state, c.row.wave_released_at, c.row.healthy_at) {
        (State::Running, Some(_), None) => c.row.health_since.map(|t| t + spec.health_timeout()),
        _ => None,
    };
    // Estimates: the current wave's release (or soak end), then one soak per wave after it.
    let mut next_at = match (c.row.wave_released_at, soak_until) {
        (None, _) => Some(now),
        (Some(_), Some(t)) => Some(t.max(now)),
        (Some(_), None) => Some(now + soak),
    };
    let waves = (0..c.wave_count())
        .map(|w| {
            let clusters: Vec<RolloutClusterStatus> = c
                .members
                .iter()
                .filter(|m| m.wave == w)
                .map(|m| {
                    let verdict = health.get(&m.cluster);
                    RolloutClusterStatus {
                        name: m.cluster.clone(),
                        released_at: m.released_at,
                        health: verdict.map_or(Health::Closed, |v| v.health),
                        detail: verdict.and_then(|v| v.detail.clone()),
                        late: m.late,
                        bypass: m.bypass,
                    }
                })
                .collect();
            let wave_state = if w < current {
                "done"
            } else if w > current {
                "pending"
            } else if state == State::Halted {
                "failed"
            } else if c.row.wave_released_at.is_none() {
                if waiting_for_approval {
                    "waiting-approval"
                } else {
                    "next"
                }
            } else if c.row.healthy_at.is_some() {
                "soaking"
            } else {
                "released"
            };
            let live = matches!(state, State::Running | State::Paused);
            let estimated_release_at =
                if live && w >= current && c.row.wave_released_at.is_none_or(|_| w > current) {
                    let at = next_at;
                    next_at = next_at.map(|t| t + soak);
                    at
                } else {
                    None
                };
            WaveStatus {
                index: w + 1,
                name: if usize::try_from(w).is_ok_and(|i| i < spec.waves.len()) {
                    spec.wave_name(usize::try_from(w).unwrap_or(0))
                } else {
                    format!("late-{}", w + 1)
                },
                approval: approval(w),
                state: wave_state.to_string(),
                estimated_release_at,
                clusters,
            }
        })
        .collect();
    RolloutStatus {
        gate: c.row.gate.clone(),
        id: c.row.id.to_string(),
        state,
        opening_at: c.row.opening_at,
        started_at: c.row.started_at,
        ended_at: c.row.ended_at,
        wave: current + 1,
        waiting_for_approval,
        soak_until,
        health_deadline,
        detail: c.row.detail.clone(),
        waves,
    }
}
