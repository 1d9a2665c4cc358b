//! The soak's warm-up, before its clock: every spoke sends its initial
//! 100-object report (new content for every cluster: N × 100 object rows at
//! once, the ingest a freshly connected fleet costs), the warm-up waits until
//! PostgreSQL holds every cluster's initial content, sends the same reports
//! once more at the soak's pace (the steady state's working set), then
//! waits until the hub's RSS has settled. Only then do the soak's clock, RSS baseline and flips start,
//! so the soak measures the steady state, not the first ingest.

use std::time::{Duration, Instant};

use fleetgate_proto::v1 as pb;
use serde::Serialize;

use super::db;
use crate::swarm::Swarm;
use crate::{Error, Result, proc_stats};

/// The whole warm-up's bound (1 M object rows at a few thousand rows/s on a
/// saturated 2-core machine take minutes).
const BOUND: Duration = Duration::from_secs(20 * 60);
/// Fails the warm-up if no further cluster was stored for this long.
const STALL_BOUND: Duration = Duration::from_secs(3 * 60);
const POLL: Duration = Duration::from_secs(1);
/// After this long without progress, the reports of clusters that do not
/// hold them are sent again: a stream that dropped lost the report in
/// flight, and a real spoke re-sends its report when it reconnects.
const RESEND_AFTER: Duration = Duration::from_secs(30);
const PRINT_EVERY: Duration = Duration::from_secs(5);
/// The hub has settled when its RSS moved less than this fraction over the
/// settle window (sampled every [`POLL`]).
const SETTLE_TOLERANCE: f64 = 0.01;

/// When the hub counts as settled: its RSS samples of a whole `window` lie
/// within 1 % of each other; or, at the latest, after `bound`.
#[derive(Debug, Clone, Copy)]
pub struct Settle {
    window: usize,
    bound: Duration,
}

impl Settle {
    /// A window of `window` (at least two samples), bounded at 12 windows.
    pub fn over(window: Duration) -> Self {
        Self {
            window: ((window.as_secs_f64() / POLL.as_secs_f64()).ceil() as usize).max(2),
            bound: (window * 12).max(POLL * 2),
        }
    }

    /// Whether the last `window` of `samples` lie within [`SETTLE_TOLERANCE`].
    fn settled(&self, samples: &[u64]) -> bool {
        if samples.len() < self.window {
            return false;
        }
        let window = &samples[samples.len() - self.window..];
        let (Some(lo), Some(hi)) = (window.iter().min(), window.iter().max()) else {
            return false;
        };
        (hi - lo) as f64 <= *hi as f64 * SETTLE_TOLERANCE
    }
}

/// What the warm-up took.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Warmup {
    pub reports: usize,
    pub object_rows: u64,
    /// First report sent → PostgreSQL held every cluster's initial content.
    pub stored_seconds: f64,
    /// `object_rows / stored_seconds`.
    pub object_rows_per_second: f64,
    /// The second round, at the soak's pace: first report sent → all stored.
    pub paced_round_seconds: f64,
    /// Reports sent again because their cluster did not hold them after
    /// 30 s without progress (their stream dropped).
    pub reports_resent: u64,
    /// Stored → the hub's RSS settled (or the settle bound).
    pub settle_seconds: f64,
    pub settled: bool,
    /// Hub RSS at its highest during the warm-up, and settled.
    pub rss_peak_kib: u64,
    pub rss_settled_kib: u64,
}

/// Clusters of `names` whose stored report is the warm-up's (`marker`) or newer.
async fn stored(pool: &sqlx::PgPool, names: &[String], marker: i64) -> Result<Result<i64, String>> {
    db::attempt(async {
        let (n,): (i64,) = sqlx::query_as(
            "select count(*) from cluster_connections \
             where cluster = any($1) and clock_offset_ms >= $2",
        )
        .bind(names)
        .bind(marker)
        .fetch_one(pool)
        .await?;
        Ok(n)
    })
    .await
}

/// The hub's process and how the warm-up ends.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub hub_pid: u32,
    pub settle: Settle,
    /// The soak's report interval: the warm-up's second round is paced so.
    pub pace: Duration,
}

