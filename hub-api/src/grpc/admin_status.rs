//! Fleet and cluster status (the service's `fleet` views) as admin API messages: a
//! cluster's gates, governed and held objects, report problems and local gates, and the
//! fleet summary.

use fleetgate_proto::v1 as pb;

use super::admin_convert::{cluster, override_info};
use super::convert::{count, count_i64, held_object, reported_object, ts};
use crate::service::fleet::{
    ClusterCounts, ClusterStatus, FleetSummary, GateStatus, GateSummary, HeldObjectStatus,
    ObjectCounts, ObjectStatus,
};

fn object(status: ObjectStatus) -> pb::GovernedObject {
    let o = status.object;
    reported_object!(pb::GovernedObject, o,
        text: Option::unwrap_or_default,
        number: |n: Option<i64>| n.unwrap_or(0),
        reported_at: ts(status.reported_at),
        report_revision: status
            .report_revision
            .and_then(|r| u64::try_from(r).ok())
            .unwrap_or(0),
    )
}

fn held_object(h: HeldObjectStatus) -> pb::HeldObject {
    let o = h.object;
    held_object!(pb::HeldObject, o,
        text: Option::unwrap_or_default,
        held_since: o.held_since.and_then(ts),
        held: h.held,
        reported_at: ts(h.reported_at),
    )
}

fn gate_status(g: GateStatus) -> pb::GateStatus {
    pb::GateStatus {
        gate: g.gate,
        state: g.state,
        reason: g.reason,
        next_transition: g.next_transition.and_then(ts),
        held: u32::try_from(g.held).unwrap_or(u32::MAX),
        objects: g.objects.into_iter().map(object).collect(),
        held_objects: u32::try_from(g.held_objects).unwrap_or(u32::MAX),
        rollout: g.rollout.map(|r| r.describe()).unwrap_or_default(),
        enforcement: g.enforcement,
        would_suspend: u32::try_from(g.would_suspend).unwrap_or(u32::MAX),
        would_hold: u32::try_from(g.would_hold).unwrap_or(u32::MAX),
        rollout_failure: g.rollout_failure.map(|f| f.describe()).unwrap_or_default(),
        may_operate: g.may_operate,
        would_hold_objects: u32::try_from(g.would_hold_objects).unwrap_or(u32::MAX),
    }
}

fn object_counts(c: ObjectCounts) -> pb::ObjectCounts {
    pb::ObjectCounts {
        governed: count_i64(c.governed),
        held: count_i64(c.held),
        suspended: count_i64(c.suspended),
        held_objects: count_i64(c.held_objects),
        held_objects_by_person: count_i64(c.held_objects_by_person),
        held_objects_waiting: count_i64(c.held_objects_waiting),
        held_objects_not_permitted: count_i64(c.held_objects_not_permitted),
        would_suspend: count_i64(c.would_suspend),
        would_hold: count_i64(c.would_hold),
        would_hold_objects: count_i64(c.would_hold_objects),
        would_hold_objects_waiting: count_i64(c.would_hold_objects_waiting),
    }
}

/// One cluster's status.
pub fn cluster_status(s: ClusterStatus) -> pb::ClusterStatus {
    pb::ClusterStatus {
        cluster: Some(cluster(s.cluster)),
        gates: s.gates.into_iter().map(gate_status).collect(),
        objects: s.objects.into_iter().map(object).collect(),
        counts: Some(object_counts(s.counts)),
        at: ts(s.at),
        open: s.open,
        closed_by: s.closed_by,
        would_close_by: s.would_close_by,
        next_transition: s.next_transition.and_then(ts),
        local_requests: s.local_requests.into_iter().map(override_info).collect(),
        held_objects: s.held_objects.into_iter().map(held_object).collect(),
        local_gates: s.local_gates.into_iter().map(local_gate).collect(),
        report_problems: Some(report_problems(s.report_problems)),
    }
}

/// How the hub stored a cluster's latest report.
pub fn report_problems(p: crate::db::reports::ReportProblems) -> pb::ReportProblems {
    pb::ReportProblems {
        items: (p.items.into_iter())
            .map(|i| pb::ReportProblem {
                field: i.field,
                object: i.object,
                action: i.action,
                message: i.message,
            })
            .collect(),
        total: p.total,
        write_error: p.write_error.unwrap_or_default(),
        write_error_at: p.write_error_at.and_then(ts),
    }
}

/// A Gate object made in a cluster, as its spoke reported it.
pub fn local_gate(g: crate::service::fleet::LocalGate) -> pb::LocalGate {
    pb::LocalGate {
        name: g.name,
        enforced: g.enforced,
        state: g.state,
        reason: g.reason,
        message: g.message,
        next_transition: g.next_transition.and_then(ts),
        governed: g.governed,
        held: g.held,
        ready: g.ready,
        ready_reason: g.ready_reason,
        ready_message: g.ready_message,
    }
}

fn cluster_counts(c: ClusterCounts) -> pb::ClusterCounts {
    pb::ClusterCounts {
        total: count(c.total),
        connected: count(c.connected),
        disconnected: count(c.disconnected),
        open: count(c.open),
        closed: count(c.closed),
        with_held: count(c.with_held),
        with_held_objects: count(c.with_held_objects),
        rollout_failed: count(c.rollout_failed),
    }
}

fn gate_summary(g: GateSummary) -> pb::GateSummary {
    pb::GateSummary {
        gate: g.gate,
        clusters: count(g.clusters),
        open: count(g.open),
        closed: count(g.closed),
        held_objects: count_i64(g.held_objects),
        enforcement: g.enforcement,
        would_suspend: count_i64(g.would_suspend),
        would_hold_objects: count_i64(g.would_hold_objects),
    }
}

/// The fleet summary.
pub fn fleet_status(s: FleetSummary) -> pb::FleetStatus {
    pb::FleetStatus {
        at: ts(s.at),
        revision: count_i64(s.revision),
        clusters: Some(cluster_counts(s.clusters)),
        gates: s.gates.into_iter().map(gate_summary).collect(),
        objects: Some(object_counts(s.objects)),
        disconnected: s.disconnected,
        rollout_failures: s
            .rollout_failures
            .into_iter()
            .map(|f| pb::RolloutFailure {
                cluster: f.cluster,
                gate: f.gate,
                rollout_id: f.failure.rollout_id,
                state: f.failure.state.as_str().to_string(),
                wave: f.failure.wave,
                wave_name: f.failure.wave_name,
                failed_at: ts(f.failure.failed_at),
                detail: f.failure.detail,
            })
            .collect(),
    }
}
