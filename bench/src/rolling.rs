//! A rolling restart of one hub replica, as the shipped Deployment upgrades the hub
//! (2 replicas, `maxUnavailable: 0`): with the fleet spread over the replicas,
//! replica [`DRAINED`] gets SIGTERM and drains (every stream it holds ends with
//! status OK, its listener closes), the gate changes through replica 0 right after
//! (as in the reconnect storm), and the clock runs from the SIGTERM until every
//! spoke of the fleet holds the new snapshot. The spokes whose stream the drained
//! replica ended reconnect to another: the swarm dials its addresses round-robin
//! per attempt, so the attempt after an end goes to the next replica, as a Service
//! routes a new connection to a ready pod. Then the drained replica starts again on
//! its ports (the new version, in an upgrade) and the phase reports where the
//! spokes are: connected streams stay where they are until their maximum age.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::fleet::Flipper;
use crate::hub_process::{HubProcess, HubSpec};
use crate::stats::Percentiles;
use crate::storm::{self, Before};
use crate::swarm::Swarm;
use crate::{Error, Result, hub_gauges, proc_stats};

/// The replica the rolling restart drains and starts again (replica 0 serves the
/// benchmark's later phases).
pub const DRAINED: usize = 1;

/// How long the restarted replica is given before its streams are counted.
const SETTLE: Duration = Duration::from_secs(1);

/// What the rolling restart measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RollingResult {
    pub spokes: usize,
    /// The drained replica (its index).
    pub drained: usize,
    /// Streams each replica held (its `spokes_connected`): before the SIGTERM, once
    /// every spoke held the new snapshot (the drained replica: 0, it is gone), and
    /// 1 s after the drained replica was ready again.
    pub streams_before: Vec<u64>,
    pub streams_after: Vec<u64>,
    pub streams_after_restart: Vec<u64>,
    /// SIGTERM → the gate change's REST call (through replica 0) answered.
    pub change_seconds: f64,
    /// The spokes' side, from their own timestamps.
    pub handover: Handover,
    /// Failed attempts from the SIGTERM to the last re-sync, by why and the
    /// replica dialled (`refused@1`: refused by replica 1).
    pub failures: BTreeMap<String, u64>,
    /// SIGTERM → the drained replica's process exited.
    pub drained_exit_seconds: f64,
    /// The drained replica's drain phases (its `drain` log lines): phase →
    /// milliseconds since SIGTERM reached it.
    pub drain_phases: Vec<(String, f64)>,
    /// CPU time of the surviving replicas (user + system) from the SIGTERM to the
    /// last re-sync.
    pub survivor_cpu_seconds: f64,
    /// CPU time the whole machine was busy over the same span (summed over cores).
    pub machine_busy_seconds: f64,
    /// The drained replica started again: process start → ready.
    pub restart_start_seconds: f64,
    /// Its startup phases (its `startup` log lines).
    pub startup_phases: Vec<(String, f64)>,
}

/// The spokes' side of a handover, from one [`SpokeRecord`] per spoke.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Handover {
    /// Spokes whose stream the drained replica held at the SIGTERM.
    pub moved: usize,
    /// SIGTERM → holding the new snapshot: the moved spokes, the others, all.
    pub resync_moved: Percentiles,
    pub resync_stayed: Percentiles,
    pub resync_all: Percentiles,
    /// Attempts the moved spokes needed → how many spokes.
    pub attempts_moved: BTreeMap<u32, usize>,
    /// Attempts the other spokes needed → how many (0: their stream stayed up).
    pub attempts_stayed: BTreeMap<u32, usize>,
    /// The moved spokes by attempts needed: SIGTERM → the new snapshot (what a
    /// failed attempt cost).
    pub resync_moved_by_attempts: BTreeMap<u32, Percentiles>,
    /// Moved spokes whose first attempt after the end dialled another replica than
    /// the drained one.
    pub moved_first_dial_elsewhere: usize,
    /// Spokes whose latest attempt dialled each replica: where the fleet is after
    /// the handover.
    pub on_replica: Vec<usize>,
    /// Moved spokes whose new stream was answered before the gate change's REST
    /// call returned: they got the change from the survivor's fan-out, not in
    /// their first snapshot.
    pub moved_answered_before_change: usize,
    /// The moved spokes' attempt that got them the new snapshot, phase by phase.
    pub phases: HandoverPhases,
}

