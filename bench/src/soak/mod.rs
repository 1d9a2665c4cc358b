//! Soak (#19 item 7): the largest fleet of simulated spokes for a fixed time,
//! the bench gate flipped through REST every 30 s, every spoke sending a
//! 100-object status report every 60 s (spoke i at offset i/N of the minute).
//!
//! Before the clock, a warm-up (`warmup`): every spoke's initial report is
//! stored and the hub's RSS settles, so the soak measures the steady state
//! and not a fleet's first ingest (N × 100 new object rows at once).
//!
//! Report content: each spoke's report changes in one round of ten (spoke i
//! in rounds r ≡ i mod 10: object `app-0000` gets a new revision), as if one
//! of its Flux objects applied a new revision every ten minutes; the other
//! nine are unchanged (the hub stores only changed content, and of a changed
//! report only the changed object). Every report also carries the round in
//! `clock_offset_ms` (the hub stores the offset of every report that differs
//! by ≥ 1 s, in the same transaction as its content), so PostgreSQL says
//! which report of each cluster it holds.
//!
//! Checked: hub RSS every 5 s (growth over the soak), every flip reaching
//! every spoke, no stream ending (the swarm's stream ends and reconnects, the
//! hub's `stream_ends_total`), and no report lost: the hub's
//! `reports_received_total` grew by exactly the reports sent, and after each
//! round every cluster's row holds that round's marker (or a newer one), and
//! at the end every cluster holds its last report's content. The
//! benchmark's own reads retry while PostgreSQL is saturated (`db`).

mod db;
mod report;
mod warmup;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use fleetgate_proto::v1 as pb;

pub use report::SoakResult;
pub use warmup::Warmup;

use crate::fleet::{self, Flipper};
use crate::stats::Percentiles;
use crate::swarm::Swarm;
use crate::{BenchConfig, Error, Result, ingest, proc_stats};

const RSS_EVERY: Duration = Duration::from_secs(5);
const OBJECTS: usize = 100;
/// A flip must reach every spoke within this.
const FLIP_BOUND: Duration = Duration::from_secs(25);
/// After a round, until every cluster holds it.
const STORED_BOUND: Duration = Duration::from_secs(55);
/// Round markers in `clock_offset_ms`, far from any real offset and from the
/// ingest phase's, one second apart (the warm-up's two rounds: -2 and -1).
const MARKER_BASE: i64 = 8_000_000_000;
const WARMUP_MARKER: i64 = MARKER_BASE - 2000;
/// The final check's bound (PostgreSQL may still be busy).
const FINAL_BOUND: Duration = Duration::from_secs(5 * 60);
/// The soak's report content base (differs from every other phase's).
const SOAK_ROUND: usize = 888_888;

fn marker(round: u64) -> i64 {
    MARKER_BASE + 1000 * i64::try_from(round).unwrap_or(0)
}

/// How many times spoke `i`'s content changed up to and including `round`
/// (0: the warm-up's content).
fn version(i: usize, round: u64) -> u64 {
    (round + 10 - (i % 10) as u64) / 10
}

/// The revision object `app-0000` carries in content version `v`.
fn revision(v: u64) -> String {
    format!("main@sha1:soak{v:036}")
}

/// Spoke `i`'s report of `round`.
fn report(base: &[pb::ObjectStatus], i: usize, round: u64, held_revision: u64) -> pb::StatusReport {
    with_content(base, version(i, round), marker(round), held_revision)
}

/// A report of content version `v` carrying `marker`.
fn with_content(
    base: &[pb::ObjectStatus],
    v: u64,
    marker: i64,
    held_revision: u64,
) -> pb::StatusReport {
    let mut objects = base.to_vec();
    if let Some(o) = objects.first_mut() {
        let rev = revision(v);
        o.last_applied_revision.clone_from(&rev);
        o.newest_source_revision.clone_from(&rev);
        o.last_attempted_revision = rev;
    }
    pb::StatusReport {
        objects,
        revision: held_revision,
        clock_offset_ms: marker,
        ..Default::default()
    }
}

