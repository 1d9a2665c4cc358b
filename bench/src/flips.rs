//! Gate flip → every spoke has the new snapshot: through the hub (a REST
//! override write) and through the floor server (a line on its stdin). The
//! clock starts just before the trigger and stops when each spoke decoded it.

use std::time::{Duration, Instant};

use crate::Result;
use crate::fleet::Flipper;
use crate::floor::FloorProcess;
use crate::stats::Percentiles;
use crate::swarm::Swarm;

/// How long one flip may take to reach every spoke before the run fails.
const FLIP_BOUND: Duration = Duration::from_secs(120);
/// Pause between flips so they do not overlap.
const SETTLE: Duration = Duration::from_millis(200);

/// Flip latencies.
#[derive(Debug, Clone, Default)]
pub struct FlipTimes {
    /// Every spoke's latency of every flip.
    pub per_spoke: Percentiles,
    /// Per flip, until the last spoke.
    pub per_flip_all: Percentiles,
    /// Per flip, the trigger call itself (REST round-trip; stdin write).
    pub trigger: Percentiles,
    /// Per flip, until the last spoke, in order (ms).
    pub all_ms: Vec<f64>,
}

/// `flips` flips through the hub's REST API.
pub async fn through_hub(swarm: &Swarm, flipper: &mut Flipper, flips: usize) -> Result<FlipTimes> {
    through_hubs(swarm, flipper, &[], flips).await
}

/// `flips` flips through the REST APIs at `bases` in turn (replicas of one
/// hub; empty: the flipper's own).
pub async fn through_hubs(
    swarm: &Swarm,
    flipper: &mut Flipper,
    bases: &[String],
    flips: usize,
) -> Result<FlipTimes> {
    for base in bases {
        flipper.via(base.clone());
        flipper.warm_up().await?;
    }
    flipper.warm_up().await?;
    let mut per_spoke = Vec::new();
    let mut all = Vec::new();
    let mut trigger = Vec::new();
    for n in 0..flips {
        if !bases.is_empty() {
            flipper.via(bases[n % bases.len()].clone());
        }
        tokio::time::sleep(SETTLE).await;
        let base = swarm.snapshot_counts();
        let t0 = Instant::now();
        trigger.push(flipper.flip(n).await?);
        let arrivals = swarm.wait_all_past(&base, FLIP_BOUND).await?;
        collect(swarm, t0, &arrivals, &mut per_spoke, &mut all);
    }
    Ok(FlipTimes {
        per_spoke: Percentiles::of(&per_spoke),
        per_flip_all: Percentiles::of(&all),
        trigger: Percentiles::of(&trigger),
        all_ms: all.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
    })
}

/// `flips` publications by the bare floor server.
pub async fn through_floor(
    swarm: &Swarm,
    floor: &mut FloorProcess,
    flips: usize,
) -> Result<FlipTimes> {
    let mut per_spoke = Vec::new();
    let mut all = Vec::new();
    let mut trigger = Vec::new();
    for _ in 0..flips {
        tokio::time::sleep(SETTLE).await;
        let base = swarm.snapshot_counts();
        let t0 = Instant::now();
        floor.publish().await?;
        trigger.push(t0.elapsed());
        let arrivals = swarm.wait_all_past(&base, FLIP_BOUND).await?;
        collect(swarm, t0, &arrivals, &mut per_spoke, &mut all);
    }
    Ok(FlipTimes {
        per_spoke: Percentiles::of(&per_spoke),
        per_flip_all: Percentiles::of(&all),
        trigger: Percentiles::of(&trigger),
        all_ms: all.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
    })
}

fn collect(
    swarm: &Swarm,
    t0: Instant,
    arrivals: &[u64],
    per_spoke: &mut Vec<Duration>,
    all: &mut Vec<Duration>,
) {
    let lat: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(t0, us)).collect();
    all.push(lat.iter().copied().max().unwrap_or_default());
    per_spoke.extend(lat);
}
