//! Freeze counters: `fleetgate_hub_freezes_started_total` and
//! `fleetgate_hub_freezes_ended_total` count fleet freezes started and ended (unfrozen) at
//! this replica, from any surface. Process-wide: a freeze is one write on one replica, so
//! summing over replicas counts it once.

use std::sync::LazyLock;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;

static STARTED: LazyLock<Counter> = LazyLock::new(Counter::default);
static ENDED: LazyLock<Counter> = LazyLock::new(Counter::default);

/// Registers the counters in `registry`.
pub(super) fn register(registry: &mut Registry) {
    registry.register(
        "freezes_started",
        "Fleet freezes started at this replica (REST, gRPC, CLI, dashboard)",
        STARTED.clone(),
    );
    registry.register(
        "freezes_ended",
        "Fleet freezes ended (unfrozen) at this replica",
        ENDED.clone(),
    );
}

/// Counts a freeze started.
pub fn started() {
    STARTED.inc();
}

/// Counts `n` freezes ended.
pub fn ended(n: usize) {
    ENDED.inc_by(u64::try_from(n).unwrap_or(u64::MAX));
}
