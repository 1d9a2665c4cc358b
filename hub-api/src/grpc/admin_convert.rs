//! Conversions of the service layer's types to admin API messages, and of
//! request fields to service inputs (timestamps, UUIDs, page requests).

use chrono::{DateTime, Utc};
use fleetgate_proto::time::{from_timestamp, to_timestamp};
use fleetgate_proto::v1 as pb;
use tonic::Status;
use uuid::Uuid;

use super::convert::{count, count_i64, invalid, ts};
use crate::service::PageRequest;
use crate::service::types::{ApiToken, AuditEntry, Cluster, GateRecord, OverrideRecord};

/// An optional request timestamp; INVALID_ARGUMENT naming `field` if out of range.
pub fn opt_time(
    field: &str,
    t: Option<&prost_types::Timestamp>,
) -> Result<Option<DateTime<Utc>>, Status> {
    t.map(|t| from_timestamp(t).ok_or_else(|| invalid(field, "timestamp out of range")))
        .transpose()
}

/// A UUID request field.
pub fn uuid(field: &str, s: &str) -> Result<Uuid, Status> {
    Uuid::parse_str(s).map_err(|_| invalid(field, format!("'{s}' is not a UUID")))
}

/// `limit` (0 = default) and `cursor` ("" = first page) as a page request.
pub fn page(limit: u32, cursor: &str) -> PageRequest {
    PageRequest {
        limit: (limit != 0).then_some(limit),
        cursor: (!cursor.is_empty()).then(|| cursor.to_string()),
    }
}

/// "" as None.
pub fn non_empty(s: &str) -> Option<&str> {
    (!s.is_empty()).then_some(s)
}

/// A next-page cursor ("" on the last page).
pub fn cursor(next: Option<String>) -> String {
    next.unwrap_or_default()
}

/// A stored gate.
pub fn gate(g: GateRecord) -> pb::GateInfo {
    let description = fleetgate_policy::parse_gate_json(g.manifest.clone())
        .ok()
        .and_then(|gate| gate.compile().ok())
        .map(|c| c.describe())
        .unwrap_or_default();
    pb::GateInfo {
        name: g.name,
        version: count_i64(g.version),
        manifest_json: g.manifest.to_string(),
        created_at: ts(g.created_at),
        updated_at: ts(g.updated_at),
        description,
        warnings: g
            .warnings
            .into_iter()
            .map(|w| pb::FieldWarning {
                path: w.path,
                message: w.message,
            })
            .collect(),
        calendars: g.calendars.into_iter().map(calendar_status).collect(),
    }
}

/// A calendar feed's status.
fn calendar_status(c: fleetgate_api_types::records::CalendarFeedStatus) -> pb::CalendarFeedStatus {
    pb::CalendarFeedStatus {
        window: c.window,
        url: c.url,
        last_fetch_at: c.last_fetch_at.and_then(ts),
        last_change_at: c.last_change_at.and_then(ts),
        last_attempt_at: c.last_attempt_at.and_then(ts),
        error: c.error.unwrap_or_default(),
        failures: u32::try_from(c.failures).unwrap_or(0),
        next_fetch_at: ts(c.next_fetch_at),
        stale: c.stale,
        stale_at: c.stale_at.and_then(ts),
        occurrences: u32::try_from(c.occurrences).unwrap_or(u32::MAX),
        rejected: c.rejected,
        state: c.state.as_str().to_string(),
    }
}

