//! The rollout driver task every replica runs: steps every rollout gate on a short tick
//! . Replicas never elect a leader: each
//! step takes the gate's advisory lock in its transaction, so one replica steps a gate at
//! a time and a dead replica's lock goes with its session. Time comes from the service's
//! clock, so tests move it instead of waiting.

use std::time::Duration;

use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::metrics::RolloutMetrics;
use crate::rollout::Event;
use crate::service::Service;

/// Steps every rollout gate every `tick` until `stop`, publishing each step's events to
/// `events` and counting them in `metrics`.
pub async fn run(
    service: Service,
    tick: Duration,
    events: broadcast::Sender<Event>,
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
            Ok(stepped) => {
                for e in stepped {
                    metrics.record(&e);
                    let _ = events.send(e);
                }
            }
            Err(e) => {
                metrics.errors.inc();
                tracing::warn!(error = %e, "rollout step failed; retrying on the next tick");
            }
        }
    }
}
