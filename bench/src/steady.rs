//! Steady state of an idle fleet: every spoke re-sends the same status report
//! at the real spoke's heartbeat interval (spread evenly over the interval, as
//! independent spokes are) while the hub sends its keepalives, and PostgreSQL's
//! own counters (`pg_stat_user_tables`, WAL position) say how many rows the
//! hub writes per second for a fleet in which nothing changes.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleetgate_proto::v1 as pb;

use crate::report::SteadyResult;
use crate::swarm::Swarm;
use crate::{Result, ingest};

/// The report content of the phase: one fixed round, different from every
/// ingest round, so each spoke's first report is a change and the rest are not.
const STEADY_ROUND: usize = 999_999;

/// Rows inserted, updated and deleted so far, per table, and the WAL position.
async fn counters(pool: &sqlx::PgPool) -> Result<(BTreeMap<String, i64>, i64)> {
    // Outside a transaction every query reads fresh statistics; backends
    // flush theirs at most ~1 s late, the same at both ends of the window.
    let rows: Vec<(String, i64)> = sqlx::query_as(
        "select relname::text, (n_tup_ins + n_tup_upd + n_tup_del)::bigint \
         from pg_stat_user_tables",
    )
    .fetch_all(pool)
    .await?;
    let (wal,): (i64,) =
        sqlx::query_as("select pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint")
            .fetch_one(pool)
            .await?;
    Ok((rows.into_iter().collect(), wal))
}

/// Sends every spoke's report each `interval` (spoke i at offset i/N of it);
/// never returns.
async fn drive(swarm: &Swarm, report: &pb::StatusReport, interval: Duration, unsent: &mut u64) {
    let n = swarm.len().max(1);
    let start = tokio::time::Instant::now();
    for round in 0u32.. {
        for i in 0..n {
            let due = start + interval * round + interval.mul_f64(i as f64 / n as f64);
            tokio::time::sleep_until(due).await;
            if !swarm.report(i, report.clone()) {
                *unsent += 1;
            }
        }
    }
}

/// How long the first reports (all new content) may take to be stored.
const WARMUP_BOUND: Duration = Duration::from_secs(600);

/// Runs the phase: warm-up until every spoke's first report of the fixed
/// content is stored (at least one `interval`), then counts writes over
/// `window`.
pub async fn run(
    swarm: &Swarm,
    pool: &sqlx::PgPool,
    per_report: usize,
    interval: Duration,
    window: Duration,
) -> Result<SteadyResult> {
    let report = pb::StatusReport {
        objects: ingest::objects(STEADY_ROUND, per_report),
        ..Default::default()
    };
    let mut unsent = 0u64;
    let n = swarm.len();
    let revision = report.objects.first().and_then(|o| {
        (!o.last_applied_revision.is_empty()).then(|| o.last_applied_revision.clone())
    });
    let warmup_started = Instant::now();
    let measure = async {
        tokio::time::sleep(interval).await;
        // The first reports are all new content: wait until every object of
        // every spoke is stored, or the window would count that backlog.
        loop {
            let (stored,): (i64,) = sqlx::query_as(
                "select count(*) from object_status where last_applied_revision = $1",
            )
            .bind(&revision)
            .fetch_one(pool)
            .await?;
            if stored as usize >= n * per_report {
                break;
            }
            if warmup_started.elapsed() > WARMUP_BOUND {
                return Err(crate::Error::Timeout(format!(
                    "steady state: {stored} of {} objects stored after {WARMUP_BOUND:?}",
                    n * per_report
                )));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        let warmup = warmup_started.elapsed().as_secs_f64();
        // A flush linger and a statistics flush.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let (before, wal_before) = counters(pool).await?;
        let t = Instant::now();
        tokio::time::sleep(window).await;
        let (after, wal_after) = counters(pool).await?;
        let secs = t.elapsed().as_secs_f64();
        let mut per_table: BTreeMap<String, f64> = BTreeMap::new();
        for (table, rows) in &after {
            let delta = rows - before.get(table).copied().unwrap_or(0);
            if delta > 0 {
                per_table.insert(table.clone(), delta as f64 / secs);
            }
        }
        Ok::<_, crate::Error>((
            per_table,
            (wal_after - wal_before) as f64 / secs,
            secs,
            warmup,
        ))
    };
    let (per_table, wal_bytes_per_second, secs, warmup_seconds) = tokio::select! {
        m = measure => m?,
        () = drive(swarm, &report, interval, &mut unsent) => unreachable!("drive never ends"),
    };
    Ok(SteadyResult {
        warmup_seconds,
        spokes: n,
        objects_per_report: per_report,
        report_interval_seconds: interval.as_secs_f64(),
        window_seconds: secs,
        rows_per_second: per_table.values().sum(),
        per_table_rows_per_second: per_table,
        wal_bytes_per_second,
        reports_per_second: n as f64 / interval.as_secs_f64(),
        object_rows_offered_per_second: (n * per_report) as f64 / interval.as_secs_f64(),
        reports_not_sent: unsent,
    })
}
