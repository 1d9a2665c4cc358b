//! Every gate evaluated on every cluster of a [`FleetInputs`] with the policy
//! crate, so the hub shows exactly what the spokes enforce. The views project
//! this one evaluation.

use std::cell::RefCell;
use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::{
    Combined, CompiledGate, Evaluation, GateState, Override, next_combined_change,
};

use super::{ClusterInput, FleetInputs, GateInput};
use crate::{Error, Result};

/// One cluster's gates, evaluated.
pub(super) struct ClusterEvals<'a> {
    pub cluster: &'a ClusterInput,
    /// The gates whose scope includes the cluster, in gate-name order.
    pub gates: Vec<(&'a GateInput, Evaluation)>,
    /// Per entry of `gates`: the rollout wave (1-based) that will release the cluster,
    /// while its rules would open the gate but its rollout has not released it.
    pub rollout_waits: Vec<Option<u32>>,
    /// Per entry of `gates`: the gate's index in the inputs and the overrides
    /// that apply to this cluster.
    applying: Vec<(usize, Vec<Override>)>,
}

impl ClusterEvals<'_> {
    /// The enforced gates' states combined (open only if all are open): a closed gate in
    /// warn mode holds nothing, so it never closes the cluster (see [`Self::would_close`]).
    pub fn combined(&self) -> Combined {
        fleetgate_policy::combine(
            self.gates
                .iter()
                .filter(|(g, _)| !g.is_warn())
                .map(|(g, e)| (g.name(), e)),
        )
    }

    /// The closed gates in warn mode: they would hold the cluster's objects if enforced.
    pub fn would_close(&self) -> Vec<String> {
        self.gates
            .iter()
            .filter(|(g, e)| g.is_warn() && e.state == GateState::Closed)
            .map(|(g, _)| g.name().to_string())
            .collect()
    }

    /// [`Self::combined`] with the cluster's enforced local gates (Gate
    /// objects made in it, as its spoke reported them): the spoke holds an
    /// object while any gate governing it is closed, so a closed enforced
    /// local gate closes the cluster's combined state too. Local gates not
    /// enforced count for nothing.
    pub fn combined_with(&self, local: &[super::LocalGate]) -> Combined {
        let mut c = self.combined();
        for g in local.iter().filter(|g| g.enforced && g.state != "open") {
            c.open = false;
            c.closed_by.push(g.name.clone());
        }
        c
    }
}

/// The evaluation of a fleet read at its instant.
pub(super) struct Evaluated<'a> {
    at: DateTime<Utc>,
    compiled: Vec<CompiledGate>,
    /// In cluster order.
    pub clusters: Vec<ClusterEvals<'a>>,
    /// Gates without applicable overrides at later instants, shared by every
    /// cluster's next-change search.
    later: RefCell<HashMap<(usize, DateTime<Utc>), Evaluation>>,
}

impl Evaluated<'_> {
    /// When `cluster`'s combined state (open only while all its gates are
    /// open) next changes — not merely some gate.
    pub fn next_change(&self, cluster: &ClusterEvals<'_>) -> Option<DateTime<Utc>> {
        // A warn gate never closes the cluster: it counts as always open.
        let ignored = || Evaluation {
            state: GateState::Open,
            reason: String::new(),
            next_transition: None,
        };
        let now: Vec<Evaluation> = cluster
            .gates
            .iter()
            .map(|(g, e)| if g.is_warn() { ignored() } else { e.clone() })
            .collect();
        next_combined_change(self.at, &now, |k, t| {
            if cluster.gates[k].0.is_warn() {
                return ignored();
            }
            let (i, applying) = &cluster.applying[k];
            if applying.is_empty() {
                self.later
                    .borrow_mut()
                    .entry((*i, t))
                    .or_insert_with(|| self.compiled[*i].evaluate(t, &[]))
                    .clone()
            } else {
                self.compiled[*i].evaluate(t, applying)
            }
        })
    }

    /// [`Self::next_change`] with the cluster's enforced local gates, as
    /// [`ClusterEvals::combined_with`] counts them (see [`next_with_local`]).
    pub fn next_change_with(
        &self,
        cluster: &ClusterEvals<'_>,
        local: &[super::LocalGate],
    ) -> Option<DateTime<Utc>> {
        next_with_local(cluster.combined().open, self.next_change(cluster), local)
    }
}

/// When a cluster's combined state next changes once its enforced local
/// gates count, from what the hub knows of them: each one's state and next
/// transition as its spoke reported it (what follows that is the spoke's to
/// evaluate). `hub_open`/`hub_next`: the hub's gates combined and their next
/// change. Open now: the first change of any part (a gate closing). Closed
/// now: when the last closed part opens; none while a closed part reports no
/// next transition (it stays closed until someone acts).
pub(super) fn next_with_local(
    hub_open: bool,
    hub_next: Option<DateTime<Utc>>,
    local: &[super::LocalGate],
) -> Option<DateTime<Utc>> {
    let enforced: Vec<&super::LocalGate> = local.iter().filter(|g| g.enforced).collect();
    if enforced.is_empty() {
        return hub_next;
    }
    let closed: Vec<&&super::LocalGate> = enforced.iter().filter(|g| g.state != "open").collect();
    if hub_open && closed.is_empty() {
        return hub_next
            .into_iter()
            .chain(enforced.iter().filter_map(|g| g.next_transition))
            .min();
    }
    let mut opens = Vec::new();
    if !hub_open {
        opens.push(hub_next?);
    }
    for g in closed {
        opens.push(g.next_transition?);
    }
    opens.into_iter().max()
}

