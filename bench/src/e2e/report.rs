//! The end-to-end phase's results and their table rows.

use std::time::Duration;

use serde::Serialize;

use crate::stats::{Percentiles, fmt_ms};

/// Flips of one direction (close or open).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FlipSeries {
    /// Every object of every flip: trigger → the watch saw it changed.
    pub per_object: Percentiles,
    /// Per flip: trigger → the last object.
    pub last: Percentiles,
    /// The same, per flip in order (ms).
    pub last_ms: Vec<f64>,
    /// Per flip: the trigger call itself (REST; for the direct floor, until
    /// the last patch call returned).
    pub trigger: Percentiles,
    /// Per flip: CPU time `fleetgate-sim` spent from the trigger until the
    /// last object was seen (user + system, all its threads). Unlike the
    /// latencies it does not depend on how busy the machine's cores are.
    pub sim_cpu: Percentiles,
    /// Per flip, over the same span: CPU time of all real spokes together
    /// (hub flips only).
    pub spokes_cpu: Percentiles,
    /// Per flip, over the same span: CPU time of the hub (hub flips only).
    pub hub_cpu: Percentiles,
    /// Per flip, over the same span: how many of the machine's cores were
    /// busy on average (any process; `/proc/stat`). Near the core count, the
    /// flip's latency is bounded by the machine's CPU.
    pub busy_cores: Vec<f64>,
    #[serde(skip)]
    all: Vec<Duration>,
    #[serde(skip)]
    lasts: Vec<Duration>,
    #[serde(skip)]
    triggers: Vec<Duration>,
    #[serde(skip)]
    sim_cpus: Vec<Duration>,
    #[serde(skip)]
    spokes_cpus: Vec<Duration>,
    #[serde(skip)]
    hub_cpus: Vec<Duration>,
}

impl FlipSeries {
    /// Adds one flip's per-object latencies and its trigger time.
    pub fn add(&mut self, latencies: &[Duration], trigger: Duration) {
        let last = latencies.iter().copied().max().unwrap_or_default();
        self.all.extend_from_slice(latencies);
        self.lasts.push(last);
        self.triggers.push(trigger);
        self.last_ms.push(last.as_secs_f64() * 1e3);
        self.per_object = Percentiles::of(&self.all);
        self.last = Percentiles::of(&self.lasts);
        self.trigger = Percentiles::of(&self.triggers);
    }

    /// Adds one flip's simulator CPU time.
    pub fn add_sim_cpu(&mut self, cpu: Duration) {
        self.sim_cpus.push(cpu);
        self.sim_cpu = Percentiles::of(&self.sim_cpus);
    }

    /// Adds one flip's CPU time of all spokes.
    pub fn add_spokes_cpu(&mut self, cpu: Duration) {
        self.spokes_cpus.push(cpu);
        self.spokes_cpu = Percentiles::of(&self.spokes_cpus);
    }

    /// Adds one flip's CPU time of the hub.
    pub fn add_hub_cpu(&mut self, cpu: Duration) {
        self.hub_cpus.push(cpu);
        self.hub_cpu = Percentiles::of(&self.hub_cpus);
    }

    /// Adds one flip's machine-wide busy CPU time over its `wall` time.
    pub fn add_busy(&mut self, busy: Duration, wall: Duration) {
        if !wall.is_zero() {
            self.busy_cores
                .push(busy.as_secs_f64() / wall.as_secs_f64());
        }
    }

    /// The median of [`Self::busy_cores`].
    pub fn busy_cores_p50(&self) -> f64 {
        let mut v = self.busy_cores.clone();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or_default()
    }
}

/// What the phase measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct E2eResult {
    pub spokes: usize,
    pub objects_per_spoke: usize,
    /// Flips through the hub (half close, half open); the direct floor did as many.
    pub flips: usize,
    pub close: FlipSeries,
    pub open: FlipSeries,
    /// The floor: this process patching the same objects directly.
    pub direct_close: FlipSeries,
    pub direct_open: FlipSeries,
    /// The floor: bare tonic fan-out to N streams, per flip until the last stream.
    pub fanout_floor: Percentiles,
    /// REST round-trip of the flip calls.
    pub rest_call: Percentiles,
    /// Spokes started → the hub stored every spoke's first report.
    pub start_seconds: f64,
    pub spoke_rss_avg_kib: f64,
    pub spoke_rss_max_kib: u64,
    pub sim_rss_kib: u64,
    /// Errors of the bench's own watches (each followed by a re-list).
    pub watch_errors: u64,
    /// CPU cores of the machine.
    pub cores: usize,
}

