//! Gate states per cluster: one cluster's status with every object its spoke
//! reported, and the fleet status (`GET /api/v1/status/clusters`) — the
//! summary plus each cluster's gates with reason, next transition and held
//! count, what `fleetgate status` shows.

use fleetgate_policy::LabelSelector;

use super::evaluate::{ClusterEvals, Evaluated, evaluate};
use super::inputs::FleetInputs;
use super::summary::{ObjectCounts, rollout_failure, summary};
use crate::db::status::ObjectStatus;
use crate::service::types::OverrideRecord;
use crate::{Error, Result};

pub use fleetgate_api_types::status::{
    ClusterBrief, ClusterRollout, ClusterStatus, FleetStatus, GateBrief, GateStatus, RolloutFailure,
};

/// The status of the one cluster of a [`super::Scope::Cluster`] read.
pub(super) fn cluster_status(inputs: FleetInputs) -> Result<ClusterStatus> {
    let evals = evaluate(&inputs)?;
    let cluster = evals
        .clusters
        .first()
        .ok_or_else(|| Error::Internal("cluster read without its cluster".into()))?;
    let objects = &inputs.reported.objects;
    let held_list = &inputs.reported.held_object_list;
    let local_gates = inputs
        .reported
        .local_gates_of(&cluster.cluster.row.name)
        .to_vec();
    let combined = cluster.combined_with(&local_gates);
    let next_transition = evals.next_change_with(cluster, &local_gates);
    let gates = cluster
        .gates
        .iter()
        .map(|(gate, e)| {
            let governed: Vec<ObjectStatus> = objects
                .iter()
                .filter(|o| o.object.gates.iter().any(|g| g == gate.name()))
                .cloned()
                .collect();
            GateStatus {
                held: governed.iter().filter(|o| o.object.held).count(),
                held_objects: held_list
                    .iter()
                    .filter(|h| h.object.held_by.iter().any(|g| g == gate.name()))
                    .count(),
                enforcement: gate.enforcement(),
                would_suspend: governed
                    .iter()
                    .filter(|o| o.object.would_suspend_by.iter().any(|g| g == gate.name()))
                    .count(),
                would_hold: governed
                    .iter()
                    .filter(|o| {
                        o.object.would_hold
                            && o.object.would_suspend_by.iter().any(|g| g == gate.name())
                    })
                    .count(),
                would_hold_objects: held_list
                    .iter()
                    .filter(|h| h.object.would_hold_by.iter().any(|g| g == gate.name()))
                    .count(),
                objects: governed,
                gate: gate.name().to_string(),
                state: e.state.as_str().to_string(),
                reason: e.reason.clone(),
                next_transition: e.next_transition,
                rollout: None,
                rollout_failure: rollout_failure(&inputs, gate.name(), &cluster.cluster.row.name),
                may_operate: false,
            }
        })
        .collect();
    let fleetgate_held = held_list.iter().filter(|h| !h.object.held_by.is_empty());
    let counts = ObjectCounts {
        governed: objects.iter().filter(|o| !o.object.ignored).count() as i64,
        held: objects.iter().filter(|o| o.object.held).count() as i64,
        suspended: objects.iter().filter(|o| o.object.suspended).count() as i64,
        held_objects: fleetgate_held.clone().count() as i64,
        held_objects_by_person: held_list.iter().filter(|h| h.object.held_by_person).count() as i64,
        held_objects_waiting: fleetgate_held
            .filter(|h| h.object.newer_revision_applied)
            .count() as i64,
        held_objects_not_permitted: held_list.iter().filter(|h| h.object.not_permitted).count()
            as i64,
        would_suspend: objects
            .iter()
            .filter(|o| !o.object.would_suspend_by.is_empty())
            .count() as i64,
        would_hold: objects.iter().filter(|o| o.object.would_hold).count() as i64,
        would_hold_objects: held_list
            .iter()
            .filter(|h| !h.object.would_hold_by.is_empty())
            .count() as i64,
        would_hold_objects_waiting: held_list
            .iter()
            .filter(|h| h.object.would_hold_newer_revision)
            .count() as i64,
    };
    let name = &cluster.cluster.row.name;
    let mut local_requests: Vec<OverrideRecord> = inputs
        .overrides
        .values()
        .flatten()
        .filter(|o| o.requested_in.as_ref() == Some(name))
        .cloned()
        .collect();
    local_requests.sort_by_key(|o| std::cmp::Reverse((o.created_at, o.id)));
    Ok(ClusterStatus {
        report_problems: inputs.reported.report_problems.clone(),
        local_requests,
        local_gates,
        cluster: cluster.cluster.row.clone(),
        at: inputs.at,
        open: combined.open,
        closed_by: combined.closed_by,
        would_close_by: cluster.would_close(),
        next_transition,
        gates,
        objects: objects.clone(),
        held_objects: held_list.clone(),
        counts,
    })
}