/// A gate with `spec.rollout` opens a cluster only with the cluster's release, as the
/// spoke enforces it: open by its rules but not released is closed, waiting for its wave
/// (returned 1-based when the current rollout has placed the cluster in one).
fn held_by_rollout(
    inputs: &FleetInputs,
    gate: &GateInput,
    cluster: &str,
    e: Evaluation,
) -> (Evaluation, Option<u32>) {
    if gate.gate.spec.rollout.is_none() || e.state == GateState::Closed {
        return (e, None);
    }
    let key = (gate.name().to_string(), cluster.to_string());
    if inputs.releases.contains_key(&key) {
        return (e, None);
    }
    let wave = inputs
        .waiting
        .get(&key)
        .and_then(|w| u32::try_from(w.wave + 1).ok());
    let reason = match inputs.waiting.get(&key) {
        Some(w) if w.state == "running" => {
            format!("waiting for rollout wave {}", w.wave + 1)
        }
        Some(w) => format!(
            "waiting for rollout wave {} (rollout {})",
            w.wave + 1,
            w.state
        ),
        None => "waiting for the rollout to release it".to_string(),
    };
    let held = Evaluation {
        state: GateState::Closed,
        reason,
        // Released by the hub's rollout driver, not at a scheduled instant.
        next_transition: None,
    };
    (held, wave)
}

/// Evaluates every gate on every cluster of `inputs` at `inputs.at`.
pub(super) fn evaluate(inputs: &FleetInputs) -> Result<Evaluated<'_>> {
    let compiled = inputs
        .gates
        .iter()
        .map(|g| {
            crate::service::calendars::feeds::compile_at(&g.gate, &g.feeds, inputs.at)
                .map_err(|e| Error::Internal(format!("stored gate '{}': {e}", g.name())))
        })
        .collect::<Result<Vec<CompiledGate>>>()?;
    // Without applicable overrides a gate evaluates the same on every
    // cluster: evaluate it once.
    let base: Vec<Evaluation> = compiled
        .iter()
        .map(|c| c.evaluate(inputs.at, &[]))
        .collect();
    let clusters = inputs
        .clusters
        .iter()
        .map(|cluster| {
            let mut gates = Vec::new();
            let mut applying = Vec::new();
            let mut rollout_waits = Vec::new();
            for (i, gate) in inputs.gates.iter().enumerate() {
                if !gate.applies_to(&cluster.row) || !inputs.sees(gate, &cluster.row) {
                    continue;
                }
                let overrides = inputs.applying(gate, &cluster.row);
                let e = if overrides.is_empty() {
                    base[i].clone()
                } else {
                    compiled[i].evaluate(inputs.at, &overrides)
                };
                let (e, wait) = held_by_rollout(inputs, gate, &cluster.row.name, e);
                gates.push((gate, e));
                rollout_waits.push(wait);
                applying.push((i, overrides));
            }
            ClusterEvals {
                cluster,
                gates,
                rollout_waits,
                applying,
            }
        })
        .collect();
    Ok(Evaluated {
        at: inputs.at,
        compiled,
        clusters,
        later: RefCell::new(HashMap::new()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::fleet::LocalGate;

    fn t(h: u32) -> DateTime<Utc> {
        DateTime::from_timestamp(i64::from(h) * 3600, 0).unwrap()
    }

    fn local(enforced: bool, state: &str, next: Option<u32>) -> LocalGate {
        LocalGate {
            name: "l".into(),
            enforced,
            state: state.into(),
            next_transition: next.map(t),
            ..LocalGate::default()
        }
    }

    #[test]
    fn local_gates_move_the_next_change_only_when_enforced() {
        // Not enforced: the hub's gates alone.
        assert_eq!(
            next_with_local(true, Some(t(5)), &[local(false, "open", Some(1))]),
            Some(t(5))
        );
        // Open cluster: the first part to change.
        assert_eq!(
            next_with_local(true, Some(t(5)), &[local(true, "open", Some(2))]),
            Some(t(2))
        );
        assert_eq!(
            next_with_local(true, None, &[local(true, "open", Some(7))]),
            Some(t(7))
        );
        // Closed by a local gate: when it opens (the hub's next closing is later).
        assert_eq!(
            next_with_local(true, Some(t(9)), &[local(true, "closed", Some(3))]),
            Some(t(3))
        );
        // Closed by both: when the last one opens.
        assert_eq!(
            next_with_local(false, Some(t(4)), &[local(true, "closed", Some(3))]),
            Some(t(4))
        );
        assert_eq!(
            next_with_local(false, Some(t(2)), &[local(true, "closed", Some(3))]),
            Some(t(3))
        );
        // A closed part without a next transition stays closed.
        assert_eq!(
            next_with_local(true, Some(t(2)), &[local(true, "closed", None)]),
            None
        );
        assert_eq!(
            next_with_local(false, None, &[local(true, "closed", Some(3))]),
            None
        );
    }
}