/// A table row: metric, measured, target, verdict.
pub type Row = (String, String, String, Option<bool>);

impl E2eResult {
    /// Rows for the benchmark's table.
    pub fn rows(&self) -> Vec<Row> {
        let n = self.spokes;
        let total = n * self.objects_per_spoke;
        let mut rows = Vec::new();
        for (what, hub, direct) in [
            ("close → suspended", &self.close, &self.direct_close),
            (
                "open → resumed + requestedAt",
                &self.open,
                &self.direct_open,
            ),
        ] {
            let floor_p50 = self.fanout_floor.p50_ms + direct.last.p50_ms;
            let floor_p99 = self.fanout_floor.p99_ms + direct.last.p99_ms;
            rows.push((
                format!(
                    "e2e, {n} real spokes × {} objects: REST {what}, last of {total} objects \
                     (per flip, {} flips) p50 / p99 / max",
                    self.objects_per_spoke, hub.last.samples
                ),
                format!(
                    "{} (sum of floors p50 {} / p99 {} ms: fan-out {} + direct patch {} ms; {:.1}×)",
                    hub.last.cell(),
                    fmt_ms(floor_p50),
                    fmt_ms(floor_p99),
                    fmt_ms(self.fanout_floor.p99_ms),
                    fmt_ms(direct.last.p99_ms),
                    if floor_p99 > 0.0 {
                        hub.last.p99_ms / floor_p99
                    } else {
                        0.0
                    }
                ),
                "last object p99 ≤ 1 s (#19)".into(),
                Some(hub.last.p99_ms <= 1000.0),
            ));
            rows.push((
                format!(
                    "e2e {what}: per object p50 / p99 / max (direct patch floor); \
                     CPU per flip p50: fleetgate-sim (direct), all spokes, hub; \
                     machine cores busy p50 (direct)"
                ),
                format!(
                    "{} ({}); sim {} ms ({} ms), spokes {} ms, hub {} ms; {:.2} ({:.2}) of {} cores",
                    hub.per_object.cell(),
                    direct.per_object.cell(),
                    fmt_ms(hub.sim_cpu.p50_ms),
                    fmt_ms(direct.sim_cpu.p50_ms),
                    fmt_ms(hub.spokes_cpu.p50_ms),
                    fmt_ms(hub.hub_cpu.p50_ms),
                    hub.busy_cores_p50(),
                    direct.busy_cores_p50(),
                    self.cores
                ),
                String::new(),
                None,
            ));
        }
        rows.push((
            format!("e2e: {n} real spokes, footprint"),
            format!(
                "spoke RSS avg {:.1} MiB, max {:.1} MiB; fleetgate-sim RSS {} MiB; all spokes \
                 reported {:.1} s after start; REST call p50 {} ms; bench watch errors {}",
                self.spoke_rss_avg_kib / 1024.0,
                self.spoke_rss_max_kib as f64 / 1024.0,
                self.sim_rss_kib / 1024,
                self.start_seconds,
                fmt_ms(self.rest_call.p50_ms),
                self.watch_errors
            ),
            String::new(),
            None,
        ));
        rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_pools_objects_and_keeps_each_flips_last() {
        let ms = Duration::from_millis;
        let mut s = FlipSeries::default();
        s.add(&[ms(10), ms(30), ms(20)], ms(5));
        s.add(&[ms(50), ms(40)], ms(7));
        assert_eq!(s.per_object.samples, 5);
        assert_eq!(s.last_ms, vec![30.0, 50.0]);
        assert!((s.last.max_ms - 50.0).abs() < 1e-9);
        assert!((s.trigger.p50_ms - 5.0).abs() < 1e-9);
        assert_eq!(s.sim_cpu.samples, 0);
        s.add_sim_cpu(ms(120));
        s.add_sim_cpu(ms(80));
        assert_eq!(s.sim_cpu.samples, 2);
        assert!((s.sim_cpu.max_ms - 120.0).abs() < 1e-9);
    }

    #[test]
    fn verdict_is_on_the_last_object_p99() {
        let ms = Duration::from_millis;
        let mut r = E2eResult {
            spokes: 1,
            objects_per_spoke: 2,
            ..E2eResult::default()
        };
        r.close.add(&[ms(100), ms(900)], ms(1));
        r.open.add(&[ms(100), ms(1100)], ms(1));
        let verdicts: Vec<Option<bool>> = r.rows().iter().map(|row| row.3).collect();
        assert_eq!(verdicts, vec![Some(true), None, Some(false), None, None]);
    }
}