/// A stored override.
pub fn override_info(o: OverrideRecord) -> pb::OverrideInfo {
    let (clusters, selector) = match o.clusters {
        Some(scope) => (
            scope.names,
            scope
                .selector
                .and_then(|s| serde_json::to_string(&s).ok())
                .unwrap_or_default(),
        ),
        None => (Vec::new(), String::new()),
    };
    pb::OverrideInfo {
        id: o.id.to_string(),
        gate: o.gate,
        state: o.state,
        clusters,
        starts_at: ts(o.starts_at),
        expires_at: o.expires_at.and_then(ts),
        actor: o.actor,
        reason: o.reason,
        created_at: ts(o.created_at),
        cancelled_at: o.cancelled_at.and_then(ts),
        cancelled_by: o.cancelled_by.unwrap_or_default(),
        cluster_selector_json: selector,
        requested_in: o.requested_in.unwrap_or_default(),
        requested_by: o.requested_by.unwrap_or_default(),
        narrowed: o.narrowed.unwrap_or_default(),
        emergency: o.emergency,
        approval_request: o
            .approval_request
            .map(|id| id.to_string())
            .unwrap_or_default(),
    }
}

/// A fleet freeze.
pub fn freeze_info(f: fleetgate_api_types::FreezeRecord) -> pb::FreezeInfo {
    let (clusters, selector) = match f.clusters {
        Some(scope) => (
            scope.names,
            scope
                .selector
                .and_then(|s| serde_json::to_string(&s).ok())
                .unwrap_or_default(),
        ),
        None => (Vec::new(), String::new()),
    };
    pb::FreezeInfo {
        id: f.id.to_string(),
        clusters,
        cluster_selector_json: selector,
        reason: f.reason,
        starts_at: ts(f.starts_at),
        expires_at: f.expires_at.and_then(ts),
        actor: f.actor,
        created_at: ts(f.created_at),
        requested_in: f.requested_in.unwrap_or_default(),
        requested_by: f.requested_by.unwrap_or_default(),
        ended_at: f.ended_at.and_then(ts),
        ended_by: f.ended_by.unwrap_or_default(),
        end_reason: f.end_reason.unwrap_or_default(),
    }
}

/// A registered cluster.
pub fn cluster(c: Cluster) -> pb::ClusterInfo {
    pb::ClusterInfo {
        name: c.name,
        labels: c.labels.into_iter().collect(),
        connected: c.connected,
        connected_replica: c.connected_replica.unwrap_or_default(),
        last_seen_at: c.last_seen_at.and_then(ts),
        spoke_skew: fleetgate_api_types::version::spoke_skew_here(c.spoke_version.as_deref())
            .to_string(),
        spoke_version: c.spoke_version.unwrap_or_default(),
        clock_offset_ms: c.clock_offset_ms.unwrap_or(0),
        desired_revision: count_i64(c.desired_revision),
        created_at: ts(c.created_at),
        identity_issuer: c
            .identity
            .as_ref()
            .map(|i| i.issuer.clone())
            .unwrap_or_default(),
        identity_subject: c
            .identity
            .as_ref()
            .map(|i| i.subject.clone())
            .unwrap_or_default(),
        identity_jwks_pinned: c.identity.is_some_and(|i| i.jwks_pinned),
        snapshot_persistence: c.snapshot_persistence.map(snapshot_persistence),
        snapshot_over_budget: c.snapshot_over_budget.map(snapshot_over_budget),
    }
}

/// What a cluster's spoke reported of its persisted snapshot (`ClusterInfo`, WatchFleet's
/// `SnapshotStateChanged`).
pub fn snapshot_persistence(
    p: fleetgate_api_types::SnapshotPersistence,
) -> pb::SnapshotPersistence {
    pb::SnapshotPersistence {
        state: p.state,
        persisted_revision: p.persisted_revision,
        stored_bytes: p.stored_bytes,
        json_bytes: p.json_bytes,
        config_maps: p.config_maps,
        error: p.error.unwrap_or_default(),
        failing_revision: p.failing_revision.unwrap_or(0),
        failing_since: p.failing_since.and_then(ts),
    }
}

/// A cluster held closed for a snapshot over its budget (`ClusterInfo`, WatchFleet's
/// `SnapshotStateChanged`).
pub fn snapshot_over_budget(o: fleetgate_api_types::SnapshotOverBudget) -> pb::SnapshotOverBudget {
    pb::SnapshotOverBudget {
        bytes: o.bytes,
        budget: o.budget,
        revision: o.revision,
        since: ts(o.since),
    }
}

