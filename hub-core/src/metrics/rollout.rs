//! Rollout metrics: `fleetgate_hub_rollout_events_total{gate,action}` counts every step a
//! replica's driver (or an operator's command) took — releases, halts, completions — and
//! `fleetgate_hub_rollout_step_errors_total` the driver's failed steps. Each step runs on
//! one replica only, so summing over replicas counts it once.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use crate::rollout::Event;

/// A rollout event's series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RolloutLabels {
    pub gate: String,
    pub action: String,
}

/// The rollout counters. Cheap to clone (shared cells).
#[derive(Debug, Clone, Default)]
pub struct RolloutMetrics {
    pub events: Family<RolloutLabels, Counter>,
    pub errors: Counter,
}

impl RolloutMetrics {
    /// Registers the counters in `registry`.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "rollout_events",
            "Rollout steps by gate and action (rollout.release, rollout.halt, ...)",
            self.events.clone(),
        );
        registry.register(
            "rollout_step_errors",
            "Rollout driver steps that failed (retried on the next tick)",
            self.errors.clone(),
        );
    }

    /// Counts `events` (the driver's steps, an operator's command from any surface).
    pub fn record(&self, events: &[Event]) {
        for e in events {
            self.events
                .get_or_create(&RolloutLabels {
                    gate: e.gate.clone(),
                    action: e.action.to_string(),
                })
                .inc();
        }
    }
}