/// Waits until every cluster of `names` holds `marker` (or newer): bounded,
/// printing progress, failing after [`STALL_BOUND`] without progress.
/// Clusters of `names` not holding `marker` yet.
async fn missing(
    pool: &sqlx::PgPool,
    names: &[String],
    marker: i64,
) -> Result<Result<Vec<String>, String>> {
    db::attempt(async {
        let rows: Vec<(String,)> = sqlx::query_as(
            "select n from unnest($1::text[]) as n where n not in \
             (select cluster from cluster_connections where cluster = any($1) \
              and clock_offset_ms >= $2)",
        )
        .bind(names)
        .bind(marker)
        .fetch_all(pool)
        .await?;
        Ok(rows.into_iter().map(|(n,)| n).collect())
    })
    .await
}

/// What [`wait_stored`] waits for: a label, objects per report, and how to
/// send spoke `i`'s report again.
struct Wait<'a> {
    what: &'a str,
    objects: usize,
    resend: &'a dyn Fn(usize) -> bool,
    resent: &'a mut u64,
}

async fn wait_stored(
    pool: &sqlx::PgPool,
    names: &[String],
    marker: i64,
    wait: Wait<'_>,
    hub_pid: u32,
    peak: &mut u64,
    progress: &dyn Fn(&str),
) -> Result<()> {
    let Wait {
        what,
        objects,
        resend,
        resent,
    } = wait;
    let n = names.len();
    let start = Instant::now();
    let (mut last, mut last_change, mut printed) = (0i64, Instant::now(), Instant::now());
    let mut last_resend = Instant::now();
    loop {
        if last_change.elapsed() > RESEND_AFTER && last_resend.elapsed() > RESEND_AFTER {
            last_resend = Instant::now();
            if let Ok(names_missing) = missing(pool, names, marker).await? {
                let k = names_missing
                    .iter()
                    .filter_map(|c| names.binary_search(c).ok())
                    .filter(|&i| resend(i))
                    .count();
                *resent += k as u64;
                progress(&format!(
                    "soak warm-up: no progress for {:.0} s: sent the {what} again from the {k} spokes whose clusters do not hold it (a dropped stream loses the report in flight)",
                    last_change.elapsed().as_secs_f64()
                ));
            }
        }
        *peak = (*peak).max(proc_stats::rss_kib(hub_pid)?);
        match stored(pool, names, marker).await? {
            Ok(k) => {
                if k != last {
                    (last, last_change) = (k, Instant::now());
                }
                if k as usize >= n {
                    return Ok(());
                }
            }
            Err(e) => progress(&format!(
                "soak warm-up: PostgreSQL busy ({e}); polling again"
            )),
        }
        let t = start.elapsed();
        if t > BOUND || last_change.elapsed() > STALL_BOUND {
            return Err(Error::Timeout(format!(
                "soak warm-up: after {:.0} s only {last} of {n} clusters hold their {what} \
                 ({:.0} s without progress); PostgreSQL cannot store this fleet's reports",
                t.as_secs_f64(),
                last_change.elapsed().as_secs_f64()
            )));
        }
        if printed.elapsed() >= PRINT_EVERY {
            printed = Instant::now();
            progress(&format!(
                "soak warm-up: {last} of {n} clusters hold their {what} ({:.0} s; {:.0} object rows/s; hub RSS {} MiB)",
                t.as_secs_f64(),
                last as f64 * objects as f64 / t.as_secs_f64(),
                proc_stats::rss_kib(hub_pid)? / 1024
            ));
        }
        tokio::time::sleep(POLL).await;
    }
}

