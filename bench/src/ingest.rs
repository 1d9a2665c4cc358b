//! Status ingest: simulated spokes send full status reports (closed loop:
//! round k+1 starts when round k is committed) and a poller watches for each
//! report's commit. Each round's reports carry a marker in `clock_offset_ms`,
//! which the hub writes in the same transaction as the report's objects.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use fleetgate_proto::v1 as pb;
use serde::Serialize;

use crate::stats::Percentiles;
use crate::swarm::Swarm;
use crate::{Error, Result, fleet};

/// Status ingest: reports per second and their commit latency.
#[derive(Debug, Clone, Default, Serialize)]
pub struct IngestResult {
    pub spokes: usize,
    pub objects_per_report: usize,
    pub rounds: usize,
    /// Object reports durably written per second (closed loop).
    pub objects_per_second: f64,
    /// Per report: sent → committed in PostgreSQL (seen by a poll every 10 ms).
    pub durable: Percentiles,
    /// Hub RSS growth over the ingest divided by the reporting spokes: what a
    /// spoke that reports keeps costing beyond an idle one.
    pub hub_rss_per_reporting_spoke_kib: f64,
    /// Storage cost per report (every report of the phase changed every
    /// object): rows written (inserted + updated + deleted in
    /// `pg_stat_user_tables`, every table) and WAL bytes (`pg_current_wal_lsn`
    /// before and after), divided by the reports written.
    pub rows_per_report: f64,
    pub wal_bytes_per_report: f64,
}

/// Rows written so far (every user table) and the WAL position, in bytes.
async fn storage(pool: &sqlx::PgPool) -> Result<(i64, i64)> {
    let (rows, wal): (Option<i64>, i64) = sqlx::query_as(
        "select (select sum(n_tup_ins + n_tup_upd + n_tup_del)::int8 from pg_stat_user_tables), \
         pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::int8",
    )
    .fetch_one(pool)
    .await?;
    Ok((rows.unwrap_or(0), wal))
}

const POLL: Duration = Duration::from_millis(10);
const ROUND_BOUND: Duration = Duration::from_secs(120);
/// Marker base, far from any real clock offset.
const MARKER_BASE: i64 = 7_000_000_000;

/// `n` objects of round `round` (their revisions name the round).
pub(crate) fn objects(round: usize, n: usize) -> Vec<pb::ObjectStatus> {
    (0..n)
        .map(|j| pb::ObjectStatus {
            kind: if j % 3 == 2 {
                "HelmRelease"
            } else {
                "Kustomization"
            }
            .into(),
            namespace: "apps".into(),
            name: format!("app-{j:04}"),
            suspended: false,
            suspended_by: vec![],
            gates: vec![fleet::GATE.into()],
            last_applied_revision: format!("main@sha1:{round:040}"),
            newest_source_revision: format!("main@sha1:{round:040}"),
            held: false,
            suspended_by_human: false,
            ignored: false,
            // A healthy object's Ready condition, as real reports carry it.
            ready: "True".into(),
            ready_reason: "ReconciliationSucceeded".into(),
            ready_message: format!("Applied revision: main@sha1:{round:040}"),
            stalled: false,
            generation: 1,
            observed_generation: 1,
            would_suspend_by: vec![],
            would_hold: false,
            last_attempted_revision: format!("main@sha1:{round:040}"),
        })
        .collect()
}

