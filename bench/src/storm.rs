//! Reconnect storm: the hub is restarted (SIGTERM, drain, start again) with N
//! spokes connected, and the gate changes while it is down, so every spoke must
//! reconnect (with the real spoke's jittered backoff) and fetch a new snapshot.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fleetgate_hub::Service;
use fleetgate_proto::v1 as pb;
use prost::Message as _;
use serde::Serialize;

use crate::floor::FloorProcess;
use crate::hub_process::{HubProcess, HubSpec};
use crate::probe::{CONNECT_BOUND, CONNECT_CONCURRENCY, floor_credentials};
use crate::stats::Percentiles;
use crate::swarm::Swarm;
use crate::{Error, Result, fleet, proc_stats, swarm_process};

#[derive(Debug, Clone, Default, Serialize)]
pub struct StormResult {
    pub spokes: usize,
    /// What the spokes sign in with: `cluster token` or `JWT`.
    pub credential: String,
    /// Per spoke, the attempt that re-synced it, phase by phase.
    pub resync_phases: ResyncPhases,
    /// Hub stop (SIGTERM) → new hub ready.
    pub hub_down_seconds: f64,
    /// Of that, SIGTERM → old hub exited (graceful drain).
    pub hub_stop_seconds: f64,
    /// SIGTERM → every spoke had seen its stream end (the spokes' side of the stop).
    pub streams_ended_seconds: f64,
    /// Per spoke: restart began → it held the new snapshot.
    pub resync: Percentiles,
    /// Per spoke: new hub ready → it held the new snapshot (0 if before).
    pub resync_after_ready: Percentiles,
    /// Most connection attempts one spoke needed.
    pub max_attempts: u32,
    /// How many spokes needed how many attempts (attempts → spokes).
    pub attempts: std::collections::BTreeMap<u32, usize>,
    /// The new server process's CPU time from its start to the last spoke's re-sync
    /// (user + system).
    pub server_cpu_seconds: f64,
    /// CPU time the whole machine was busy from the restart to the last re-sync
    /// (summed over cores: old and new server, spokes, PostgreSQL).
    pub machine_busy_seconds: f64,
    /// Failed attempts during the re-sync, by why (`swarm::Failure::label`).
    pub failures: std::collections::BTreeMap<String, u64>,
    /// New hub: process spawned → ready (`/readyz` 200 and gRPC accepting).
    pub hub_start_seconds: f64,
    /// The new hub's own startup phases (its `startup` log lines): phase →
    /// milliseconds since its `serve` began, in order.
    pub startup_phases: Vec<(String, f64)>,
    /// The old hub's drain phases (its `drain` log lines): phase →
    /// milliseconds since SIGTERM reached it, in order.
    pub drain_phases: Vec<(String, f64)>,
}

/// A storm's re-sync per spoke, phase by phase (the attempt that got the
/// new snapshot), as the spokes saw them.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ResyncPhases {
    /// New hub ready → the attempt began (the reconnect schedule).
    pub dialled_after_ready: Percentiles,
    /// Attempt began → TCP and HTTP/2 up (the hub's accept).
    pub connect: Percentiles,
    /// Connected → the hub's response headers (authentication).
    pub authenticate: Percentiles,
    /// Response headers → snapshot received (built and sent).
    pub snapshot: Percentiles,
}

/// How long the whole fleet may take to re-sync before the run fails.
pub(crate) const RESYNC_BOUND: Duration = Duration::from_secs(300);

/// Restarts `hub` and measures the re-sync of `swarm`, whose spokes are the
/// clusters named `prefix…` and sign in with `credential` (for the report);
/// returns the new hub.
pub async fn run(
    swarm: &Swarm,
    spec: &HubSpec,
    hub: HubProcess,
    service: &Service,
    pool: &sqlx::PgPool,
    prefix: &str,
    credential: &str,
) -> Result<(StormResult, HubProcess)> {
    let before = Before::take(swarm)?;
    let t0 = Instant::now();
    hub.stop().await?;
    let hub_stop = t0.elapsed();
    let change =
        fleet::close_by_service(service, "reconnect storm: changed while the hub is down").await?;
    let target = target_revision(pool, prefix).await?;
    let drain_phases = phases(&spec.log, "drain");
    let spawned = t0.elapsed();
    let hub = spec.start().await?;
    let hub_down = t0.elapsed();
    let startup_phases = phases(&spec.log, "startup");
    let resynced = resynced(swarm, &before, t0, hub_down, target).await?;
    let server_cpu = proc_stats::cpu_time(hub.pid())?;
    // Back to the gate's schedule for the phases after this one.
    fleet::cancel_by_service(service, &change).await?;
    Ok((
        StormResult {
            credential: credential.into(),
            hub_down_seconds: hub_down.as_secs_f64(),
            hub_stop_seconds: hub_stop.as_secs_f64(),
            hub_start_seconds: (hub_down - spawned).as_secs_f64(),
            startup_phases,
            drain_phases,
            server_cpu_seconds: server_cpu.as_secs_f64(),
            ..resynced
        },
        hub,
    ))
}

