//! The run's results, printed as a Markdown table (with each issue-9 target
//! and whether it was met) or as JSON.

use serde::Serialize;

use crate::flip_pairs::FlipPairs;
pub use crate::ingest::IngestResult;
use crate::stats::{Percentiles, fmt_ms};
use crate::storm::StormResult;

mod rolling_rows;
use rolling_rows::{attempts, failures, listed_phases};

/// Everything one run measured.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// How the fleet was registered, and how long it took.
    pub registration: Registration,
    /// PostgreSQL NOTIFY → LISTEN round-trip.
    pub notify_rtt: Percentiles,
    /// Per fleet size.
    pub sizes: Vec<SizeResult>,
    pub storm: Option<StormResult>,
    /// The storm's floor: the same swarm on the bare fan-out server, restarted
    /// (`storm::floor`).
    pub storm_floor: Option<StormResult>,
    /// The same storm with the spokes signing in with their clusters' JWTs.
    pub storm_jwt: Option<StormResult>,
    /// The cost of one spoke JWT verification with cached keys, per algorithm (the
    /// JWT storm's first).
    pub jwt_verify: Vec<crate::jwt::VerifyCost>,
    /// Two (or more) hub replicas on one PostgreSQL.
    pub replicas: Option<crate::replicas::ReplicasResult>,
    pub ingest: Option<IngestResult>,
    /// The same ingest through `--baseline-hub`, in the same run.
    pub ingest_baseline: Option<IngestResult>,
    pub steady: Option<SteadyResult>,
    pub spoke: Option<SpokeResult>,
    /// End to end with real spokes (#19 item 5).
    pub e2e: Option<crate::e2e::E2eResult>,
    /// Soak with the largest fleet (#19 item 7).
    pub soak: Option<crate::soak::SoakResult>,
    /// Snapshot size on the wire (bytes of the protobuf `Snapshot`).
    pub snapshot_bytes: usize,
    pub cores: usize,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct Registration {
    pub clusters: usize,
    pub seconds: f64,
    pub method: String,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SizeResult {
    pub spokes: usize,
    /// Per-spoke delivery latency after a REST flip, all flips pooled.
    pub hub_flip: Percentiles,
    /// Per flip: time until the last spoke had it.
    pub hub_flip_all: Percentiles,
    /// The same per flip, in order (ms).
    pub hub_flip_all_ms: Vec<f64>,
    /// The same, bare tonic fan-out (no hub logic).
    pub floor_flip: Percentiles,
    pub floor_flip_all: Percentiles,
    /// REST round-trip of the flip request itself.
    pub rest_call: Percentiles,
    /// The hub's flips and the floor's taken in pairs (empty where the floor's
    /// flips ran apart from the hub's).
    pub flip_pairs: FlipPairs,
    /// Seconds to connect the (additional) spokes of this size.
    pub connect_seconds: f64,
    pub hub_rss_kib: u64,
    pub hub_rss_per_spoke_kib: f64,
    /// The same for the bare fan-out server with the same number of streams,
    /// in the same run (the library's own memory per connection).
    pub floor_rss_per_spoke_kib: f64,
    pub hub_idle_millicores: f64,
}

/// An idle fleet re-sending unchanged reports at the heartbeat interval.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SteadyResult {
    pub spokes: usize,
    pub objects_per_report: usize,
    pub report_interval_seconds: f64,
    pub window_seconds: f64,
    /// Until every spoke's first report (all new content) was stored.
    pub warmup_seconds: f64,
    /// Rows inserted + updated + deleted per second, all tables
    /// (`pg_stat_user_tables`).
    pub rows_per_second: f64,
    pub per_table_rows_per_second: std::collections::BTreeMap<String, f64>,
    pub wal_bytes_per_second: f64,
    /// Reports the fleet sends per second, and the object rows they carry.
    pub reports_per_second: f64,
    pub object_rows_offered_per_second: f64,
    /// Reports the swarm could not hand to a stream (none expected).
    pub reports_not_sent: u64,
}

