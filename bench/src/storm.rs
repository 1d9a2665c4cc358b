//! Reconnect storm: the hub is restarted (SIGTERM, drain, start again) with N
//! spokes connected, and the gate changes while it is down, so every spoke must
//! reconnect (with the real spoke's jittered backoff) and fetch a new snapshot.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fleetgate_hub::Service;

use crate::hub_process::{HubProcess, HubSpec};
use crate::report::StormResult;
use crate::stats::Percentiles;
use crate::swarm::Swarm;
use crate::{Result, fleet};

/// How long the whole fleet may take to re-sync before the run fails.
const RESYNC_BOUND: Duration = Duration::from_secs(300);

/// Restarts `hub` and measures the re-sync; returns the new hub.
pub async fn run(
    swarm: &Swarm,
    spec: &HubSpec,
    hub: HubProcess,
    service: &Service,
    pool: &sqlx::PgPool,
) -> Result<(StormResult, HubProcess)> {
    for s in swarm.slots.iter() {
        s.max_attempts.store(0, Ordering::Release);
    }
    let t0 = Instant::now();
    hub.stop().await?;
    let hub_stop = t0.elapsed();
    fleet::close_by_service(service, "reconnect storm: changed while the hub is down").await?;
    let (target,): (i64,) =
        sqlx::query_as("select min(desired_revision) from clusters where name like 'b-%'")
            .fetch_one(pool)
            .await?;
    let hub = spec.start().await?;
    let hub_down = t0.elapsed();
    let arrivals = swarm
        .wait_all_at(u64::try_from(target).unwrap_or(0), RESYNC_BOUND)
        .await?;
    let resync: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(t0, us)).collect();
    let ready = t0 + hub_down;
    let after_ready: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(ready, us)).collect();
    let max_attempts = swarm
        .slots
        .iter()
        .map(|s| s.max_attempts.load(Ordering::Acquire))
        .max()
        .unwrap_or(0);
    Ok((
        StormResult {
            spokes: swarm.len(),
            hub_down_seconds: hub_down.as_secs_f64(),
            hub_stop_seconds: hub_stop.as_secs_f64(),
            resync: Percentiles::of(&resync),
            resync_after_ready: Percentiles::of(&after_ready),
            max_attempts,
        },
        hub,
    ))
}
