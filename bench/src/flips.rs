//! Gate flip → every spoke has the new snapshot: through the hub (a REST
//! override write) and through the floor server (a line on its stdin). The
//! clock starts just before the trigger and stops when each spoke decoded it.

use std::time::{Duration, Instant};

use crate::Result;
use crate::fleet::Flipper;
use crate::flip_pairs::{FlipPair, FlipPairs};
use crate::floor::FloorProcess;
use crate::proc_stats::{cpu_time, server_cpu_time};
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
    /// Per flip, its spokes' latencies, in order.
    pub each: Vec<Percentiles>,
}

/// Samples of flips as they are taken ([`FlipTimes`] once done).
#[derive(Default)]
struct Tally {
    per_spoke: Vec<Duration>,
    all: Vec<Duration>,
    trigger: Vec<Duration>,
    each: Vec<Percentiles>,
}

impl Tally {
    /// One flip triggered at `t0` whose trigger took `trigger`, arrived at `arrivals`.
    fn flip(&mut self, swarm: &Swarm, t0: Instant, trigger: Duration, arrivals: &[u64]) {
        let lat: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(t0, us)).collect();
        self.trigger.push(trigger);
        self.all.push(lat.iter().copied().max().unwrap_or_default());
        self.each.push(Percentiles::of(&lat));
        self.per_spoke.extend(lat);
    }

    fn done(self) -> FlipTimes {
        FlipTimes {
            per_spoke: Percentiles::of(&self.per_spoke),
            per_flip_all: Percentiles::of(&self.all),
            trigger: Percentiles::of(&self.trigger),
            all_ms: self.all.iter().map(|d| d.as_secs_f64() * 1e3).collect(),
            each: self.each,
        }
    }
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
    let mut tally = Tally::default();
    for n in 0..flips {
        if !bases.is_empty() {
            flipper.via(bases[n % bases.len()].clone());
        }
        tokio::time::sleep(SETTLE).await;
        hub_flip(swarm, flipper, n, &mut tally).await?;
    }
    Ok(tally.done())
}

/// Flip `n` through the hub's REST API, into `tally`.
async fn hub_flip(swarm: &Swarm, flipper: &mut Flipper, n: usize, tally: &mut Tally) -> Result<()> {
    let base = swarm.snapshot_counts();
    let t0 = Instant::now();
    let trigger = flipper.flip(n).await?;
    let arrivals = swarm.wait_all_past(&base, FLIP_BOUND).await?;
    tally.flip(swarm, t0, trigger, &arrivals);
    Ok(())
}

/// One publication by the floor server, into `tally`.
async fn floor_flip(swarm: &Swarm, floor: &mut FloorProcess, tally: &mut Tally) -> Result<()> {
    let base = swarm.snapshot_counts();
    let t0 = Instant::now();
    floor.publish().await?;
    let trigger = t0.elapsed();
    let arrivals = swarm.wait_all_past(&base, FLIP_BOUND).await?;
    tally.flip(swarm, t0, trigger, &arrivals);
    Ok(())
}

/// `flips` publications by the bare floor server.
pub async fn through_floor(
    swarm: &Swarm,
    floor: &mut FloorProcess,
    flips: usize,
) -> Result<FlipTimes> {
    let mut tally = Tally::default();
    for _ in 0..flips {
        tokio::time::sleep(SETTLE).await;
        floor_flip(swarm, floor, &mut tally).await?;
    }
    Ok(tally.done())
}

/// Flips through the hub and the floor server taken in pairs, both fleets connected
/// all along, so each pair meets the same moment of the machine: `flips` pairs, the
/// floor's flip first in even pairs and the hub's first in odd ones. `hub_pid`'s CPU
/// time and the floor server's over the pairs are divided by `flips`, and so is the
/// database server's (`db_pid`: its postmaster, when it runs on this machine).
pub async fn interleaved(
    hub_swarm: &Swarm,
    flipper: &mut Flipper,
    hub_pid: u32,
    db_pid: Option<u32>,
    floor_swarm: &Swarm,
    floor: &mut FloorProcess,
    flips: usize,
) -> Result<Interleaved> {
    flipper.warm_up().await?;
    let floor_pid = floor.pid()?;
    let db_cpu = || db_pid.and_then(|pid| server_cpu_time(pid).ok());
    let cpu = || -> Result<(Duration, Duration)> { Ok((cpu_time(hub_pid)?, cpu_time(floor_pid)?)) };
    let db0 = db_cpu();
    let cpu0 = cpu()?;
    let (mut hub, mut floor_tally) = (Tally::default(), Tally::default());
    let mut pairs = Vec::with_capacity(flips);
    for n in 0..flips {
        let hub_first = n % 2 == 1;
        let closes = flipper.next_closes();
        for hub_turn in [hub_first, !hub_first] {
            tokio::time::sleep(SETTLE).await;
            if hub_turn {
                hub_flip(hub_swarm, flipper, n, &mut hub).await?;
            } else {
                floor_flip(floor_swarm, floor, &mut floor_tally).await?;
            }
        }
        pairs.push(FlipPair {
            hub_first,
            closes,
            rest_ms: hub.trigger[n].as_secs_f64() * 1e3,
            hub: hub.each[n],
            floor: floor_tally.each[n],
            hub_all_ms: hub.all[n].as_secs_f64() * 1e3,
            floor_all_ms: floor_tally.all[n].as_secs_f64() * 1e3,
        });
    }
    let cpu1 = cpu()?;
    let db1 = db_cpu();
    let per_flip = |d: Duration| d.as_secs_f64() * 1e3 / flips.max(1) as f64;
    Ok(Interleaved {
        hub: hub.done(),
        floor: floor_tally.done(),
        pairs: FlipPairs {
            pairs,
            hub_cpu_ms_per_flip: per_flip(cpu1.0.saturating_sub(cpu0.0)),
            floor_cpu_ms_per_flip: per_flip(cpu1.1.saturating_sub(cpu0.1)),
            db_cpu_ms_per_flip: db0.zip(db1).map(|(a, b)| per_flip(b.saturating_sub(a))),
        },
    })
}

/// [`interleaved`]'s flips: each side's, and pair by pair.
#[derive(Debug, Clone, Default)]
pub struct Interleaved {
    pub hub: FlipTimes,
    pub floor: FlipTimes,
    pub pairs: FlipPairs,
}
