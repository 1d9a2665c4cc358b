//! Prometheus metrics of the spoke (prometheus-client), served at `/metrics`.

use std::{sync::Arc, time::Instant};

use prometheus_client::{
    encoding::text::encode,
    metrics::{
        counter::Counter,
        family::Family,
        gauge::Gauge,
        histogram::{Histogram, exponential_buckets},
    },
    registry::Registry,
};

use crate::error::Error;

type Labels = Vec<(String, String)>;

/// Every metric the spoke exports.
pub struct Metrics {
    registry: Registry,
    pub objects_governed: Gauge,
    pub objects_suspended: Gauge,
    pub objects_held: Gauge,
    pub objects_would_suspend: Gauge,
    pub objects_would_hold: Gauge,
    pub applied_objects_held: Gauge,
    pub applied_objects_held_by_person: Gauge,
    pub applied_objects_not_permitted: Gauge,
    pub applied_objects_would_hold: Gauge,
    pub applied_objects_would_hold_waiting: Gauge,
    pub gates_closed: Gauge,
    pub frozen: Gauge,
    pub hub_connected: Gauge,
    pub snapshot_revision: Gauge,
    pub snapshot_persisted_revision: Gauge,
    pub snapshot_persisted_bytes: Gauge,
    pub snapshot_persisted_json_bytes: Gauge,
    pub snapshot_persisted_configmaps: Gauge,
    pub snapshot_persist_failing: Gauge,
    pub snapshot_persist_failures: Counter,
    pub snapshot_persist_duration: Histogram,
    pub patch_duration: Histogram,
    patches: Family<Labels, Counter>,
    errors: Family<Labels, Counter>,
    requests: Family<Labels, Counter>,
    pub reconciles: Counter,
    /// Events sent to Flux's notification-controller by outcome (`--events-addr`).
    pub flux_events: Family<Labels, Counter>,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("fleetgate_spoke");
        let m = Metrics {
            objects_governed: Gauge::default(),
            objects_suspended: Gauge::default(),
            objects_held: Gauge::default(),
            objects_would_suspend: Gauge::default(),
            objects_would_hold: Gauge::default(),
            applied_objects_held: Gauge::default(),
            applied_objects_held_by_person: Gauge::default(),
            applied_objects_not_permitted: Gauge::default(),
            applied_objects_would_hold: Gauge::default(),
            applied_objects_would_hold_waiting: Gauge::default(),
            gates_closed: Gauge::default(),
            frozen: Gauge::default(),
            hub_connected: Gauge::default(),
            snapshot_revision: Gauge::default(),
            snapshot_persisted_revision: Gauge::default(),
            snapshot_persisted_bytes: Gauge::default(),
            snapshot_persisted_json_bytes: Gauge::default(),
            snapshot_persisted_configmaps: Gauge::default(),
            snapshot_persist_failing: Gauge::default(),
            snapshot_persist_failures: Counter::default(),
            snapshot_persist_duration: Histogram::new(exponential_buckets(0.005, 2.0, 12)),
            patch_duration: Histogram::new(exponential_buckets(0.001, 2.0, 14)),
            patches: Family::default(),
            errors: Family::default(),
            requests: Family::default(),
            reconciles: Counter::default(),
            flux_events: Family::default(),
            registry: Registry::default(),
        };
        let build_info = Family::<Labels, Gauge>::default();
        build_info
            .get_or_create(&vec![
                ("version".to_owned(), env!("CARGO_PKG_VERSION").to_owned()),
                ("commit".to_owned(), env!("FLEETGATE_COMMIT").to_owned()),
            ])
            .set(1);
        registry.register(
            "build_info",
            "1, labelled with the spoke's version and the commit it was built from",
            build_info,
        );
        registry.register(
            "objects_governed",
            "Flux objects governed by at least one gate",
            m.objects_governed.clone(),
        );
        registry.register(
            "objects_suspended",
            "Governed Flux objects suspended by fleetgate",
            m.objects_suspended.clone(),
        );
        registry.register(
            "objects_held",
            "Governed Flux objects with a newer revision held by a closed gate",
            m.objects_held.clone(),
        );
        registry.register(
            "objects_would_suspend",
            "Governed Flux objects closed warn-mode gates would suspend if enforced (nothing is held)",
            m.objects_would_suspend.clone(),
        );
        registry.register(
            "objects_would_hold",
            "Governed Flux objects whose newer revision a closed warn-mode gate would hold",
            m.objects_would_hold.clone(),
        );
        registry.register(
            "applied_objects_held",
            "Objects inside Kustomizations fleetgate marks reconcile: disabled (holdObjects gates)",
            m.applied_objects_held.clone(),
        );
        registry.register(
            "applied_objects_held_by_person",
            "Objects of the held kinds a person marked reconcile: disabled, selected by a gate or not (left alone)",
            m.applied_objects_held_by_person.clone(),
        );
        registry.register(
            "applied_objects_not_permitted",
            "Objects holdObjects gates select whose kind --held-kinds does not enable: they cannot be held here (HoldNotPermitted)",
            m.applied_objects_not_permitted.clone(),
        );
        registry.register(
            "applied_objects_would_hold",
            "Objects inside Kustomizations closed warn-mode holdObjects gates would mark reconcile: disabled if enforced (nothing is marked)",
            m.applied_objects_would_hold.clone(),
        );
        registry.register(
            "applied_objects_would_hold_waiting",
            "Of those, objects whose Kustomization applied a newer revision since: enforced, their changes would wait",
            m.applied_objects_would_hold_waiting.clone(),
        );
        registry.register(
            "gates_closed",
            "Gates of the snapshot closed now",
            m.gates_closed.clone(),
        );
        registry.register(
            "frozen",
            "1 while a fleet freeze (the hub's or the cluster's fleetgate-freeze ConfigMap) is in force",
            m.frozen.clone(),
        );
        registry.register(
            "hub_connected",
            "1 while the stream to the hub is up",
            m.hub_connected.clone(),
        );
        registry.register(
            "snapshot_revision",
            "Revision of the snapshot being enforced (0: none)",
            m.snapshot_revision.clone(),
        );
        registry.register(
            "snapshot_persisted_revision",
            "Revision of the snapshot persisted in the cluster (0: none known); a restart without the hub enforces it",
            m.snapshot_persisted_revision.clone(),
        );
        registry.register(
            "snapshot_persisted_bytes",
            "Bytes the persisted snapshot takes in its ConfigMaps (gzipped when larger than one ConfigMap)",
            m.snapshot_persisted_bytes.clone(),
        );
        registry.register(
            "snapshot_persisted_json_bytes",
            "Bytes of the persisted snapshot's JSON",
            m.snapshot_persisted_json_bytes.clone(),
        );
        registry.register(
            "snapshot_persisted_configmaps",
            "ConfigMaps holding the persisted snapshot: the head, and its shards past one ConfigMap",
            m.snapshot_persisted_configmaps.clone(),
        );
        registry.register(
            "snapshot_persist_failing",
            "1 while the snapshot in force cannot be persisted (the spoke is not ready meanwhile)",
            m.snapshot_persist_failing.clone(),
        );
        registry.register(
            "snapshot_persist_failures",
            "Failed attempts to persist the snapshot in force",
            m.snapshot_persist_failures.clone(),
        );
        registry.register(
            "snapshot_persist_duration_seconds",
            "Time to encode and write the snapshot's ConfigMaps",
            m.snapshot_persist_duration.clone(),
        );
        registry.register(
            "patch_duration_seconds",
            "Latency of one patch to a Flux object",
            m.patch_duration.clone(),
        );
        registry.register(
            "patches",
            "Patches made to Flux objects by action",
            m.patches.clone(),
        );
        registry.register("reconcile_errors", "Errors by kind", m.errors.clone());
        registry.register(
            "gate_requests",
            "Open/close requests made on Gate objects, by action and whether honoured",
            m.requests.clone(),
        );
        registry.register("reconciles", "Reconcile passes", m.reconciles.clone());
        registry.register(
            "flux_events",
            "Events sent to Flux's notification-controller (--events-addr) by outcome: delivered, duplicate (429), refused (4xx), failed (after retries), dropped (queue full)",
            m.flux_events.clone(),
        );
        Metrics { registry, ..m }
    }

    /// Counts a failed operation by its `metric_label`.
    pub fn error(&self, e: &Error) {
        self.errors
            .get_or_create(&vec![("error".to_owned(), e.metric_label().to_owned())])
            .inc();
    }

    /// Counts an open/close request on a Gate object as judged.
    pub fn request(&self, action: &str, accepted: bool) {
        self.requests
            .get_or_create(&vec![
                ("action".to_owned(), action.to_owned()),
                ("accepted".to_owned(), accepted.to_string()),
            ])
            .inc();
    }

    /// Counts a successful patch by action.
    pub fn patched(&self, action: &str) {
        self.patches
            .get_or_create(&vec![("action".to_owned(), action.to_owned())])
            .inc();
    }

    /// Starts timing a patch; records when dropped.
    pub fn time_patch(self: &Arc<Self>) -> PatchTimer {
        PatchTimer {
            metrics: self.clone(),
            start: Instant::now(),
        }
    }

    /// The OpenMetrics text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing into a String cannot fail.
        let _ = encode(&mut out, &self.registry);
        out
    }
}

/// Records the patch latency on drop, so failed patches are timed too.
pub struct PatchTimer {
    metrics: Arc<Metrics>,
    start: Instant,
}

impl Drop for PatchTimer {
    fn drop(&mut self) {
        self.metrics
            .patch_duration
            .observe(self.start.elapsed().as_secs_f64());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_metric_with_prefix() {
        let m = Arc::new(Metrics::new());
        m.objects_governed.set(3);
        m.patched("suspend");
        m.error(&Error::Config("x".into()));
        drop(m.time_patch());
        let text = m.render();
        for name in [
            "fleetgate_spoke_objects_governed 3",
            "fleetgate_spoke_objects_suspended",
            "fleetgate_spoke_objects_held",
            "fleetgate_spoke_hub_connected",
            "fleetgate_spoke_patch_duration_seconds_count 1",
            "fleetgate_spoke_patches_total{action=\"suspend\"} 1",
            "fleetgate_spoke_reconcile_errors_total{error=\"config\"} 1",
        ] {
            assert!(text.contains(name), "missing {name} in\n{text}");
        }
    }
}
