//! What one benchmark run does: fleet sizes, repetitions and measurement
//! windows (`--quick` shortens the windows, not the fleet sizes).

use std::time::Duration;

use crate::bins::Bins;

/// A run's configuration.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// Fleet sizes, ascending; spokes are added incrementally between sizes.
    pub spokes: Vec<usize>,
    /// Gate flips measured per size (hub and floor each).
    pub flips: usize,
    /// Window over which idle CPU is averaged.
    pub idle_window: Duration,
    /// NOTIFY round-trips sampled.
    pub notify_samples: usize,
    /// Gates besides the bench gate over the same clusters (copies, never flipped).
    pub extra_gates: usize,
    /// Reconnect storm with the largest fleet.
    pub storm: bool,
    /// With the storm: the same storm again with as many spokes signing in
    /// with their clusters' JWTs (cached keys), and the cost of one
    /// verification timed over this many samples.
    pub jwt_storm: bool,
    /// What the JWT fleet's issuers sign with.
    pub jwt_alg: crate::jwt::JwtAlg,
    pub jwt_verify_samples: usize,
    /// Hub replicas on one database for the replicas phase (< 2 skips it).
    pub replicas: usize,
    /// Status ingest: spokes reporting, objects per report, and how long.
    pub ingest_spokes: usize,
    pub ingest_objects: usize,
    pub ingest_duration: Duration,
    /// Another hub binary (e.g. the previous release's) whose ingest is measured
    /// in the same run after this hub's, for a before/after ratio.
    pub baseline_hub: Option<std::path::PathBuf>,
    /// Steady state with the largest fleet (unchanged reports at the spoke's
    /// heartbeat interval): the interval and the measurement window (0 skips).
    pub steady_interval: Duration,
    pub steady_window: Duration,
    /// Real spoke against the simulator: Flux objects it governs (0 = skip),
    /// and the idle window for its CPU.
    pub spoke_objects: usize,
    pub spoke_idle_window: Duration,
    /// End to end (#19 item 5): real spokes (0 = skip) and the governed Flux
    /// objects of each one's simulated cluster.
    pub real_spokes: usize,
    pub objects_per_spoke: usize,
    /// Soak (#19 item 7) with the largest fleet for this long (0 = skip).
    pub soak: Duration,
    /// Soak: each spoke reports this often; the gate flips this often.
    pub soak_report_every: Duration,
    pub soak_flip_every: Duration,
    /// Soak warm-up: the hub has settled when its RSS stayed within 1 % for
    /// this long (at most 12 times this).
    pub soak_settle_window: Duration,
    /// Binaries to run.
    pub bins: Bins,
}

impl BenchConfig {
    /// The full run (`--quick` = shorter windows, fewer flips).
    pub fn new(spokes: Vec<usize>, quick: bool, bins: Bins) -> Self {
        let mut spokes = spokes;
        spokes.sort_unstable();
        spokes.dedup();
        spokes.retain(|n| *n > 0);
        Self {
            spokes,
            flips: if quick { 4 } else { 10 },
            idle_window: Duration::from_secs(if quick { 3 } else { 10 }),
            notify_samples: if quick { 50 } else { 500 },
            extra_gates: 0,
            storm: true,
            jwt_storm: true,
            jwt_alg: crate::jwt::JwtAlg::default(),
            jwt_verify_samples: if quick { 2_000 } else { 10_000 },
            replicas: 2,
            ingest_spokes: 1000,
            ingest_objects: 100,
            ingest_duration: Duration::from_secs(if quick { 5 } else { 20 }),
            baseline_hub: None,
            steady_interval: Duration::from_secs(30),
            steady_window: Duration::from_secs(if quick { 30 } else { 60 }),
            spoke_objects: 1000,
            spoke_idle_window: Duration::from_secs(if quick { 10 } else { 30 }),
            real_spokes: 0,
            objects_per_spoke: 20,
            soak: Duration::ZERO,
            soak_report_every: Duration::from_secs(60),
            soak_flip_every: Duration::from_secs(30),
            soak_settle_window: Duration::from_secs(10),
            bins,
        }
    }
}
