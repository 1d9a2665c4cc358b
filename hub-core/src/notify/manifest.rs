//! `gate.opened`/`gate.closed` caused by a manifest write: a gate created,
//! replaced or deleted changes its state on some clusters at once (a new
//! closed gate closes them; a window removed opens them; a selector moved
//! releases the clusters it left). Computed in the write's transaction from
//! the gate as stored before and after; a cluster the gate does not reach
//! counts as open (nothing of this gate holds it).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, CompiledGate, Gate, GateState};

use super::event::{Cause, GateTransition, StateGroups, earliest};
use crate::db::clusters::Scoped;
use crate::db::overrides::OverrideRecord;
use crate::service::fleet::applying::{applying, reaches};

/// One version of a gate as the write sees it: its definition, compiled
/// (with its feeds' occurrences) and the writer scope it is kept within.
pub(crate) struct Version<'a> {
    pub gate: &'a Gate,
    pub compiled: CompiledGate,
    pub within: Option<&'a [ClusterScope]>,
}

/// The state changes on `clusters` between `before` and `after` (`None`:
/// the gate did not exist / no longer exists), one transition per new state.
/// The live `freezes` count like the overrides (a frozen cluster stays closed).
#[allow(clippy::too_many_arguments)]
pub(crate) fn state_changes(
    name: &str,
    before: Option<&Version<'_>>,
    after: Option<&Version<'_>>,
    clusters: &[Scoped],
    overrides: &[OverrideRecord],
    freezes: &[crate::db::freezes::FreezeRecord],
    now: DateTime<Utc>,
    actor: &str,
) -> Vec<GateTransition> {
    // Clusters with the same applying overrides share one evaluation (a
    // gate on thousands of clusters evaluates a handful of sets).
    let mut cache: HashMap<(bool, Vec<String>), fleetgate_policy::Evaluation> = HashMap::new();
    let mut state = |v: Option<&Version<'_>>, is_after: bool, c: &Scoped| {
        let v = v.filter(|v| reaches(v.gate, v.within, c))?;
        let ovs = applying(v.gate, c, overrides, freezes);
        let key = (is_after, ovs.iter().map(|o| o.id.clone()).collect());
        Some(
            cache
                .entry(key)
                .or_insert_with(|| v.compiled.evaluate(now, &ovs))
                .clone(),
        )
    };
    // Per new state: the clusters, the reason, and their next transition (the earliest).
    let mut groups: StateGroups = BTreeMap::new();
    for c in clusters {
        let old = state(before, false, c);
        let new = state(after, true, c);
        let open = |e: &Option<fleetgate_policy::Evaluation>| {
            e.as_ref().is_none_or(|e| e.state == GateState::Open)
        };
        if open(&old) == open(&new) {
            continue;
        }
        let (to, reason) = match &new {
            Some(e) => (e.state.as_str(), e.reason.clone()),
            None if after.is_none() => ("open", format!("gate '{name}' was deleted")),
            None => (
                "open",
                format!("gate '{name}' no longer selects this cluster"),
            ),
        };
        let next = new.as_ref().and_then(|e| e.next_transition);
        let g = groups
            .entry(to)
            .or_insert_with(|| (Vec::new(), reason, next));
        g.0.push(c.name.clone());
        g.2 = earliest(g.2, next);
    }
    groups
        .into_iter()
        .map(|(state, (clusters, reason, next))| GateTransition {
            gate: name.to_string(),
            state: state.to_string(),
            clusters,
            reason,
            cause: Cause::Manifest,
            at: now,
            next_transition: next,
            actor: Some(actor.to_string()),
        })
        .collect()
}
