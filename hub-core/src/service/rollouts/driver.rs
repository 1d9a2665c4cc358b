//! The rollout driver task every replica runs: steps every rollout gate on a short tick.
//! Replicas never elect a leader: each
//! step takes the gate's advisory lock in its transaction, so one replica steps a gate at
//! a time and a dead replica's lock goes with its session. Time comes from the service's
//! clock, so tests move it instead of waiting.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::metrics::RolloutMetrics;
use crate::service::Service;

/// Steps every rollout gate every `tick` until `stop`, counting each step's events in
/// `metrics`. Watchers learn of the steps from the persisted rollouts (the fleet feed
/// compares them), so a step taken on another replica reaches them too.
pub async fn run(
    service: Service,
    tick: Duration,
    metrics: RolloutMetrics,
    stop: CancellationToken,
) {
    let mut interval = tokio::time::interval(tick);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = interval.tick() => {}
        }
        match service.step_rollouts().await {
            Ok(stepped) => metrics.record(&stepped),
            Err(e) => {
                metrics.errors.inc();
                tracing::warn!(error = %e, "rollout step failed; retrying on the next tick");
            }
        }
    }
}