/// The snapshot revision every cluster named `prefix…` is at (or past) now: what a
/// spoke holds once it has the latest change (a fleet-wide change moves it without
/// stamping rows).
pub(crate) async fn target_revision(pool: &sqlx::PgPool, prefix: &str) -> Result<u64> {
    let (target,): (i64,) = sqlx::query_as(sqlx::AssertSqlSafe(format!(
        "select min({}) from clusters c cross join fleet_revision f where c.name like $1 || '%'",
        fleetgate_hub::db::revision::EFFECTIVE_REVISION
    )))
    .bind(prefix)
    .fetch_one(pool)
    .await?;
    Ok(u64::try_from(target).unwrap_or(0))
}

/// What a restart's figures count from, taken right before it (and each spoke's most
/// attempts and first address dialled reset).
pub(crate) struct Before {
    pub(crate) failures: BTreeMap<String, u64>,
    pub(crate) machine_busy: Duration,
}

impl Before {
    pub(crate) fn take(swarm: &Swarm) -> Result<Self> {
        for s in swarm.slots.iter() {
            s.max_attempts.store(0, Ordering::Release);
            s.clear_first_addr();
        }
        Ok(Self {
            failures: failures_of(swarm),
            machine_busy: proc_stats::machine_busy()?,
        })
    }

    /// The swarm's failed attempts since, by why.
    pub(crate) fn failures_since(&self, swarm: &Swarm) -> BTreeMap<String, u64> {
        let mut failures = failures_of(swarm);
        for (why, n) in &mut failures {
            *n -= self.failures.get(why).copied().unwrap_or(0);
        }
        failures.retain(|_, n| *n > 0);
        failures
    }
}

/// Waits until every spoke of `swarm` holds `revision` and measures its re-sync: the
/// restart began at `t0` (`before` taken right before) and the server was ready `down`
/// later. Fills the spokes' and the machine's side of a [`StormResult`].
async fn resynced(
    swarm: &Swarm,
    before: &Before,
    t0: Instant,
    down: Duration,
    revision: u64,
) -> Result<StormResult> {
    let arrivals = swarm.wait_all_at(revision, RESYNC_BOUND).await?;
    let machine_busy = proc_stats::machine_busy()?.saturating_sub(before.machine_busy);
    let failures = before.failures_since(swarm);
    let resync: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(t0, us)).collect();
    let ready = t0 + down;
    let after_ready: Vec<Duration> = arrivals.iter().map(|&us| swarm.since(ready, us)).collect();
    // Every spoke's stream ended: the latest end the spokes saw, as the restart's.
    let t0_us = swarm.micros(t0);
    let streams_ended = swarm
        .slots
        .iter()
        .map(|s| s.ended_us.load(Ordering::Acquire))
        .filter(|&us| us >= t0_us)
        .max()
        .map_or(Duration::ZERO, |us| swarm.since(t0, us));
    let mut attempts = BTreeMap::new();
    for s in swarm.slots.iter() {
        *attempts
            .entry(s.max_attempts.load(Ordering::Acquire))
            .or_insert(0) += 1;
    }
    Ok(StormResult {
        spokes: swarm.len(),
        resync_phases: resync_phases(swarm, ready),
        resync: Percentiles::of(&resync),
        resync_after_ready: Percentiles::of(&after_ready),
        max_attempts: attempts.keys().next_back().copied().unwrap_or(0),
        attempts,
        failures,
        machine_busy_seconds: machine_busy.as_secs_f64(),
        streams_ended_seconds: streams_ended.as_secs_f64(),
        ..StormResult::default()
    })
}

/// The swarm's failed attempts so far, by why.
fn failures_of(swarm: &Swarm) -> BTreeMap<String, u64> {
    swarm
        .failures
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone()
}

/// The storm's floor, measured as the storm is: `n` spokes of the same swarm (a process of
/// its own, the real spoke's reconnect schedule) on the bare fan-out server of
/// [`crate::floor`], which is stopped — every stream ended with status OK, as a draining
/// hub ends them — and started again on the same port serving the next revision. No
/// authentication, database or per-cluster state: what is left is the kernel's and the
/// library's cost of N reconnects on this machine, and the schedule's.
pub async fn floor(
    bench: &Path,
    snapshot_file: &Path,
    n: usize,
    workdir: &Path,
) -> Result<StormResult> {
    let server = FloorProcess::start(bench, snapshot_file).await?;
    let addr = server.addr;
    let swarm = swarm_process::start(
        bench,
        &[addr],
        &floor_credentials(n),
        CONNECT_CONCURRENCY,
        CONNECT_BOUND,
        workdir,
    )
    .await?;
    // The restarted server serves the next revision, as the restarted hub does.
    let mut next = pb::Snapshot::decode(std::fs::read(snapshot_file)?.as_slice())
        .map_err(|e| Error::setup(format!("decoding {}: {e}", snapshot_file.display())))?;
    next.revision += 1;
    let next_file = workdir.join("snapshot-next.pb");
    std::fs::write(&next_file, next.encode_to_vec())?;
    let before = Before::take(&swarm)?;
    let t0 = Instant::now();
    server.stop().await?;
    let stop = t0.elapsed();
    let server = FloorProcess::start_on(bench, &next_file, addr).await?;
    let down = t0.elapsed();
    let result = resynced(&swarm, &before, t0, down, next.revision).await;
    let server_cpu = proc_stats::cpu_time(server.pid()?)?;
    swarm.shutdown().await;
    server.stop().await?;
    Ok(StormResult {
        credential: "no credential (bare server)".into(),
        hub_down_seconds: down.as_secs_f64(),
        hub_stop_seconds: stop.as_secs_f64(),
        hub_start_seconds: (down - stop).as_secs_f64(),
        server_cpu_seconds: server_cpu.as_secs_f64(),
        ..result?
    })
}

