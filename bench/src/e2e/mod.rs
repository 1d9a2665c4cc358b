//! End to end with real spokes (#19 item 5): N real `fleetgate-spoke`
//! processes, each governing its cluster's Flux objects in one
//! `fleetgate-sim` process, connected to the real hub. A flip is a REST close
//! (`POST /api/v1/gates/e2e-window/close`) or the cancel of that override; it
//! is clocked until the bench's own watches on the simulated API servers saw
//! the last object suspended (or resumed with a new
//! `reconcile.fluxcd.io/requestedAt`). Printed beside the sum of two floors
//! measured in the same run: the bare fan-out to N streams and this process
//! patching the same objects directly.

mod direct;
mod procs;
mod report;
mod watch;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use fleetgate_hub::Service;
use fleetgate_hub::service::types::RegisterCluster;

pub use report::{E2eResult, FlipSeries, Row};

use crate::fleet::{self, Flipper};
use crate::hub_process::HubProcess;
use crate::stats::Percentiles;
use crate::swarm::Credential;
use crate::{BenchConfig, Error, Result};

/// The phase's own gate: only its clusters, so a flip costs the hub what it
/// costs for N clusters, whatever else is registered.
pub const GATE: &str = "e2e-window";
const GATE_YAML: &str = r#"apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: e2e-window}
spec:
  description: The end-to-end benchmark's real spokes; open unless overridden.
  clusters: {selector: {matchLabels: {fleet: e2e}}}
  targets: {kinds: [Kustomization, HelmRelease]}
  mode: suspend
  default: open
"#;
/// How long one flip may take before the run fails.
const FLIP_BOUND: Duration = Duration::from_secs(60);
/// Until every spoke's first report is stored.
const READY_BOUND: Duration = Duration::from_secs(300);
/// Pause between flips: the spokes' reports (debounced 1 s) and Events of
/// the previous flip are out of the way.
const SETTLE: Duration = Duration::from_millis(1500);

/// The hub cluster name of simulated cluster `i`.
pub fn cluster_name(i: usize) -> String {
    format!("e2e-{i:03}")
}

/// Runs the phase against `hub`.
pub async fn run(
    cfg: &BenchConfig,
    hub: &HubProcess,
    admin_token: &str,
    service: &Service,
    pool: &sqlx::PgPool,
    workdir: &Path,
    progress: &dyn Fn(&str),
) -> Result<E2eResult> {
    let n = cfg.real_spokes;
    let objects = cfg.objects_per_spoke;
    // Close/open pairs, so every run ends open.
    let flips = cfg.flips.max(2).div_ceil(2) * 2;
    progress(&format!("e2e: registering {n} clusters and gate {GATE}"));
    let creds = register(service, n).await?;
    let gate = fleetgate_policy::parse_gate(GATE_YAML)
        .map_err(|e| Error::setup(format!("e2e gate: {e}")))?;
    service.create_gate(&fleet::actor(), gate, None).await?;

    progress(&format!("e2e floor: bare tonic fan-out to {n} streams"));
    let snapshot = crate::probe::fetch_snapshot(hub.grpc, &creds[0]).await?;
    let snapshot_file = workdir.join("e2e-snapshot.pb");
    std::fs::write(&snapshot_file, prost::Message::encode_to_vec(&snapshot))?;
    let (fanout, _) = crate::probe::floor_flips(cfg, &snapshot_file, n).await?;

    progress(&format!(
        "e2e: fleetgate-sim with {n} clusters × {objects} governed objects"
    ));
    let sim = procs::SimFleet::start(&cfg.bins.sim, n, objects, &workdir.join("e2e-sim")).await?;
    let observer = watch::Observer::start(&sim.clients);
    observer
        .wait_count(n * objects, Duration::from_secs(120))
        .await?;

    progress(&format!(
        "e2e floor: {flips} direct patch flips of {} objects",
        n * objects
    ));
    let mut direct_close = FlipSeries::default();
    let mut direct_open = FlipSeries::default();
    for i in 0..flips {
        tokio::time::sleep(SETTLE).await;
        let close = i % 2 == 0;
        let meter = Meter::start(&sim, None, None)?;
        let (lat, calls) = direct::flip(&observer, &sim.clients, GATE, close, FLIP_BOUND).await?;
        let series = if close {
            &mut direct_close
        } else {
            &mut direct_open
        };
        meter.charge(series, &sim, None)?;
        series.add(&lat, calls);
    }

    progress(&format!("e2e: starting {n} fleetgate-spoke processes"));
    let fleet: Vec<(Credential, std::path::PathBuf)> = creds
        .iter()
        .cloned()
        .zip(sim.kubeconfigs.iter().cloned())
        .collect();
    let t = Instant::now();
    let mut spokes = procs::Spokes::start(
        &cfg.bins.spoke,
        hub.grpc,
        &fleet,
        &workdir.join("e2e-spokes"),
    )?;
    wait_reported(pool, &mut spokes, n, objects).await?;
    let start_seconds = t.elapsed().as_secs_f64();
    progress(&format!(
        "e2e: all {n} spokes reported after {start_seconds:.1} s"
    ));

    let mut flipper = Flipper::new(hub.base_url(), admin_token.into()).with_gate(GATE);
    flipper.warm_up().await?;
    let mut close = FlipSeries::default();
    let mut open = FlipSeries::default();
    let mut rest = Vec::new();
    for i in 0..flips {
        tokio::time::sleep(SETTLE).await;
        spokes.check_running()?;
        let base = observer.states();
        let meter = Meter::start(&sim, Some(&spokes), Some(hub.pid()))?;
        rest.push(flipper.flip(i).await?);
        let closing = i % 2 == 0;
        let target = if closing {
            watch::suspended
        } else {
            watch::resumed
        };
        let lat = observer
            .wait_all(&base, meter.at, target, FLIP_BOUND)
            .await?;
        let series = if closing { &mut close } else { &mut open };
        meter.charge(series, &sim, Some(&spokes))?;
        series.add(&lat, rest[rest.len() - 1]);
        progress(&format!(
            "e2e: {} → last of {} objects {:.0} ms",
            if closing { "close" } else { "open" },
            lat.len(),
            series.last_ms.last().copied().unwrap_or_default()
        ));
    }
    let spoke_rss = spokes.rss_kib();
    let sim_rss_kib = sim.rss_kib();
    let watch_errors = observer.errors();
    spokes.stop().await;
    observer.stop().await;
    drop(sim);
    Ok(E2eResult {
        spokes: n,
        objects_per_spoke: objects,
        flips,
        close,
        open,
        direct_close,
        direct_open,
        fanout_floor: fanout.per_flip_all,
        rest_call: Percentiles::of(&rest),
        start_seconds,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        spoke_rss_avg_kib: spoke_rss.iter().sum::<u64>() as f64 / spoke_rss.len().max(1) as f64,
        spoke_rss_max_kib: spoke_rss.iter().copied().max().unwrap_or(0),
        sim_rss_kib,
        watch_errors,
    })
}

