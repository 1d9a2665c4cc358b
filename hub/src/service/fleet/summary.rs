//! The fleet at a glance: cluster counts (connected, open, with held
//! objects), each gate's open/closed count, and object counts.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::FleetInputs;
use super::evaluate::Evaluated;
use crate::Result;
use crate::db::held_objects::HeldCounts;
use crate::service::liveness;

/// Object counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectCounts {
    /// Flux objects governed (not counting ignored ones).
    pub governed: i64,
    /// Flux objects with a newer revision waiting behind a closed gate.
    pub held: i64,
    pub suspended: i64,
    /// Objects inside Kustomizations held by fleetgate (holdObjects gates).
    pub held_objects: i64,
    /// Objects inside Kustomizations Flux skips because a person marked them.
    pub held_objects_by_person: i64,
    /// Objects held by fleetgate whose Kustomization applied a newer revision
    /// since (their changes wait for the gate).
    pub held_objects_waiting: i64,
}

impl ObjectCounts {
    /// These counts with the held-object counts of `held` (absent: none).
    pub(super) fn with_held_objects(mut self, held: Option<&HeldCounts>) -> Self {
        if let Some(h) = held {
            self.held_objects = h.held;
            self.held_objects_by_person = h.by_person;
            self.held_objects_waiting = h.waiting;
        }
        self
    }
}

/// One gate across the fleet.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateSummary {
    pub gate: String,
    /// Clusters in scope.
    pub clusters: usize,
    pub open: usize,
    pub closed: usize,
    /// Objects this gate holds (fleetgate's marks naming it) across the fleet.
    pub held_objects: i64,
}

/// Cluster counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCounts {
    pub total: usize,
    pub connected: usize,
    pub disconnected: usize,
    /// All gates open.
    pub open: usize,
    /// At least one gate closed.
    pub closed: usize,
    /// At least one held Flux object (a newer revision waits).
    pub with_held: usize,
    /// At least one object inside a Kustomization held by fleetgate.
    pub with_held_objects: usize,
}

/// The fleet at a glance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetSummary {
    pub at: DateTime<Utc>,
    pub revision: i64,
    pub clusters: ClusterCounts,
    pub gates: Vec<GateSummary>,
    pub objects: ObjectCounts,
    /// Names of disconnected clusters (at most 100).
    pub disconnected: Vec<String>,
}

/// How many disconnected clusters a summary names.
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
    for cluster in &evals.clusters {
        let row = &cluster.cluster.row;
        if liveness::is_connected(row, inputs.at) {
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
                all_open = false;
            }
        }
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
        if c.held > 0 {
            counts.with_held += 1;
        }
    }
    for h in inputs.reported.held_objects.values() {
        objects.held_objects += h.held;
        objects.held_objects_by_person += h.by_person;
        objects.held_objects_waiting += h.waiting;
        if h.held > 0 {
            counts.with_held_objects += 1;
        }
    }
    for ((_, gate), n) in &inputs.reported.held_objects_by_gate {
        if let Some(&i) = index.get(gate.as_str()) {
            gates[i].held_objects += n;
        }
    }
    Ok(FleetSummary {
        at: inputs.at,
        revision: inputs.revision,
        clusters: counts,
        gates,
        objects,
        disconnected,
    })
}