/// Sends `reports[i]` from spoke `i` (carrying `marker`), waits until every
/// cluster of `names` holds it with all its object rows (as many as the
/// first report's); then sends the same content once more at the soak's
/// pace (spoke i at offset i/N of `plan.pace`, marker + 1000: the steady
/// state's working set of streams and pending reports) and waits until it is
/// stored; then until the hub's RSS has settled.
pub async fn run(
    swarm: &Swarm,
    reports: Vec<pb::StatusReport>,
    names: &[String],
    marker: i64,
    pool: &sqlx::PgPool,
    plan: Plan,
    progress: &dyn Fn(&str),
) -> Result<Warmup> {
    let (hub_pid, settle) = (plan.hub_pid, plan.settle);
    let n = names.len();
    let objects = reports.first().map_or(0, |r| r.objects.len());
    let start = Instant::now();
    let again = reports.clone();
    for (i, report) in reports.into_iter().enumerate() {
        if !swarm.report(i, report) {
            return Err(Error::setup(format!(
                "soak warm-up: spoke {i} cannot send its initial report"
            )));
        }
    }
    progress(&format!(
        "soak warm-up: {n} initial reports of {objects} objects sent; waiting until PostgreSQL holds all {} object rows",
        n * objects
    ));
    let mut peak = proc_stats::rss_kib(hub_pid)?;
    let mut resent = 0u64;
    let resend = |i: usize| swarm.report(i, again[i].clone());
    let wait = Wait {
        what: "initial report",
        objects,
        resend: &resend,
        resent: &mut resent,
    };
    wait_stored(pool, names, marker, wait, hub_pid, &mut peak, progress).await?;
    let stored_seconds = start.elapsed().as_secs_f64();

    // The content, not only the marker: every cluster's object rows.
    let deadline = Instant::now() + BOUND;
    let (rows,): (i64,) = db::retrying(
        "counting the initial object rows",
        deadline,
        progress,
        || {
            sqlx::query_as("select count(*) from object_status where cluster = any($1)")
                .bind(names)
                .fetch_one(pool)
        },
    )
    .await?;
    let want = (n * objects) as u64;
    if rows as u64 != want {
        return Err(Error::setup(format!(
            "soak warm-up: PostgreSQL holds {rows} object rows of the {n} clusters, expected {want}"
        )));
    }
    progress(&format!(
        "soak warm-up: all {n} clusters' initial content stored ({want} object rows) in {stored_seconds:.1} s ({:.0} object rows/s); the same reports again over {:?}",
        want as f64 / stored_seconds,
        plan.pace
    ));

    let paced = Instant::now();
    let t0 = tokio::time::Instant::now();
    let second: Vec<pb::StatusReport> = again
        .into_iter()
        .map(|mut r| {
            r.clock_offset_ms = marker + 1000;
            r
        })
        .collect();
    for (i, report) in second.iter().enumerate() {
        tokio::time::sleep_until(t0 + plan.pace.mul_f64(i as f64 / n as f64)).await;
        if !swarm.report(i, report.clone()) {
            return Err(Error::setup(format!(
                "soak warm-up: spoke {i} cannot send its second report"
            )));
        }
    }
    let resend = |i: usize| swarm.report(i, second[i].clone());
    let wait = Wait {
        what: "second report",
        objects: 0,
        resend: &resend,
        resent: &mut resent,
    };
    wait_stored(
        pool,
        names,
        marker + 1000,
        wait,
        hub_pid,
        &mut peak,
        progress,
    )
    .await?;
    let paced_round_seconds = paced.elapsed().as_secs_f64();
    progress(&format!(
        "soak warm-up: second round stored {paced_round_seconds:.1} s after its first report; letting the hub settle"
    ));

    let settle_start = Instant::now();
    let mut window: Vec<u64> = Vec::new();
    let ok = loop {
        let kib = proc_stats::rss_kib(hub_pid)?;
        peak = peak.max(kib);
        window.push(kib);
        if settle.settled(&window) {
            break true;
        }
        if settle_start.elapsed() > settle.bound {
            break false;
        }
        tokio::time::sleep(POLL).await;
    };
    let w = Warmup {
        reports: n,
        object_rows: want,
        stored_seconds,
        object_rows_per_second: want as f64 / stored_seconds,
        paced_round_seconds,
        reports_resent: resent,
        settle_seconds: settle_start.elapsed().as_secs_f64(),
        settled: ok,
        rss_peak_kib: peak,
        rss_settled_kib: window.last().copied().unwrap_or(0),
    };
    progress(&format!(
        "soak warm-up done in {:.1} s: hub RSS {} MiB ({}settled after {:.0} s; peak {} MiB); the soak's clock starts",
        start.elapsed().as_secs_f64(),
        w.rss_settled_kib / 1024,
        if ok { "" } else { "not " },
        w.settle_seconds,
        w.rss_peak_kib / 1024
    ));
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settled_means_a_full_window_within_one_percent() {
        let s = Settle::over(Duration::from_secs(10));
        assert_eq!((s.window, s.bound), (10, Duration::from_secs(120)));
        assert!(!s.settled(&[]));
        assert!(!s.settled(&[100; 9]), "window not full");
        assert!(s.settled(&[1000; 10]));
        let mut w = vec![1000; 10];
        w[3] = 990;
        assert!(s.settled(&w));
        w[3] = 980;
        assert!(!s.settled(&w), "2 % apart");
        // Only the last window counts: an earlier peak has passed.
        w.extend([1000; 10]);
        assert!(s.settled(&w));
        assert_eq!(Settle::over(Duration::ZERO).window, 2);
    }
}
