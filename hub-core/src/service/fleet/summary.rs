//! The fleet at a glance: cluster counts (connected, open, with held
//! objects), each gate's open/closed count, and object counts.

use std::collections::HashMap;

use super::FleetInputs;
use super::evaluate::Evaluated;
use crate::Result;

pub use fleetgate_api_types::status::{
    ClusterCounts, ClusterRolloutFailure, FleetSummary, GateSummary, ObjectCounts,
};

/// How many disconnected clusters (and clusters with a failed rollout) a summary names.
const NAMED_DISCONNECTED: usize = 100;

/// The summary of a fleet read ([`super::Scope::Fleet`]) and its evaluation.
pub(super) fn summary(inputs: &FleetInputs, evals: &Evaluated<'_>) -> Result<FleetSummary> {
    let mut gates: Vec<GateSummary> = inputs
        .gates
        .iter()
        .map(|g| GateSummary {
            gate: g.name().to_string(),
            clusters: 0,
            open: 0,
            closed: 0,
            held_objects: 0,
            enforcement: g.enforcement(),
            would_suspend: 0,
            would_hold_objects: 0,
        })
        .collect();
    let mut counts = ClusterCounts {
        total: inputs.clusters.len(),
        ..ClusterCounts::default()
    };
    let index: HashMap<&str, usize> = inputs
        .gates
        .iter()
        .enumerate()
        .map(|(i, g)| (g.name(), i))
        .collect();
    let mut disconnected = Vec::new();
    let mut rollout_failures = Vec::new();
    for cluster in &evals.clusters {
        let row = &cluster.cluster.row;
        if row.connected {
            counts.connected += 1;
        } else {
            counts.disconnected += 1;
            if disconnected.len() < NAMED_DISCONNECTED {
                disconnected.push(row.name.clone());
            }
        }
        let mut all_open = true;
        for (gate, e) in &cluster.gates {
            let summary = &mut gates[index[gate.name()]];
            summary.clusters += 1;
            if e.state.is_open() {
                summary.open += 1;
            } else {
                summary.closed += 1;
                // A closed warn gate holds nothing: the cluster may still change.
                all_open &= gate.is_warn();
            }
        }
        let failures: Vec<ClusterRolloutFailure> = cluster
            .gates
            .iter()
            .filter_map(|(g, _)| {
                Some(ClusterRolloutFailure {
                    failure: rollout_failure(inputs, g.name(), &row.name)?,
                    cluster: row.name.clone(),
                    gate: g.name().to_string(),
                })
            })
            .collect();
        counts.rollout_failed += usize::from(!failures.is_empty());
        let room = NAMED_DISCONNECTED.saturating_sub(rollout_failures.len());
        rollout_failures.extend(failures.into_iter().take(room));
        if all_open {
            counts.open += 1;
        } else {
            counts.closed += 1;
        }
    }
    let mut objects = ObjectCounts::default();
    for c in inputs.reported.counts.values() {
        objects.governed += c.governed;
        objects.held += c.held;
        objects.suspended += c.suspended;
        objects.held_objects += c.held_objects;
        objects.held_objects_by_person += c.held_objects_by_person;
        objects.held_objects_waiting += c.held_objects_waiting;
        objects.held_objects_not_permitted += c.held_objects_not_permitted;
        objects.would_suspend += c.would_suspend;
        objects.would_hold += c.would_hold;
        objects.would_hold_objects += c.would_hold_objects;
        objects.would_hold_objects_waiting += c.would_hold_objects_waiting;
        counts.with_held += usize::from(c.held > 0);
        counts.with_held_objects += usize::from(c.held_objects > 0);
    }
    for ((_, gate), n) in &inputs.reported.would_suspend_by_gate {
        if let Some(&i) = index.get(gate.as_str()) {
            gates[i].would_suspend += n;
        }
    }
    for ((_, gate), n) in &inputs.reported.held_objects_by_gate {
        if let Some(&i) = index.get(gate.as_str()) {
            gates[i].held_objects += n;
        }
    }
    for ((_, gate), n) in &inputs.reported.would_hold_objects_by_gate {
        if let Some(&i) = index.get(gate.as_str()) {
            gates[i].would_hold_objects += n;
        }
    }
    Ok(FleetSummary {
        at: inputs.at,
        revision: inputs.revision,
        clusters: counts,
        gates,
        objects,
        disconnected,
        rollout_failures,
    })
}

/// The failure of `gate`'s current rollout on `cluster`, if its wave failed there.
pub(super) fn rollout_failure(
    inputs: &FleetInputs,
    gate: &str,
    cluster: &str,
) -> Option<fleetgate_api_types::status::RolloutFailure> {
    let f = inputs
        .rollout_failures
        .get(&(gate.to_string(), cluster.to_string()))?;
    Some(fleetgate_api_types::status::RolloutFailure {
        rollout_id: f.rollout_id.to_string(),
        state: crate::rollout::State::parse(&f.state),
        wave: f.wave + 1,
        wave_name: f
            .wave_name
            .clone()
            .unwrap_or_else(|| format!("wave-{}", f.wave + 1)),
        failed_at: f.failed_at,
        detail: f.failure.clone(),
    })
}