/// Registers clusters `e2e-000…` labelled `fleet=e2e`; returns their tokens.
async fn register(service: &Service, n: usize) -> Result<Vec<Credential>> {
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let c = service
            .register_cluster(
                &fleet::actor(),
                RegisterCluster {
                    name: cluster_name(i),
                    labels: BTreeMap::from([("fleet".to_string(), "e2e".to_string())]),
                    ..Default::default()
                },
                Some("e2e benchmark"),
            )
            .await?;
        out.push(Credential {
            cluster: c.cluster.name,
            token: c.token,
        });
    }
    Ok(out)
}

/// Waits (≤ `READY_BOUND`) until the hub stored every spoke's report of all
/// its objects.
async fn wait_reported(
    pool: &sqlx::PgPool,
    spokes: &mut procs::Spokes,
    n: usize,
    objects: usize,
) -> Result<()> {
    let deadline = Instant::now() + READY_BOUND;
    loop {
        spokes.check_running()?;
        let (stored,): (i64,) = sqlx::query_as(
            "select count(*) from object_status where cluster like 'e2e-%' and $1 = any(gates)",
        )
        .bind(GATE)
        .fetch_one(pool)
        .await?;
        if stored as usize >= n * objects {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err(Error::Timeout(format!(
                "e2e: the hub stored {stored} of {} objects from the spokes within {READY_BOUND:?}",
                n * objects
            )));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// What one flip cost the machine: CPU counters read as it starts, charged to its
/// series as it ends (the simulator's, the spokes' and the hub's when they take part,
/// and how many of the machine's cores were busy meanwhile).
struct Meter {
    sim: Option<Duration>,
    spokes: Option<Duration>,
    hub: Option<(u32, Duration)>,
    busy: Duration,
    /// When the flip started.
    at: Instant,
}

impl Meter {
    fn start(
        sim: &procs::SimFleet,
        spokes: Option<&procs::Spokes>,
        hub: Option<u32>,
    ) -> Result<Self> {
        Ok(Self {
            sim: sim.cpu_time(),
            spokes: spokes.map(procs::Spokes::cpu_time),
            hub: hub.and_then(|pid| crate::proc_stats::cpu_time(pid).ok().map(|t| (pid, t))),
            busy: crate::proc_stats::machine_busy()?,
            at: Instant::now(),
        })
    }

    fn charge(
        self,
        series: &mut FlipSeries,
        sim: &procs::SimFleet,
        spokes: Option<&procs::Spokes>,
    ) -> Result<()> {
        let busy = crate::proc_stats::machine_busy()?.saturating_sub(self.busy);
        let wall = self.at.elapsed();
        if let (Some(a), Some(b)) = (self.sim, sim.cpu_time()) {
            series.add_sim_cpu(b.saturating_sub(a));
        }
        if let (Some(a), Some(spokes)) = (self.spokes, spokes) {
            series.add_spokes_cpu(spokes.cpu_time().saturating_sub(a));
        }
        if let Some((pid, a)) = self.hub
            && let Ok(b) = crate::proc_stats::cpu_time(pid)
        {
            series.add_hub_cpu(b.saturating_sub(a));
        }
        series.add_busy(busy, wall);
        Ok(())
    }
}