/// Where each spoke's re-sync went, over the attempt that got the new
/// snapshot: ready → dialled (the reconnect schedule; 0 if it dialled before
/// the new hub was ready and got through), dialled → connected (TCP and
/// HTTP/2 handshake: the hub's accept), connected → accepted (the hub's
/// response headers: authentication), accepted → snapshot (the snapshot
/// built and sent).
fn resync_phases(swarm: &Swarm, ready: Instant) -> ResyncPhases {
    let ready = swarm.micros(ready);
    let mut dial = Vec::new();
    let mut connect = Vec::new();
    let mut auth = Vec::new();
    let mut snapshot = Vec::new();
    let span = |a: u64, b: u64| Duration::from_micros(b.saturating_sub(a));
    for s in swarm.slots.iter() {
        let d = s.dialled_us.load(Ordering::Acquire);
        let c = s.connected_us.load(Ordering::Acquire);
        let h = s.accepted_us.load(Ordering::Acquire);
        let r = s.received_us.load(Ordering::Acquire);
        // Phases of one attempt only (a mirror that missed a line has no times).
        if d == 0 || !(d <= c && c <= h && h <= r) {
            continue;
        }
        dial.push(span(ready, d));
        connect.push(span(d, c));
        auth.push(span(c, h));
        snapshot.push(span(h, r));
    }
    ResyncPhases {
        dialled_after_ready: Percentiles::of(&dial),
        connect: Percentiles::of(&connect),
        authenticate: Percentiles::of(&auth),
        snapshot: Percentiles::of(&snapshot),
    }
}

/// The phases of the hub's latest start or drain (`what`: `startup`,
/// `drain`), from its log (lines with that message and `phase=` and `ms=`
/// fields; colour codes stripped).
pub(crate) fn phases(log: &std::path::Path, what: &str) -> Vec<(String, f64)> {
    let what = format!(" {what}");
    let Ok(text) = std::fs::read_to_string(log) else {
        return Vec::new();
    };
    let mut phases: Vec<(String, f64)> = Vec::new();
    for line in text.lines() {
        let line = strip_ansi(line);
        if !line.contains(&what) {
            continue;
        }
        let field = |name: &str| {
            let at = line.find(&format!(" {name}="))? + name.len() + 2;
            let rest = &line[at..];
            let end = rest.find(' ').unwrap_or(rest.len());
            Some(rest[..end].trim_matches('"').to_string())
        };
        let (Some(phase), Some(ms)) = (field("phase"), field("ms")) else {
            continue;
        };
        let Ok(ms) = ms.parse::<f64>() else { continue };
        if phase == "begin" {
            phases.clear(); // a later start (drain) of the hub: keep only its phases
        }
        phases.push((phase, ms));
    }
    phases
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // CSI: ESC [ … final byte in @..~
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) && c != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_of_the_latest_start_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("hub.log");
        std::fs::write(
            &log,
            "x INFO fleetgate_hub::serve: startup phase=\"begin\" ms=0.0\n\
             x INFO fleetgate_hub::serve: startup phase=\"migrated\" ms=99.0\n\
             x INFO fleetgate_hub::serve: startup phase=\"begin\" ms=0.0\n\
             x \u{1b}[32m INFO\u{1b}[0m fleetgate_hub::serve: startup \u{1b}[3mphase\u{1b}[0m=\"migrated\" \u{1b}[3mms\u{1b}[0m=12.5\n\
             x INFO fleetgate_hub::drain: drain phase=\"begin\" ms=0.0\n\
             x INFO fleetgate_hub::drain: drain phase=\"grpc_closed\" ms=310.5\n",
        )
        .unwrap();
        assert_eq!(
            phases(&log, "startup"),
            vec![("begin".into(), 0.0), ("migrated".into(), 12.5)]
        );
        assert_eq!(
            phases(&log, "drain"),
            vec![("begin".into(), 0.0), ("grpc_closed".into(), 310.5)]
        );
    }
}
