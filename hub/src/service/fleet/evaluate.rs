//! Every gate evaluated on every cluster of a [`FleetInputs`] with the policy
//! crate, so the hub shows exactly what the spokes enforce. The views project
//! this one evaluation.

use fleetgate_policy::{CompiledGate, Evaluation};

use super::{ClusterInput, FleetInputs, GateInput};
use crate::{Error, Result};

/// One cluster's gates, evaluated.
pub(super) struct ClusterEvals<'a> {
    pub cluster: &'a ClusterInput,
    /// The gates whose scope includes the cluster, in gate-name order.
    pub gates: Vec<(&'a GateInput, Evaluation)>,
}

impl ClusterEvals<'_> {
    /// The gates' states combined (open only if all are open).
    pub fn combined(&self) -> fleetgate_policy::Combined {
        fleetgate_policy::combine(self.gates.iter().map(|(g, e)| (g.name(), e)))
    }
}

/// Evaluates every gate on every cluster of `inputs` at `inputs.at`, in
/// cluster order.
pub(super) fn evaluate(inputs: &FleetInputs) -> Result<Vec<ClusterEvals<'_>>> {
    let compiled = inputs
        .gates
        .iter()
        .map(|g| {
            g.gate
                .compile()
                .map_err(|e| Error::Internal(format!("stored gate '{}': {e}", g.name())))
        })
        .collect::<Result<Vec<CompiledGate>>>()?;
    // Without applicable overrides a gate evaluates the same on every
    // cluster: evaluate it once.
    let base: Vec<Evaluation> = compiled
        .iter()
        .map(|c| c.evaluate(inputs.at, &[]))
        .collect();
    Ok(inputs
        .clusters
        .iter()
        .map(|cluster| {
            let gates = inputs
                .gates
                .iter()
                .zip(&compiled)
                .zip(&base)
                .filter(|((gate, _), _)| gate.applies_to(&cluster.row))
                .map(|((gate, compiled), base)| {
                    let applying = inputs.applying(gate, &cluster.row);
                    let e = if applying.is_empty() {
                        base.clone()
                    } else {
                        compiled.evaluate(inputs.at, &applying)
                    };
                    (gate, e)
                })
                .collect();
            ClusterEvals { cluster, gates }
        })
        .collect())
}
