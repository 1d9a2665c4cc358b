//! The dashboard's fleet grid (every gate on every cluster, with reasons,
//! next transitions, connections and held counts) and a gate page's clusters,
//! projected from one fleet read.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use super::evaluate::evaluate;
use super::{FleetInputs, ObjectCounts};
use crate::Result;

/// One gate on one cluster in the grid.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
    /// The rollout wave (1-based) that will release the cluster: the gate is closed here
    /// only because its rollout has not released it yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_wave: Option<u32>,
}

/// A row of the grid.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub connected: bool,
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    /// Objects with a change waiting for a gate.
    pub held: u32,
    /// Objects inside Kustomizations that fleetgate holds (`mode: holdObjects`).
    pub held_objects: u32,
    /// Of those, objects whose Kustomization applied a newer revision since.
    pub held_objects_waiting: u32,
    /// Objects a person marked `reconcile: disabled` that a holdObjects gate selects.
    pub held_objects_by_person: u32,
    /// Aligned with [`FleetGrid::gates`]; `None` where the gate does not apply.
    pub cells: Vec<Option<Cell>>,
}

/// The fleet grid (`GET /api/v1/dashboard/fleet`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetGrid {
    pub at: DateTime<Utc>,
    pub gates: Vec<String>,
    pub clusters: Vec<FleetRow>,
    /// Live overrides (active now or starting later).
    pub overrides: usize,
}

/// A cluster in a gate's scope, with the gate's state there.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScopedCluster {
    pub name: String,
    pub connected: bool,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// As [`Cell::rollout_wave`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_wave: Option<u32>,
}

fn held_on(inputs: &FleetInputs, cluster: &str, gate: &str) -> u32 {
    inputs
        .reported
        .held_by_gate
        .get(&(cluster.to_string(), gate.to_string()))
        .map_or(0, |n| u32::try_from(*n).unwrap_or(u32::MAX))
}

/// The grid of a fleet read: every gate is a column (also those without a
/// cluster in scope), every cluster a row.
pub(super) fn grid(inputs: &FleetInputs) -> Result<FleetGrid> {
    let mut gates: Vec<String> = inputs.gates.iter().map(|g| g.name().to_string()).collect();
    gates.sort();
    let clusters = evaluate(inputs)?
        .clusters
        .into_iter()
        .map(|c| {
            let row = &c.cluster.row;
            let cells = gates
                .iter()
                .map(|name| {
                    let k = c.gates.iter().position(|(g, _)| g.name() == name)?;
                    let e = &c.gates[k].1;
                    Some(Cell {
                        state: e.state.to_string(),
                        reason: e.reason.clone(),
                        next_transition: e.next_transition,
                        held: held_on(inputs, &row.name, name),
                        rollout_wave: c.rollout_waits[k],
                    })
                })
                .collect();
            let counts = inputs.reported.counts.get(&row.name);
            let count = |f: fn(&ObjectCounts) -> i64| {
                counts.map_or(0, |c| u32::try_from(f(c).max(0)).unwrap_or(u32::MAX))
            };
            FleetRow {
                name: row.name.clone(),
                labels: row.labels.clone(),
                connected: row.connected,
                last_seen_at: row.last_seen_at,
                spoke_version: row.spoke_version.clone(),
                held: inputs
                    .reported
                    .counts
                    .get(&row.name)
                    .map_or(0, |c| u32::try_from(c.held.max(0)).unwrap_or(u32::MAX)),
                held_objects: count(|c| c.held_objects),
                held_objects_waiting: count(|c| c.held_objects_waiting),
                held_objects_by_person: count(|c| c.held_objects_by_person),
                cells,
            }
        })
        .collect();
    Ok(FleetGrid {
        at: inputs.at,
        gates,
        clusters,
        overrides: inputs.live_overrides().count(),
    })
}

/// The clusters in `gate`'s scope (by name) with its state on each.
pub(super) fn gate_clusters(inputs: &FleetInputs, gate: &str) -> Result<Vec<ScopedCluster>> {
    let mut out: Vec<ScopedCluster> = evaluate(inputs)?
        .clusters
        .into_iter()
        .filter_map(|c| {
            let k = c.gates.iter().position(|(g, _)| g.name() == gate)?;
            let rollout_wave = c.rollout_waits[k];
            let (_, e) = c.gates.into_iter().nth(k)?;
            let row = &c.cluster.row;
            Some(ScopedCluster {
                rollout_wave,
                name: row.name.clone(),
                connected: row.connected,
                held: held_on(inputs, &row.name, gate),
                state: e.state.to_string(),
                reason: e.reason,
                next_transition: e.next_transition,
            })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}