#[derive(Debug, Clone, Default, Serialize)]
pub struct SpokeResult {
    pub objects: usize,
    pub reported_objects: usize,
    pub rss_kib: u64,
    /// Of `rss_kib`: anonymous memory (heap, stacks) and file-backed pages
    /// (the mapped binary and libraries), `/proc/<pid>/status` RssAnon, RssFile.
    pub rss_anon_kib: u64,
    pub rss_file_kib: u64,
    /// The spoke binary's size on disk.
    pub binary_bytes: u64,
    pub idle_millicores: f64,
}

fn verdict(ok: bool) -> &'static str {
    if ok { "✅" } else { "❌" }
}

impl Report {
    /// The Markdown table.
    pub fn table(&self) -> String {
        let mut t = String::new();
        t.push_str("| metric | measured | target | |\n|---|---|---|---|\n");
        let mut row = |m: String, v: String, target: &str, ok: Option<bool>| {
            let mark = ok.map(verdict).unwrap_or("");
            t.push_str(&format!("| {m} | {v} | {target} | {mark} |\n"));
        };
        row(
            "PostgreSQL NOTIFY round-trip (floor) p50 / p99 / max".into(),
            self.notify_rtt.cell(),
            "",
            None,
        );
        for s in &self.sizes {
            let n = s.spokes;
            let target = match n {
                ..=1000 => Some(("p99 ≤ 50 ms", s.hub_flip.p99_ms <= 50.0)),
                10_000.. => Some((
                    "p99 ≤ 250 ms and ≤ 3× floor",
                    s.hub_flip.p99_ms <= 250.0 && s.hub_flip.p99_ms <= 3.0 * s.floor_flip.p99_ms,
                )),
                _ => None,
            };
            row(
                format!(
                    "flip → spoke, {n} spokes, hub (per spoke, {} flips) p50 / p99 / max",
                    s.hub_flip_all.samples
                ),
                s.hub_flip.cell(),
                target.map_or("", |t| t.0),
                target.map(|t| t.1),
            );
            row(
                format!("flip → spoke, {n} spokes, bare tonic floor p50 / p99 / max"),
                s.floor_flip.cell(),
                "",
                None,
            );
            let ratio = if s.floor_flip.p99_ms > 0.0 {
                s.hub_flip.p99_ms / s.floor_flip.p99_ms
            } else {
                0.0
            };
            let with_notify = s.floor_flip.p99_ms + self.notify_rtt.p99_ms;
            row(
                format!("ratio hub p99 / floor p99, {n} spokes"),
                format!(
                    "{ratio:.1}× (vs floor + NOTIFY {}: {:.1}×)",
                    fmt_ms(with_notify),
                    if with_notify > 0.0 {
                        s.hub_flip.p99_ms / with_notify
                    } else {
                        0.0
                    }
                ),
                match n {
                    19_000.. => "≤ 2× (#19)",
                    10_000.. => "≤ 1.5× (#19; #9: ≤ 3×)",
                    _ => "",
                },
                match n {
                    19_000.. => Some(ratio <= 2.0),
                    10_000.. => Some(ratio <= 1.5),
                    _ => None,
                },
            );
            for (metric, measured) in s.flip_pairs.rows(n) {
                row(metric, measured, "", None);
            }
            row(
                format!("flip → all {n} spokes (per flip) p50 / max; REST call p50"),
                format!(
                    "{} / {} ms; {} ms",
                    fmt_ms(s.hub_flip_all.p50_ms),
                    fmt_ms(s.hub_flip_all.max_ms),
                    fmt_ms(s.rest_call.p50_ms)
                ),
                "",
                None,
            );
            row(
                format!("hub RSS per connected spoke, {n} spokes"),
                format!(
                    "{:.1} KiB (RSS {} MiB; connect took {:.1} s)",
                    s.hub_rss_per_spoke_kib,
                    s.hub_rss_kib / 1024,
                    s.connect_seconds
                ),
                if n >= 19_000 {
                    "≤ 24 KiB (#19)"
                } else {
                    "≤ 32 KiB (#9)"
                },
                Some(s.hub_rss_per_spoke_kib <= if n >= 19_000 { 24.0 } else { 32.0 }),
            );
            let ratio = s.hub_rss_per_spoke_kib / s.floor_rss_per_spoke_kib.max(0.1);
            row(
                format!("hub RSS per spoke / bare fan-out server's per stream, {n}"),
                format!(
                    "{:.1} / {:.1} KiB = {ratio:.2}×",
                    s.hub_rss_per_spoke_kib, s.floor_rss_per_spoke_kib
                ),
                "≤ 1.25× (#50)",
                Some(ratio <= 1.25),
            );
            row(
                format!("hub idle CPU, {n} spokes connected"),
                format!("{:.1} millicores", s.hub_idle_millicores),
                "",
                None,
            );
        }
        if let Some(f) = &self.storm_floor {
            row(
                format!(
                    "reconnect storm floor: {} spokes on the bare fan-out server, stopped (streams ended OK) and started again: restart → all re-synced",
                    f.spokes
                ),
                format!(
                    "{:.2} s (down {:.2} s of which stop {:.2} s, every spoke's stream ended at {:.3} s; after ready: p50 {} ms, p99 {} ms, all {:.2} s; attempts → spokes {}; failed attempts {}); phases p50 / p99 / max: ready → dialled {}; accept {}; headers {}; snapshot {}",
                    f.resync.max_ms / 1e3,
                    f.hub_down_seconds,
                    f.hub_stop_seconds,
                    f.streams_ended_seconds,
                    fmt_ms(f.resync_after_ready.p50_ms),
                    fmt_ms(f.resync_after_ready.p99_ms),
                    f.resync_after_ready.max_ms / 1e3,
                    attempts(&f.attempts),
                    failures(&f.failures),
                    f.resync_phases.dialled_after_ready.cell(),
                    f.resync_phases.connect.cell(),
                    f.resync_phases.authenticate.cell(),
                    f.resync_phases.snapshot.cell(),
                ),
                "",
                None,
            );
            if let Some(s) = &self.storm {
                row(
                    format!(
                        "reconnect storm, {} spokes: hub / floor, restart → all re-synced (down; after ready); the new server's CPU to the last re-sync; the machine's busy CPU over the restart",
                        s.spokes
                    ),
                    format!(
                        "{:.2} / {:.2} s = {:.2}× ({:.2} / {:.2} s; {:.2} / {:.2} s = {:.2}×); {:.2} / {:.2} CPU-s; {:.2} / {:.2} CPU-s of {:.2} / {:.2} available",
                        s.resync.max_ms / 1e3,
                        f.resync.max_ms / 1e3,
                        s.resync.max_ms / f.resync.max_ms.max(1.0),
                        s.hub_down_seconds,
                        f.hub_down_seconds,
                        s.resync_after_ready.max_ms / 1e3,
                        f.resync_after_ready.max_ms / 1e3,
                        s.resync_after_ready.max_ms / f.resync_after_ready.max_ms.max(1.0),
                        s.server_cpu_seconds,
                        f.server_cpu_seconds,
                        s.machine_busy_seconds,
                        f.machine_busy_seconds,
                        s.resync.max_ms / 1e3 * self.cores as f64,
                        f.resync.max_ms / 1e3 * self.cores as f64,
                    ),
                    "",
                    None,
                );
            }
        }
        for s in self.storm.iter().chain(&self.storm_jwt) {
            row(
                format!(
                    "reconnect storm, {} spokes signing in with a {}: restart → all re-synced",
                    s.spokes, s.credential
                ),
                format!(
                    "{:.2} s (hub down {:.2} s of which drain {:.2} s; after ready: p50 {} ms, p99 {} ms, all {:.2} s; max {} attempts; attempts → spokes {}; failed attempts {})",
                    s.resync.max_ms / 1e3,
                    s.hub_down_seconds,
                    s.hub_stop_seconds,
                    fmt_ms(s.resync_after_ready.p50_ms),
                    fmt_ms(s.resync_after_ready.p99_ms),
                    s.resync_after_ready.max_ms / 1e3,
                    s.max_attempts,
                    attempts(&s.attempts),
                    failures(&s.failures)
                ),
                "≤ 2 s, ≤ 3 attempts (#50)",
                Some(s.resync.max_ms <= 2000.0 && s.max_attempts <= 3),
            );
            let p = &s.resync_phases;
            row(
                format!(
                    "reconnect storm ({}): re-sync phases per spoke p50 / p99 / max",
                    s.credential
                ),
                format!(
                    "ready → dialled {}; dialled → connected (accept) {}; connected → headers (authentication) {}; headers → snapshot {}",
                    p.dialled_after_ready.cell(),
                    p.connect.cell(),
                    p.authenticate.cell(),
                    p.snapshot.cell()
                ),
                "",
                None,
            );
            let listed = listed_phases;
            row(
                format!(
                    "reconnect storm ({}): old hub SIGTERM → exited",
                    s.credential
                ),
                format!(
                    "{:.3} s (every spoke's stream ended at {:.3} s, as the spokes saw it; in the hub: {})",
                    s.hub_stop_seconds,
                    s.streams_ended_seconds,
                    listed(&s.drain_phases, "no drain log")
                ),
                "",
                None,
            );
            row(
                format!(
                    "reconnect storm ({}): new hub process start → ready",
                    s.credential
                ),
                format!(
                    "{:.3} s (in the hub: {})",
                    s.hub_start_seconds,
                    listed(&s.startup_phases, "no startup log")
                ),
                "≤ 0.5 s (#19)",
                Some(s.hub_start_seconds <= 0.5),
            );
        }
        if let (Some(t), Some(j)) = (&self.storm, &self.storm_jwt) {
            let ratio = j.resync.max_ms / t.resync.max_ms.max(1.0);
            row(
                format!(
                    "reconnect storm, {} spokes: JWT (cached keys) / cluster token, restart → all re-synced",
                    j.spokes
                ),
                format!(
                    "{:.2} / {:.2} s = {ratio:.2}× (p50 {:.2}×)",
                    j.resync.max_ms / 1e3,
                    t.resync.max_ms / 1e3,
                    j.resync.p50_ms / t.resync.p50_ms.max(1.0)
                ),
                "≤ 1.2× (#52)",
                Some(ratio <= 1.2),
            );
        }
        for v in &self.jwt_verify {
            row(
                format!(
                    "one spoke JWT verification, keys cached ({}, {} verifications) p50 / p99 / max",
                    v.algorithm, v.samples
                ),
                format!(
                    "{:.1} / {:.1} / {:.1} µs; mean {:.1} µs",
                    v.p50_us, v.p99_us, v.max_us, v.mean_us
                ),
                "",
                None,
            );
        }
        if let Some(r) = &self.replicas {
            row(
                format!(
                    "flip → spoke, {} spokes spread over {} replicas on one PostgreSQL (flips through each in turn) p50 / p99 / max",
                    r.spokes, r.replicas
                ),
                format!(
                    "{} (streams per replica {:?}; one replica, same run: {}); p99 {:.2}× one replica",
                    r.spread.cell(),
                    r.streams_per_replica,
                    r.single.cell(),
                    r.ratio_p99
                ),
                "p99 ≤ 1.2× one replica (#19)",
                Some(r.ratio_p99 <= 1.2),
            );
            if let Some(g) = &r.rolling {
                rolling_rows::rolling_rows(
                    g,
                    r.replicas,
                    self.storm.as_ref().map(|s| s.resync.max_ms / 1e3),
                    self.cores,
                    &mut row,
                );
            }
        }
        if let Some(i) = &self.ingest {
            row(
                format!(
                    "status ingest ({} spokes × {} objects, {} rounds)",
                    i.spokes, i.objects_per_report, i.rounds
                ),
                format!("{:.0} object reports/s", i.objects_per_second),
                "≥ 40k reports/s (#50)",
                Some(i.objects_per_second >= 40_000.0),
            );
            row(
                format!(
                    "storage per report ({} objects, all changed): rows written; WAL",
                    i.objects_per_report
                ),
                format!(
                    "{:.1} rows; {:.1} KiB",
                    i.rows_per_report,
                    i.wal_bytes_per_report / 1024.0
                ),
                "",
                None,
            );
            row(
                "status report → durable p50 / p99 / max".into(),
                i.durable.cell(),
                "",
                None,
            );
            row(
                format!(
                    "hub RSS added per reporting spoke (after the ingest, {} objects each)",
                    i.objects_per_report
                ),
                format!("{:.1} KiB", i.hub_rss_per_reporting_spoke_kib),
                "",
                None,
            );
        }
        if let (Some(i), Some(b)) = (&self.ingest, &self.ingest_baseline) {
            row(
                format!(
                    "status ingest, same run, baseline hub ({} rounds): objects/s; storage per report; report → durable p99",
                    b.rounds
                ),
                format!(
                    "{:.0} object reports/s (this hub {:.2}×); {:.1} rows, {:.1} KiB WAL; {} ms",
                    b.objects_per_second,
                    i.objects_per_second / b.objects_per_second.max(1.0),
                    b.rows_per_report,
                    b.wal_bytes_per_report / 1024.0,
                    fmt_ms(b.durable.p99_ms)
                ),
                "",
                None,
            );
        }
        if let Some(s) = &self.steady {
            let tables: Vec<String> = s
                .per_table_rows_per_second
                .iter()
                .map(|(t, r)| format!("{t} {r:.0}"))
                .collect();
            row(
                format!(
                    "idle fleet, {} spokes × {} objects, unchanged report every {:.0} s: database writes",
                    s.spokes, s.objects_per_report, s.report_interval_seconds
                ),
                format!(
                    "{:.0} rows/s ({}), WAL {:.0} KiB/s, over {:.0} s; reports carry {:.0} object rows/s (first reports stored in {:.0} s)",
                    s.rows_per_second,
                    if tables.is_empty() {
                        "none".into()
                    } else {
                        tables.join(", ")
                    },
                    s.wal_bytes_per_second / 1024.0,
                    s.window_seconds,
                    s.object_rows_offered_per_second,
                    s.warmup_seconds
                ),
                "≤ 1 % of one row per reported object",
                Some(s.rows_per_second <= 0.01 * s.object_rows_offered_per_second),
            );
        }
        if let Some(s) = &self.spoke {
            row(
                format!(
                    "spoke RSS governing {} objects ({} reported)",
                    s.objects, s.reported_objects
                ),
                format!(
                    "{:.1} MiB (anonymous {:.1} MiB, file-backed {:.1} MiB; binary {:.1} MiB on disk)",
                    s.rss_kib as f64 / 1024.0,
                    s.rss_anon_kib as f64 / 1024.0,
                    s.rss_file_kib as f64 / 1024.0,
                    s.binary_bytes as f64 / 1048576.0
                ),
                "≤ 16 MiB (#50)",
                Some(s.rss_kib <= 16 * 1024),
            );
            row(
                "spoke idle CPU".into(),
                format!("{:.2} millicores", s.idle_millicores),
                "≤ 1 millicore",
                Some(s.idle_millicores <= 1.0),
            );
        }
        let phases = self.soak.iter().flat_map(|s| s.rows());
        for (m, v, target, ok) in phases.chain(self.e2e.iter().flat_map(|e| e.rows())) {
            row(m, v, &target, ok);
        }
        t
    }

    /// Notes printed under the table: how the numbers were made.
    pub fn notes(&self) -> String {
        format!(
            "Setup: {} clusters registered in {:.1} s ({}). Snapshot: {} bytes. {} cores; hub, \
             PostgreSQL, the simulated spokes and the floor server share them.\n",
            self.registration.clusters,
            self.registration.seconds,
            self.registration.method,
            self.snapshot_bytes,
            self.cores
        )
    }
}