/// The summary of a fleet read and the briefs of its clusters matching
/// `selector` (all without one).
pub fn fleet_status(inputs: &FleetInputs, selector: Option<&LabelSelector>) -> Result<FleetStatus> {
    fleet_status_page(inputs, selector, None)
}

/// A page of clusters: at most `limit` of them, the first whose names sort after `after`
/// (by their bytes).
#[derive(Debug, Clone, Copy)]
pub struct ClusterPage<'a> {
    pub after: Option<&'a str>,
    pub limit: usize,
}

/// [`fleet_status`] with its clusters paged by name (`page`; none: every cluster). Only
/// the page's briefs are built; the summary counts the whole fleet either way.
pub fn fleet_status_page(
    inputs: &FleetInputs,
    selector: Option<&LabelSelector>,
    page: Option<ClusterPage<'_>>,
) -> Result<FleetStatus> {
    let evals = evaluate(inputs)?;
    let summary = summary(inputs, &evals)?;
    let mut matching: Vec<&ClusterEvals<'_>> = evals
        .clusters
        .iter()
        .filter(|c| selector.is_none_or(|s| s.matches(&c.cluster.row.labels)))
        .collect();
    let mut next_cursor = None;
    if let Some(p) = page {
        // Paged by byte order of the names, whatever the database's collation.
        matching.sort_by(|a, b| a.cluster.row.name.cmp(&b.cluster.row.name));
        matching.retain(|c| p.after.is_none_or(|a| c.cluster.row.name.as_str() > a));
        if matching.len() > p.limit {
            matching.truncate(p.limit);
            next_cursor = matching.last().map(|c| c.cluster.row.name.clone());
        }
    }
    let clusters = matching
        .into_iter()
        .map(|c| brief(inputs, &evals, c))
        .collect();
    let freezes = inputs
        .freezes
        .iter()
        .filter(|f| f.starts_at <= inputs.at)
        .cloned()
        .collect();
    Ok(FleetStatus {
        summary,
        clusters,
        freezes,
        next_cursor,
    })
}

fn brief(inputs: &FleetInputs, all: &Evaluated<'_>, evals: &ClusterEvals<'_>) -> ClusterBrief {
    let row = &evals.cluster.row;
    let local = inputs.reported.local_gates_of(&row.name);
    let combined = evals.combined_with(local);
    let gates = evals
        .gates
        .iter()
        .map(|(gate, e)| GateBrief {
            held: inputs
                .reported
                .held_by_gate
                .get(&(row.name.clone(), gate.name().to_string()))
                .copied()
                .unwrap_or(0),
            held_objects: inputs
                .reported
                .held_objects_by_gate
                .get(&(row.name.clone(), gate.name().to_string()))
                .copied()
                .unwrap_or(0),
            would_suspend: inputs
                .reported
                .would_suspend_by_gate
                .get(&(row.name.clone(), gate.name().to_string()))
                .copied()
                .unwrap_or(0),
            enforcement: gate.enforcement(),
            gate: gate.name().to_string(),
            state: e.state.as_str().to_string(),
            reason: e.reason.clone(),
            next_transition: e.next_transition,
            rollout_failure: rollout_failure(inputs, gate.name(), &row.name),
            would_hold_objects: inputs
                .reported
                .would_hold_objects_by_gate
                .get(&(row.name.clone(), gate.name().to_string()))
                .copied()
                .unwrap_or(0),
        })
        .collect();
    ClusterBrief {
        counts: inputs
            .reported
            .counts
            .get(&row.name)
            .cloned()
            .unwrap_or_default(),
        cluster: row.clone(),
        open: combined.open,
        closed_by: combined.closed_by,
        would_close_by: evals.would_close(),
        next_transition: all.next_change_with(evals, local),
        gates,
    }
}
