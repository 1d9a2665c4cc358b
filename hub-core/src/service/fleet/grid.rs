//! The dashboard's fleet grid (every gate on every cluster, with reasons,
//! next transitions, connections and held counts) and a gate page's clusters,
//! projected from one fleet read.

use fleetgate_policy::GateState;

use super::evaluate::{ClusterEvals, evaluate};
use super::inputs::FleetInputs;
use super::summary::ObjectCounts;
use crate::Result;

pub use fleetgate_api_types::dashboard::{Cell, FleetGrid, FleetRow, ScopedCluster};

fn held_on(inputs: &FleetInputs, cluster: &str, gate: &str) -> u32 {
    count_on(&inputs.reported.held_by_gate, cluster, gate)
}

fn would_suspend_on(inputs: &FleetInputs, cluster: &str, gate: &str) -> u32 {
    count_on(&inputs.reported.would_suspend_by_gate, cluster, gate)
}

fn count_on(
    counts: &std::collections::HashMap<(String, String), i64>,
    cluster: &str,
    gate: &str,
) -> u32 {
    counts
        .get(&(cluster.to_string(), gate.to_string()))
        .map_or(0, |n| u32::try_from(*n).unwrap_or(u32::MAX))
}

/// The grid's columns: every gate's name, sorted.
pub(super) fn columns(inputs: &FleetInputs) -> Vec<String> {
    let mut gates: Vec<String> = inputs.gates.iter().map(|g| g.name().to_string()).collect();
    gates.sort();
    gates
}

/// The grid of a fleet read: every gate is a column (also those without a
/// cluster in scope), every cluster a row.
pub fn grid(inputs: &FleetInputs) -> Result<FleetGrid> {
    let gates = columns(inputs);
    let clusters = evaluate(inputs)?
        .clusters
        .iter()
        .map(|c| row(inputs, &gates, c))
        .collect();
    Ok(FleetGrid {
        at: inputs.at,
        gates,
        clusters,
        overrides: inputs.live_overrides().count(),
    })
}

/// The held changes of `cluster` as its row counts them (`FleetRow::held`).
pub(super) fn held_changes(inputs: &FleetInputs, cluster: &str) -> u32 {
    inputs
        .reported
        .counts
        .get(cluster)
        .map_or(0, |c| u32::try_from(c.held.max(0)).unwrap_or(u32::MAX))
}

/// Per column of `gates`: whether the cluster's cell there is an enforcing gate closed
/// (`state == "closed"` and not `warn`), what the fleet page filters and counts by;
/// without building the cells.
pub(super) fn closed_columns(gates: &[String], c: &ClusterEvals<'_>) -> Vec<bool> {
    let mut out = vec![false; gates.len()];
    for (gate, e) in &c.gates {
        if e.state == GateState::Closed
            && !gate.is_warn()
            && let Ok(i) = gates.binary_search_by(|n| n.as_str().cmp(gate.name()))
        {
            out[i] = true;
        }
    }
    out
}

/// `c`'s row of the grid whose columns are `gates`.
pub(super) fn row(inputs: &FleetInputs, gates: &[String], c: &ClusterEvals<'_>) -> FleetRow {
    let row = &c.cluster.row;
    let cells = gates
        .iter()
        .map(|name| {
            let k = c.gates.iter().position(|(g, _)| g.name() == name)?;
            let (gate, e) = &c.gates[k];
            Some(Cell {
                warn: gate.is_warn(),
                would_suspend: would_suspend_on(inputs, &row.name, name),
                state: e.state.to_string(),
                reason: e.reason.clone(),
                next_transition: e.next_transition,
                held: held_on(inputs, &row.name, name),
                rollout_wave: c.rollout_waits[k],
                rollout_failure: super::summary::rollout_failure(inputs, name, &row.name),
                would_hold_objects: count_on(
                    &inputs.reported.would_hold_objects_by_gate,
                    &row.name,
                    name,
                ),
            })
        })
        .collect();
    let counts = inputs.reported.counts.get(&row.name);
    let problems = inputs.reported.problem_briefs.get(&row.name);
    let count = |f: fn(&ObjectCounts) -> i64| {
        counts.map_or(0, |c| u32::try_from(f(c).max(0)).unwrap_or(u32::MAX))
    };
    FleetRow {
        name: row.name.clone(),
        labels: row.labels.clone(),
        connected: row.connected,
        last_seen_at: row.last_seen_at,
        spoke_version: row.spoke_version.clone(),
        spoke_skew: fleetgate_api_types::version::spoke_skew_here(row.spoke_version.as_deref()),
        held: held_changes(inputs, &row.name),
        held_objects: count(|c| c.held_objects),
        held_objects_waiting: count(|c| c.held_objects_waiting),
        held_objects_by_person: count(|c| c.held_objects_by_person),
        held_objects_not_permitted: count(|c| c.held_objects_not_permitted),
        would_hold_objects: count(|c| c.would_hold_objects),
        report_problems: problems.map_or(0, |p| p.total),
        report_refused: problems.is_some_and(|p| p.write_error.is_some()),
        cells,
    }
}

/// The clusters in `gate`'s scope (by name) with its state on each.
pub(super) fn gate_clusters(inputs: &FleetInputs, gate: &str) -> Result<Vec<ScopedCluster>> {
    let mut out: Vec<ScopedCluster> = evaluate(inputs)?
        .clusters
        .into_iter()
        .filter_map(|c| {
            let k = c.gates.iter().position(|(g, _)| g.name() == gate)?;
            let rollout_wave = c.rollout_waits[k];
            let (g, e) = c.gates.into_iter().nth(k)?;
            let row = &c.cluster.row;
            Some(ScopedCluster {
                warn: g.is_warn(),
                would_suspend: would_suspend_on(inputs, &row.name, gate),
                would_hold_objects: count_on(
                    &inputs.reported.would_hold_objects_by_gate,
                    &row.name,
                    gate,
                ),
                rollout_wave,
                name: row.name.clone(),
                connected: row.connected,
                held: held_on(inputs, &row.name, gate),
                state: e.state.to_string(),
                reason: e.reason,
                next_transition: e.next_transition,
                may_operate: false,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