/// The moved spokes' re-sync, phase by phase (p50 / p99 / max over the spokes).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct HandoverPhases {
    /// SIGTERM → the spoke saw its stream end (the drain).
    pub ended: Percentiles,
    /// Stream ended → the attempt that got the new snapshot began (the reconnect
    /// schedule, and any failed attempts before it).
    pub ended_to_dialled: Percentiles,
    /// Began → TCP and HTTP/2 up (the survivor's accept).
    pub connect: Percentiles,
    /// Up → the survivor's response headers (authentication).
    pub authenticate: Percentiles,
    /// Headers → the new snapshot; only spokes answered after the gate change
    /// (their first snapshot is the new one).
    pub snapshot: Percentiles,
}

/// One spoke at the end of a handover; times in µs after the SIGTERM (`None`:
/// before it, or never).
#[derive(Debug, Clone, Copy, Default)]
pub struct SpokeRecord {
    /// The drained replica held its stream at the SIGTERM.
    pub moved: bool,
    /// Attempts its reconnect needed (0: none).
    pub attempts: u32,
    /// The replica its first attempt after the SIGTERM dialled.
    pub first_addr: Option<u32>,
    /// The replica its latest attempt dialled.
    pub addr: u32,
    pub ended: Option<u64>,
    pub dialled: Option<u64>,
    pub connected: Option<u64>,
    pub accepted: Option<u64>,
    /// The new snapshot arrived.
    pub received: u64,
}

/// Sums up `records` of a handover from replica `drained` among `replicas`; the
/// gate change's REST call returned `change_us` after the SIGTERM.
pub fn summarize(
    records: &[SpokeRecord],
    replicas: usize,
    drained: u32,
    change_us: u64,
) -> Handover {
    let us = Duration::from_micros;
    let span = |a: u64, b: u64| us(b.saturating_sub(a));
    let mut moved = Vec::new();
    let mut stayed = Vec::new();
    let mut by_attempts: BTreeMap<u32, Vec<Duration>> = BTreeMap::new();
    let mut h = Handover {
        on_replica: vec![0; replicas],
        ..Handover::default()
    };
    let (mut ended, mut dial, mut connect, mut auth, mut snapshot) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for r in records {
        if let Some(n) = h.on_replica.get_mut(r.addr as usize) {
            *n += 1;
        }
        let resync = us(r.received);
        if !r.moved {
            stayed.push(resync);
            *h.attempts_stayed.entry(r.attempts).or_insert(0) += 1;
            continue;
        }
        h.moved += 1;
        moved.push(resync);
        *h.attempts_moved.entry(r.attempts).or_insert(0) += 1;
        by_attempts.entry(r.attempts).or_default().push(resync);
        if r.first_addr.is_some_and(|a| a != drained) {
            h.moved_first_dial_elsewhere += 1;
        }
        if r.accepted.is_some_and(|a| a < change_us) {
            h.moved_answered_before_change += 1;
        }
        if let Some(e) = r.ended {
            ended.push(us(e));
        }
        // Phases of one attempt only (a mirror that missed a line has no times).
        let (Some(d), Some(c), Some(a)) = (r.dialled, r.connected, r.accepted) else {
            continue;
        };
        if !(d <= c && c <= a && a <= r.received) {
            continue;
        }
        if let Some(e) = r.ended.filter(|&e| e <= d) {
            dial.push(span(e, d));
        }
        connect.push(span(d, c));
        auth.push(span(c, a));
        if a >= change_us {
            snapshot.push(span(a, r.received));
        }
    }
    let all: Vec<Duration> = moved.iter().chain(&stayed).copied().collect();
    h.resync_moved = Percentiles::of(&moved);
    h.resync_stayed = Percentiles::of(&stayed);
    h.resync_all = Percentiles::of(&all);
    h.resync_moved_by_attempts = by_attempts
        .into_iter()
        .map(|(n, d)| (n, Percentiles::of(&d)))
        .collect();
    h.phases = HandoverPhases {
        ended: Percentiles::of(&ended),
        ended_to_dialled: Percentiles::of(&dial),
        connect: Percentiles::of(&connect),
        authenticate: Percentiles::of(&auth),
        snapshot: Percentiles::of(&snapshot),
    };
    h
}

