//! Metrics of a replica's spoke side, registered into the hub's `/metrics`
//! registry (prefix `fleetgate_hub_grpc_`): connected spokes, snapshots sent,
//! stream ends by reason, report ingestion, and the change listener's activity.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::held::HeldObjectMetrics;
use super::local_gates::LocalGateMetrics;
use crate::db::held_objects::HeldObject;
use crate::db::reports::LocalGate;

/// Why a spoke stream ended.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EndLabels {
    /// `drain`, `max_age`, `client_closed`, `client_error`, `unauthenticated`,
    /// `invalid_argument`, `permission_denied`.
    pub reason: String,
}

/// What became of an open/close request made in a cluster that its spoke reported.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct LocalRequestLabels {
    /// `open` or `closed`; `invalid` when the message did not parse.
    pub state: String,
    /// `recorded` (a new audited override), `duplicate` (a resend, or already
    /// over) or `refused` (the gate does not allow it, or bad fields).
    pub result: String,
}

/// What the hub did with an object of a report it could not store as sent.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReportProblemLabels {
    /// `replaced` (U+0000 stored as U+FFFD) or `dropped` (left out).
    pub action: String,
}

/// Counters and gauges of the gRPC side. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct GrpcMetrics {
    pub spokes_connected: Gauge,
    pub snapshots_sent: Counter,
    /// Snapshots over `SNAPSHOT_MAX_BYTES`, sent as a closing snapshot instead.
    pub snapshots_over_budget: Counter,
    pub stream_ends: Family<EndLabels, Counter>,
    pub reports_received: Counter,
    pub report_flushes: Counter,
    pub report_flush_failures: Counter,
    /// Reports the database refused as a whole, set aside so the rest of
    /// their batch was written.
    pub report_write_failures: Counter,
    /// Objects of received reports stored repaired or left out.
    pub report_problems: Family<ReportProblemLabels, Counter>,
    pub notifications: Counter,
    pub listener_connects: Counter,
    pub local_requests: Family<LocalRequestLabels, Counter>,
    /// Held-object gauges of the clusters this replica serves (registered
    /// without the `grpc_` prefix).
    pub held_objects: HeldObjectMetrics,
    /// Local-gate gauges of the clusters this replica serves (no prefix).
    pub local_gates: LocalGateMetrics,
    /// Warn-mode would-suspend gauges of the clusters this replica serves (no prefix).
    pub would_hold: super::WouldHoldMetrics,
}

impl GrpcMetrics {
    /// Counts the problems of one received report, by action.
    pub fn count_report_problems(&self, problems: &[crate::db::reports::ReportProblem]) {
        for p in problems {
            self.report_problems
                .get_or_create(&ReportProblemLabels {
                    action: p.action.clone(),
                })
                .inc();
        }
    }

    /// Registers every metric under `grpc_` in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        self.held_objects.register(registry);
        self.local_gates.register(registry);
        self.would_hold.register(registry);
        let r = registry.sub_registry_with_prefix("grpc");
        r.register(
            "spokes_connected",
            "Spoke streams open on this replica",
            self.spokes_connected.clone(),
        );
        r.register(
            "snapshots_sent",
            "Snapshots sent to spokes",
            self.snapshots_sent.clone(),
        );
        r.register(
            "snapshots_over_budget",
            "Snapshots over the snapshot budget, sent as a closing snapshot (a freeze by the hub) instead",
            self.snapshots_over_budget.clone(),
        );
        r.register(
            "stream_ends",
            "Spoke streams ended, by reason",
            self.stream_ends.clone(),
        );
        r.register(
            "reports_received",
            "Status reports received from spokes",
            self.reports_received.clone(),
        );
        r.register(
            "report_write_failures",
            "Cluster reports the database refused as a whole (set aside; the rest of the batch was written)",
            self.report_write_failures.clone(),
        );
        r.register(
            "report_problems",
            "Objects of received reports stored with U+0000 replaced (action=replaced) or left out (action=dropped)",
            self.report_problems.clone(),
        );
        r.register(
            "report_flushes",
            "Batched status-report writes committed",
            self.report_flushes.clone(),
        );
        r.register(
            "report_flush_failures",
            "Batched status-report writes that failed (retried)",
            self.report_flush_failures.clone(),
        );
        r.register(
            "change_notifications",
            "Change notifications received by the listener",
            self.notifications.clone(),
        );
        r.register(
            "listener_connects",
            "(Re)connections of the change listener, each followed by a resync",
            self.listener_connects.clone(),
        );
        r.register(
            "local_requests",
            "Open/close requests made in clusters that spokes reported, by state and result",
            self.local_requests.clone(),
        );
    }

    /// Counts a reported request made in a cluster.
    pub fn local_request(&self, state: &str, result: &str) {
        self.local_requests
            .get_or_create(&LocalRequestLabels {
                state: state.to_string(),
                result: result.to_string(),
            })
            .inc();
    }

    /// Sets `cluster`'s held-object gauges from its latest report.
    pub fn set_held_objects(&self, cluster: &str, objects: &[HeldObject]) {
        self.held_objects.set(cluster, objects);
    }

    /// Sets `cluster`'s local-gate gauges from its latest report.
    pub fn set_local_gates(&self, cluster: &str, gates: &[LocalGate]) {
        self.local_gates.set(cluster, gates);
    }

    /// Drops `cluster`'s local-gate gauges (its stream left this replica).
    pub fn forget_local_gates(&self, cluster: &str) {
        self.local_gates.forget(cluster);
    }

    /// Drops `cluster`'s held-object gauges (its stream left this replica).
    pub fn forget_held_objects(&self, cluster: &str) {
        self.held_objects.forget(cluster);
        self.would_hold.forget(cluster);
    }

    /// Counts a stream end.
    pub fn stream_ended(&self, reason: &str) {
        self.stream_ends
            .get_or_create(&EndLabels {
                reason: reason.to_string(),
            })
            .inc();
    }
}