/// An audit entry.
pub fn audit_entry(e: AuditEntry) -> pb::AuditEntry {
    let json = |v: Option<serde_json::Value>| v.map(|v| v.to_string()).unwrap_or_default();
    pb::AuditEntry {
        id: e.id,
        at: ts(e.at),
        actor: e.actor,
        action: e.action,
        target_kind: e.target_kind,
        target_name: e.target_name,
        before_json: json(e.before),
        after_json: json(e.after),
        reason: e.reason.unwrap_or_default(),
        actor_kind: e.actor_kind.unwrap_or_default(),
        actor_issuer: e.actor_issuer.unwrap_or_default(),
        actor_subject: e.actor_subject.unwrap_or_default(),
        actor_email: e.actor_email.unwrap_or_default(),
        actor_groups: e.actor_groups.unwrap_or_default(),
        granted_by: e.granted_by.unwrap_or_default(),
    }
}

/// An API token (no secret).
pub fn api_token(t: ApiToken) -> pb::ApiTokenInfo {
    pb::ApiTokenInfo {
        id: t.id.to_string(),
        name: t.name,
        role: t.role,
        created_at: ts(t.created_at),
        revoked_at: t.revoked_at.and_then(ts),
        scope: t
            .scope
            .map(|s| serde_json::to_string(&s).unwrap_or_default())
            .unwrap_or_default(),
    }
}