/// The replicas and how to start the drained one again.
pub struct Replicas<'a> {
    /// Replica 0 (the benchmark's hub; it survives).
    pub hub: &'a HubProcess,
    /// Replicas 1.. (replica [`DRAINED`] is replaced by its restarted process).
    pub others: &'a mut Vec<HubProcess>,
    /// Their specs, in the same order as `others`.
    pub specs: &'a [HubSpec],
}

/// The rolling restart of replica [`DRAINED`] with `swarm` spread over `replicas`;
/// the gate change goes through replica 0 with `flipper` (flip number `flip`), and
/// the new snapshot is the revision of the clusters named `prefix…`.
pub async fn run(
    swarm: &Swarm,
    replicas: Replicas<'_>,
    flipper: &mut Flipper,
    flip: usize,
    pool: &sqlx::PgPool,
    prefix: &str,
) -> Result<RollingResult> {
    let Replicas { hub, others, specs } = replicas;
    let at = DRAINED - 1;
    let (Some(spec), true) = (specs.get(at), at < others.len()) else {
        return Err(Error::setup("a rolling restart needs two replicas"));
    };
    let count = others.len() + 1;
    let all: Vec<&HubProcess> = std::iter::once(hub).chain(others.iter()).collect();
    let streams_before = hub_gauges::streams(&all).await?;
    let survivors: Vec<u32> = all
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != DRAINED)
        .map(|(_, h)| h.pid())
        .collect();
    drop(all);
    flipper.via(hub.base_url());
    flipper.warm_up().await?;
    // Who is where: every spoke holds a stream, at the replica its latest attempt dialled.
    let moved: Vec<bool> = swarm
        .slots
        .iter()
        .map(|s| s.addr.load(Ordering::Acquire) as usize == DRAINED)
        .collect();
    let cpu = || -> Result<Duration> {
        survivors
            .iter()
            .map(|&pid| proc_stats::cpu_time(pid))
            .sum::<Result<Duration>>()
    };
    let before = Before::take(swarm)?;
    let cpu0 = cpu()?;
    let drained = others.remove(at);
    let t0 = Instant::now();
    drained.terminate();
    let exit = tokio::spawn(async move { drained.exited().await.map(|()| t0.elapsed()) });
    flipper.flip(flip).await?;
    let change = t0.elapsed();
    let target = storm::target_revision(pool, prefix).await?;
    let arrivals = swarm.wait_all_at(target, storm::RESYNC_BOUND).await?;
    let survivor_cpu = cpu()?.saturating_sub(cpu0);
    let machine_busy = proc_stats::machine_busy()?.saturating_sub(before.machine_busy);
    let failures = before.failures_since(swarm);
    let drained_exit = exit
        .await
        .map_err(|e| Error::setup(format!("waiting for the drained replica: {e}")))??;
    let drain_phases = storm::phases(&spec.log, "drain");
    let mut streams_after = {
        let survivors: Vec<&HubProcess> = std::iter::once(hub).chain(others.iter()).collect();
        hub_gauges::streams(&survivors).await?
    };
    streams_after.insert(DRAINED, 0);
    let t0_us = swarm.micros(t0);
    let after = |us: u64| (us >= t0_us && us > 0).then(|| us - t0_us);
    let records: Vec<SpokeRecord> = swarm
        .slots
        .iter()
        .zip(&arrivals)
        .zip(&moved)
        .map(|((s, &received), &moved)| SpokeRecord {
            moved,
            attempts: s.max_attempts.load(Ordering::Acquire),
            first_addr: s.first_addr(),
            addr: s.addr.load(Ordering::Acquire),
            ended: after(s.ended_us.load(Ordering::Acquire)),
            dialled: after(s.dialled_us.load(Ordering::Acquire)),
            connected: after(s.connected_us.load(Ordering::Acquire)),
            accepted: after(s.accepted_us.load(Ordering::Acquire)),
            received: received.saturating_sub(t0_us),
        })
        .collect();
    let change_us = u64::try_from(change.as_micros()).unwrap_or(u64::MAX);
    let handover = summarize(&records, count, DRAINED as u32, change_us);
    // The drained replica again, on its ports (in an upgrade: the new version).
    let t = Instant::now();
    let restarted = spec.start().await?;
    let restart_start = t.elapsed();
    let startup_phases = storm::phases(&spec.log, "startup");
    others.insert(at, restarted);
    tokio::time::sleep(SETTLE).await;
    let all: Vec<&HubProcess> = std::iter::once(hub).chain(others.iter()).collect();
    let streams_after_restart = hub_gauges::streams(&all).await?;
    Ok(RollingResult {
        spokes: swarm.len(),
        drained: DRAINED,
        streams_before,
        streams_after,
        streams_after_restart,
        change_seconds: change.as_secs_f64(),
        handover,
        failures,
        drained_exit_seconds: drained_exit.as_secs_f64(),
        drain_phases,
        survivor_cpu_seconds: survivor_cpu.as_secs_f64(),
        machine_busy_seconds: machine_busy.as_secs_f64(),
        restart_start_seconds: restart_start.as_secs_f64(),
        startup_phases,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// p50 / p99 / max, to the µs.
    fn ms(p: &Percentiles) -> (f64, f64, f64) {
        let r = |v: f64| (v * 1e3).round() / 1e3;
        (r(p.p50_ms), r(p.p99_ms), r(p.max_ms))
    }

    #[test]
    fn a_handover_is_summed_up_per_group() {
        let stayed = SpokeRecord {
            moved: false,
            attempts: 0,
            first_addr: None,
            addr: 0,
            received: 40_000,
            ..SpokeRecord::default()
        };
        // Ended at 100 ms, dialled replica 0 at 150, up at 160, answered at 300 (after
        // the change at 50 ms), the new snapshot at 310.
        let moved_once = SpokeRecord {
            moved: true,
            attempts: 1,
            first_addr: Some(0),
            addr: 0,
            ended: Some(100_000),
            dialled: Some(150_000),
            connected: Some(160_000),
            accepted: Some(300_000),
            received: 310_000,
        };
        // Two failed attempts (turned away by replica 0, refused by the drained one),
        // through on the third; answered before the change, which came by fan-out.
        let moved_thrice = SpokeRecord {
            moved: true,
            attempts: 3,
            first_addr: Some(0),
            addr: 0,
            ended: Some(10_000),
            dialled: Some(20_000),
            connected: Some(25_000),
            accepted: Some(30_000),
            received: 900_000,
        };
        // A mirror line missed: no phases, still counted; its first dial went back to
        // the drained replica.
        let moved_odd = SpokeRecord {
            moved: true,
            attempts: 2,
            first_addr: Some(1),
            addr: 0,
            ended: None,
            dialled: Some(500_000),
            connected: None,
            accepted: Some(510_000),
            received: 520_000,
        };
        let h = summarize(
            &[stayed, moved_once, stayed, moved_thrice, moved_odd],
            2,
            1,
            50_000,
        );
        assert_eq!(h.moved, 3);
        assert_eq!(h.on_replica, vec![5, 0]);
        assert_eq!(h.moved_first_dial_elsewhere, 2);
        assert_eq!(h.moved_answered_before_change, 1);
        assert_eq!(h.attempts_moved, [(1, 1), (2, 1), (3, 1)].into());
        assert_eq!(h.attempts_stayed, [(0, 2)].into());
        assert_eq!(ms(&h.resync_stayed), (40.0, 40.0, 40.0));
        assert_eq!(ms(&h.resync_moved), (520.0, 900.0, 900.0));
        assert_eq!(h.resync_all.samples, 5);
        assert!((h.resync_all.max_ms - 900.0).abs() < 1e-9);
        assert_eq!(ms(&h.resync_moved_by_attempts[&3]), (900.0, 900.0, 900.0));
        let p = &h.phases;
        assert_eq!(p.ended.samples, 2);
        assert_eq!(ms(&p.ended_to_dialled), (10.0, 50.0, 50.0));
        assert_eq!(ms(&p.connect), (5.0, 10.0, 10.0));
        assert_eq!(ms(&p.authenticate), (5.0, 140.0, 140.0));
        // Only the spoke answered after the change: its first snapshot was the new one.
        assert_eq!(ms(&p.snapshot), (10.0, 10.0, 10.0));
    }

    #[test]
    fn an_empty_handover_is_zero() {
        let h = summarize(&[], 2, 1, 0);
        assert_eq!(h.moved, 0);
        assert_eq!(h.on_replica, vec![0, 0]);
        assert_eq!(h.resync_all, Percentiles::default());
    }
}