/// What the hub's `/metrics` says (sums over label sets).
async fn scrape(client: &reqwest::Client, base: &str) -> Result<(f64, f64)> {
    let text = client
        .get(format!("{base}/metrics"))
        .timeout(Duration::from_secs(10))
        .send()
        .await?
        .error_for_status()?
        .text()
        .await?;
    let sum = |name: &str| -> f64 {
        text.lines()
            .filter(|l| {
                l.strip_prefix(name)
                    .is_some_and(|r| r.starts_with(' ') || r.starts_with('{'))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum()
    };
    Ok((
        sum("fleetgate_hub_grpc_reports_received_total"),
        sum("fleetgate_hub_grpc_stream_ends_total"),
    ))
}

/// Runs the soak for `duration` with every spoke of `swarm`.
pub async fn run(
    swarm: &Swarm,
    flipper: &mut Flipper,
    hub_pid: u32,
    hub_base: &str,
    pool: &sqlx::PgPool,
    cfg: &BenchConfig,
    progress: &dyn Fn(&str),
) -> Result<SoakResult> {
    let duration = cfg.soak;
    let report_every = cfg.soak_report_every;
    let flip_every = cfg.soak_flip_every;
    let n = swarm.len();
    let names: Vec<String> = (0..n).map(fleet::cluster_name).collect();
    let base = ingest::objects(SOAK_ROUND, OBJECTS);
    let http = reqwest::Client::new();
    // Streams count from before the warm-up, reports from after it.
    let (_, ends0) = scrape(&http, hub_base).await?;
    let sessions0: u64 = swarm
        .slots
        .iter()
        .map(|s| s.sessions.load(Ordering::Acquire))
        .sum();
    let swarm_ends0: u64 = swarm
        .slots
        .iter()
        .map(|s| s.ends.load(Ordering::Acquire))
        .sum();
    // Every spoke's initial content, stored before the clock starts.
    let initial = (0..n)
        .map(|i| {
            let held = swarm.slots[i].revision.load(Ordering::Acquire);
            with_content(&base, 0, WARMUP_MARKER, held)
        })
        .collect();
    let plan = warmup::Plan {
        hub_pid,
        settle: warmup::Settle::over(cfg.soak_settle_window),
        pace: report_every,
    };
    let warmup = warmup::run(swarm, initial, &names, WARMUP_MARKER, pool, plan, progress).await?;
    let (received0, _) = scrape(&http, hub_base).await?;
    let cpu0 = proc_stats::cpu_time(hub_pid)?;
    flipper.warm_up().await?;
    let mut rss: Vec<(f64, u64)> = vec![(0.0, proc_stats::rss_kib(hub_pid)?)];
    let start = Instant::now();
    let end = start + duration;
    let rounds = (duration.as_secs_f64() / report_every.as_secs_f64())
        .ceil()
        .max(1.0) as u64;

    // Reports: spoke i at offset i/N of each minute; after each round, wait
    // until PostgreSQL holds it for every cluster.
    let mut sent = 0u64;
    let mut unsent = 0u64;
    let mut round_stored: Vec<report::RoundStored> = Vec::new();
    let reports = async {
        let t0 = tokio::time::Instant::from_std(start);
        for round in 0..rounds {
            for i in 0..n {
                let due =
                    t0 + report_every * round as u32 + report_every.mul_f64(i as f64 / n as f64);
                tokio::time::sleep_until(due).await;
                let held = swarm.slots[i].revision.load(Ordering::Acquire);
                if swarm.report(i, report(&base, i, round, held)) {
                    sent += 1;
                } else {
                    unsent += 1;
                }
            }
            let sent_at = Instant::now();
            let mut stored = 0;
            loop {
                // A busy database is "not yet", never an abort of the soak.
                match db::attempt(
                    sqlx::query_as::<_, (i64,)>(
                        "select count(*) from cluster_connections \
                         where cluster = any($1) and clock_offset_ms >= $2",
                    )
                    .bind(&names)
                    .bind(marker(round))
                    .fetch_one(pool),
                )
                .await?
                {
                    Ok((k,)) => stored = k as usize,
                    Err(e) => progress(&format!(
                        "soak: report round {round}: PostgreSQL busy ({e}); polling again"
                    )),
                }
                if stored >= n || sent_at.elapsed() > STORED_BOUND {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
            let lag = sent_at.elapsed().as_secs_f64();
            progress(&format!(
                "soak: report round {round}: {stored} of {n} clusters hold it ({lag:.1} s after its last report)"
            ));
            round_stored.push(report::RoundStored {
                round,
                stored,
                seconds_after_last_report: lag,
            });
        }
        Ok::<_, Error>(())
    };

    // Flips every 30 s, each until every spoke holds it.
    let mut flip_all = Vec::new();
    let mut flips_late = 0usize;
    let flips = async {
        let mut k = 0usize;
        loop {
            let due = start + flip_every * (k as u32 + 1);
            if due >= end {
                return Ok::<_, Error>(());
            }
            tokio::time::sleep_until(due.into()).await;
            let before = swarm.snapshot_counts();
            let t0 = Instant::now();
            flipper.flip(k).await?;
            match swarm.wait_all_past(&before, FLIP_BOUND).await {
                Ok(arrivals) => {
                    let last = arrivals
                        .iter()
                        .map(|&us| swarm.since(t0, us))
                        .max()
                        .unwrap_or_default();
                    flip_all.push(last);
                }
                Err(Error::Timeout(_)) => flips_late += 1,
                Err(e) => return Err(e),
            }
            k += 1;
        }
    };

    // Hub RSS every 5 s (the first sample, at 0 s, was taken above).
    let sample = async {
        let mut tick = tokio::time::interval(RSS_EVERY);
        tick.tick().await;
        loop {
            tick.tick().await;
            if Instant::now() >= end {
                return Ok::<_, Error>(());
            }
            rss.push((start.elapsed().as_secs_f64(), proc_stats::rss_kib(hub_pid)?));
        }
    };
    let (r, f, s) = tokio::join!(reports, flips, sample);
    r?;
    f?;
    s?;
    let elapsed = start.elapsed();
    let hub_millicores = (proc_stats::cpu_time(hub_pid)?.saturating_sub(cpu0)).as_secs_f64()
        / elapsed.as_secs_f64()
        * 1e3;

    // Every cluster holds its last report (marker and content).
    let last = rounds - 1;
    let deadline = Instant::now() + FINAL_BOUND;
    let rows: Vec<(String, Option<i64>, Option<String>)> = db::retrying(
        "reading every cluster's last report",
        deadline,
        progress,
        || {
            sqlx::query_as(
                "select c.cluster, c.clock_offset_ms, o.last_applied_revision \
                 from cluster_connections c left join object_status o \
                   on o.cluster = c.cluster and o.name = 'app-0000' \
                 where c.cluster = any($1)",
            )
            .bind(&names)
            .fetch_all(pool)
        },
    )
    .await?;
    let last_stored = rows
        .iter()
        .filter(|(cluster, offset, rev)| {
            let i = names.binary_search(cluster).unwrap_or(usize::MAX);
            *offset == Some(marker(last)) && rev.as_deref() == Some(&revision(version(i, last)))
        })
        .count();
    let (received1, ends1) = scrape(&http, hub_base).await?;
    let sessions1: u64 = swarm
        .slots
        .iter()
        .map(|s| s.sessions.load(Ordering::Acquire))
        .sum();
    let swarm_ends1: u64 = swarm
        .slots
        .iter()
        .map(|s| s.ends.load(Ordering::Acquire))
        .sum();
    Ok(SoakResult::new(report::Counts {
        spokes: n,
        duration_seconds: duration.as_secs_f64(),
        seconds: elapsed.as_secs_f64(),
        report_every_seconds: report_every.as_secs_f64(),
        flip_every_seconds: flip_every.as_secs_f64(),
        rounds: round_stored,
        reports_sent: sent,
        reports_not_sent: unsent,
        reports_received: (received1 - received0) as u64,
        last_report_stored: last_stored,
        flips: Percentiles::of(&flip_all),
        flips_late,
        stream_ends_hub: (ends1 - ends0) as u64,
        stream_ends_swarm: swarm_ends1 - swarm_ends0,
        reconnects: sessions1 - sessions0,
        rss,
        // The warm-up ran before the clock.
        warmup_seconds: 0.0,
        warmup,
        hub_millicores,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_spoke_changes_content_once_every_ten_rounds() {
        for i in [0, 3, 9, 10, 9_999] {
            // The warm-up's content is version 0.
            let previous = |r: u64| if r == 0 { 0 } else { version(i, r - 1) };
            let changes: Vec<u64> = (0..30u64)
                .filter(|&r| version(i, r) != previous(r))
                .collect();
            // One round in ten, from the first: never everyone at once.
            let offset = (i % 10) as u64;
            let want: Vec<u64> = (0..30).filter(|r| r % 10 == offset).collect();
            assert_eq!(changes, want, "spoke {i}");
        }
    }

    #[test]
    fn reports_carry_round_marker_and_content_version() {
        let base = ingest::objects(SOAK_ROUND, 3);
        let a = report(&base, 7, 7, 42);
        let b = report(&base, 7, 8, 42);
        assert_eq!(a.revision, 42);
        assert_eq!(b.clock_offset_ms - a.clock_offset_ms, 1000);
        assert_eq!(a.objects[0].last_applied_revision, revision(1));
        assert_eq!(
            a.objects[0].last_applied_revision,
            b.objects[0].last_applied_revision
        );
        assert_ne!(
            report(&base, 7, 17, 42).objects[0].last_applied_revision,
            a.objects[0].last_applied_revision
        );
        assert_eq!(a.objects[1..], base[1..]);
        assert_eq!(revision(3).len(), "main@sha1:".len() + 40);
    }
}