/// A gate preview.
pub fn preview(p: fleetgate_policy::Preview) -> pb::PreviewGateResponse {
    pb::PreviewGateResponse {
        gate: p.gate,
        initial_state: p.initial.state.to_string(),
        initial_reason: p.initial.reason,
        transitions: p
            .transitions
            .into_iter()
            .map(|t| pb::Transition {
                at: ts(t.at),
                state: t.state.to_string(),
                reason: t.reason,
            })
            .collect(),
        rollouts: p
            .rollouts
            .into_iter()
            .map(|r| pb::RolloutEstimate {
                opening_at: ts(r.opening_at),
                closes_at: r.closes_at.and_then(ts),
                waves: r
                    .waves
                    .into_iter()
                    .map(|w| pb::WaveEstimate {
                        wave: w.wave,
                        name: w.name,
                        estimated_release_at: ts(w.estimated_release_at),
                        approval: w.approval,
                        after_close: w.after_close,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// A rollout's status as `RolloutInfo`.
pub fn rollout_info(s: crate::service::rollouts::RolloutStatus) -> pb::RolloutInfo {
    pb::RolloutInfo {
        gate: s.gate,
        id: s.id,
        state: s.state.as_str().to_string(),
        opening_at: ts(s.opening_at),
        started_at: ts(s.started_at),
        ended_at: s.ended_at.and_then(ts),
        wave: s.wave,
        waiting_for_approval: s.waiting_for_approval,
        soak_until: s.soak_until.and_then(ts),
        health_deadline: s.health_deadline.and_then(ts),
        detail: s.detail.unwrap_or_default(),
        waves: s
            .waves
            .into_iter()
            .map(|w| pb::RolloutWave {
                index: w.index,
                name: w.name,
                approval: w.approval,
                state: w.state,
                estimated_release_at: w.estimated_release_at.and_then(ts),
                clusters: w
                    .clusters
                    .into_iter()
                    .map(|c| pb::RolloutCluster {
                        name: c.name,
                        released_at: c.released_at.and_then(ts),
                        health: c.health.as_str().to_string(),
                        detail: c.detail.unwrap_or_default(),
                        late: c.late,
                        bypass: c.bypass,
                    })
                    .collect(),
            })
            .collect(),
    }
}

/// A dashboard session (no secret).
pub fn session(s: fleetgate_api_types::SessionRecord) -> pb::SessionInfo {
    let id = s.identity;
    pb::SessionInfo {
        id: s.id.to_string(),
        identity: Some(pb::IdentityInfo {
            kind: match id.kind {
                fleetgate_api_types::IdentityKind::Person => "person",
                fleetgate_api_types::IdentityKind::Workload => "workload",
            }
            .into(),
            issuer: id.issuer,
            subject: id.subject,
            name: id.name,
            email: id.email.unwrap_or_default(),
            groups: id.groups,
        }),
        created_at: ts(s.created_at),
        expires_at: ts(s.expires_at),
        last_used_at: s.last_used_at.and_then(ts),
        user_agent: s.user_agent.unwrap_or_default(),
        current: s.current,
    }
}

/// A gate's impact preview.
pub fn gate_impact(i: fleetgate_api_types::impact::GateImpact) -> pb::GateImpact {
    let object = |o: fleetgate_api_types::impact::ObjectRef| pb::ImpactObject {
        kind: o.kind,
        namespace: o.namespace,
        name: o.name,
    };
    pb::GateImpact {
        gate: i.gate,
        action: i.action,
        stored_version: i.stored_version.map_or(0, count_i64),
        at: ts(i.at),
        enforcement: i.enforcement,
        added: i.added,
        removed: i.removed,
        clusters: (i.clusters.into_iter())
            .map(|c| pb::ClusterImpact {
                cluster: c.cluster,
                change: c.change,
                connected: c.connected,
                state: c.state,
                reason: c.reason,
                transitions: (c.transitions.into_iter())
                    .map(|t| pb::ImpactTransition {
                        at: ts(t.at),
                        state: t.state,
                        reason: t.reason,
                    })
                    .collect(),
                inventory_reported: c.inventory_reported,
                governed: c.governed.into_iter().map(object).collect(),
                would_hold: c.would_hold.into_iter().map(object).collect(),
                wave: c.wave.unwrap_or(0),
                wave_name: c.wave_name.unwrap_or_default(),
            })
            .collect(),
        waves: (i.waves.into_iter())
            .map(|w| pb::ImpactWave {
                wave: w.wave,
                name: w.name,
                approval: w.approval,
                clusters: w.clusters,
                estimated_release_at: w.estimated_release_at.and_then(ts),
                after_close: w.after_close,
            })
            .collect(),
        clusters_governed: count(i.counts.clusters),
        clusters_closed: count(i.counts.closed),
        objects_governed: count(i.counts.governed),
        objects_would_hold: count(i.counts.would_hold),
    }
}

/// A request as its admin message.
pub fn approval_info(r: fleetgate_api_types::ApprovalRequest) -> pb::ApprovalInfo {
    let (clusters, selector) = match r.clusters {
        Some(s) => (
            s.names,
            s.selector
                .and_then(|s| serde_json::to_string(&s).ok())
                .unwrap_or_default(),
        ),
        None => (Vec::new(), String::new()),
    };
    pb::ApprovalInfo {
        id: r.id.to_string(),
        gate: r.gate,
        state: r.state,
        clusters,
        cluster_selector_json: selector,
        r#for: r.duration.unwrap_or_default(),
        starts_at: r.starts_at.map(to_timestamp),
        reason: r.reason,
        ticket: r.ticket.unwrap_or_default(),
        requester: r.requester,
        required: r.required,
        status: r.status,
        created_at: Some(to_timestamp(r.created_at)),
        expires_at: Some(to_timestamp(r.expires_at)),
        decided_at: r.decided_at.map(to_timestamp),
        decided_by: r.decided_by.unwrap_or_default(),
        decision_reason: r.decision_reason.unwrap_or_default(),
        override_id: r.override_id.map(|o| o.to_string()).unwrap_or_default(),
        approvals: r
            .approvals
            .into_iter()
            .map(|a| pb::ApprovalGiven {
                approver: a.approver,
                at: Some(to_timestamp(a.at)),
                reason: a.reason.unwrap_or_default(),
            })
            .collect(),
    }
}

/// What `approvals_decide` does.
#[derive(Debug, Clone, Copy)]
pub enum Decision {
    Approve,
    Reject,
    Cancel,
}
