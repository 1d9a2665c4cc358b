//! Approval and admission metrics: `fleetgate_hub_approval_requests_pending` (the
//! fleet's pending requests, read by each replica every few seconds: the same value on
//! every replica, so use `max`), `fleetgate_hub_approval_decisions_total{decision}` and
//! `fleetgate_hub_admission_calls_total{webhook,outcome}` (this replica's).

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DecisionLabels {
    /// requested, approved (each approval), rejected, cancelled, expired.
    pub decision: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AdmissionLabels {
    pub webhook: String,
    /// allowed, denied, failed, ignored.
    pub outcome: String,
}

/// Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct ApprovalMetrics {
    pending: Gauge,
    decisions: Family<DecisionLabels, Counter>,
    admission: Family<AdmissionLabels, Counter>,
}

impl ApprovalMetrics {
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "approval_requests_pending",
            "Override requests waiting for approval (whole fleet)",
            self.pending.clone(),
        );
        registry.register(
            "approval_decisions",
            "Approval requests made and decided on this replica, by decision",
            self.decisions.clone(),
        );
        registry.register(
            "admission_calls",
            "Admission webhook calls made by this replica, by webhook and outcome",
            self.admission.clone(),
        );
    }

    pub fn set_pending(&self, n: i64) {
        self.pending.set(n);
    }

    pub fn decided(&self, decision: &str) {
        self.decisions
            .get_or_create(&DecisionLabels {
                decision: decision.into(),
            })
            .inc();
    }

    pub fn admission_call(&self, webhook: &str, outcome: &str) {
        self.admission
            .get_or_create(&AdmissionLabels {
                webhook: webhook.into(),
                outcome: outcome.into(),
            })
            .inc();
    }
}