/// Sends round `round`'s report from each spoke of `names` and waits until
/// every one is committed; returns each report's sent → committed time.
async fn round(
    swarm: &Swarm,
    pool: &sqlx::PgPool,
    names: &[String],
    per_report: usize,
    round: usize,
) -> Result<Vec<Duration>> {
    let spokes = names.len();
    let marker = MARKER_BASE + round as i64;
    let objs = objects(round, per_report);
    let t0 = Instant::now();
    for i in 0..spokes {
        let report = pb::StatusReport {
            local_gates: Default::default(),
            inventory: Default::default(),
            has_inventory: false,
            snapshot_persistence: None,
            revision: 0,
            objects: objs.clone(),
            clock_offset_ms: marker,
            observed_at: None,
            more: false,
            held_objects: vec![],
        };
        if !swarm.report(i, report) {
            return Err(Error::setup(format!("spoke {i} cannot send a report")));
        }
    }
    let mut seen: HashMap<String, Duration> = HashMap::with_capacity(spokes);
    let wanted: HashSet<&String> = names.iter().collect();
    while seen.len() < spokes {
        if t0.elapsed() > ROUND_BOUND {
            return Err(Error::Timeout(format!(
                "ingest round {round}: {} of {spokes} reports committed",
                seen.len()
            )));
        }
        tokio::time::sleep(POLL).await;
        // The marker alone selects the round's reports (only this phase
        // sends it): a `cluster = any(1,000 names)` filter cost PostgreSQL
        // 3.9 ms per poll (2,000 clusters), CPU the ingest competed for.
        let rows: Vec<(String,)> =
            sqlx::query_as("select cluster from cluster_connections where clock_offset_ms = $1")
                .bind(marker)
                .fetch_all(pool)
                .await?;
        let now = t0.elapsed();
        for (name,) in rows {
            if wanted.contains(&name) {
                seen.entry(name).or_insert(now);
            }
        }
    }
    Ok(seen.into_values().collect())
}

/// Runs rounds with the first `spokes` spokes of `swarm` for about `duration`
/// after one unmeasured round, numbering them from `first_round` (a later
/// ingest in the same run starts past the rounds of an earlier one, so every
/// report changes every object).
pub async fn run(
    swarm: &Swarm,
    pool: &sqlx::PgPool,
    spokes: usize,
    per_report: usize,
    duration: Duration,
    first_round: usize,
) -> Result<IngestResult> {
    let spokes = spokes.min(swarm.len());
    let names: Vec<String> = (0..spokes).map(fleet::cluster_name).collect();
    // One round before the clock starts: on a fresh table it inserts every
    // object, which the measured rounds (each changing every stored object)
    // then update. Without it the hub measured first paid the inserts and the
    // same-run baseline, measured second, did not.
    round(swarm, pool, &names, per_report, first_round).await?;
    tokio::time::sleep(Duration::from_secs(11)).await;
    let before = storage(pool).await?;
    let start = Instant::now();
    let mut durable = Vec::new();
    let mut rounds = 0;
    while rounds < 2 || start.elapsed() < duration {
        durable.extend(round(swarm, pool, &names, per_report, first_round + 1 + rounds).await?);
        rounds += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    // Each backend flushes its table statistics when idle, within
    // PGSTAT_IDLE_INTERVAL (10 s) of its last transaction.
    tokio::time::sleep(Duration::from_secs(11)).await;
    let after = storage(pool).await?;
    let reports = (rounds * spokes).max(1) as f64;
    let (stored,): (i64,) = sqlx::query_as(
        "select count(*) from object_status where cluster = any($1) and last_applied_revision = $2",
    )
    .bind(&names)
    .bind(format!("main@sha1:{:040}", first_round + rounds))
    .fetch_one(pool)
    .await?;
    let expected = (spokes * per_report) as i64;
    if stored != expected {
        return Err(Error::setup(format!(
            "ingest: {stored} objects of the last round stored, expected {expected}"
        )));
    }
    Ok(IngestResult {
        spokes,
        objects_per_report: per_report,
        rounds,
        objects_per_second: (rounds * spokes * per_report) as f64 / elapsed,
        durable: Percentiles::of(&durable),
        hub_rss_per_reporting_spoke_kib: 0.0,
        rows_per_report: (after.0 - before.0) as f64 / reports,
        wal_bytes_per_report: (after.1 - before.1) as f64 / reports,
    })
}
