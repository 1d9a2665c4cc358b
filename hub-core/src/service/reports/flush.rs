//! The batcher's flush: every pending connection change and snapshot state,
//! then the pending reports in batches of at most [`MAX_BATCH`] reports,
//! [`WRITERS`] batches written at once, each in a transaction of its own
//! (`db::report_batch`: one statement per step for the whole batch). A flush
//! plans as many batches as the reports pending at its start need
//! ([`batches`]), and each writer takes its batch when it starts one, an even
//! share of what is pending then: reports that arrived while the first
//! batches were written go with the flush's later batches instead of waiting
//! for another flush. A report whose cluster has a batch being written stays
//! pending: a cluster's newer report is never written beside, or before, its
//! older one. A batch the database refuses as a whole is written again report
//! by report in savepoints, so one refused report does not fail the others;
//! a batch that fails otherwise goes back to the queue (unless newer reports
//! of its clusters arrived) and the flush ends after the batches being
//! written.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use super::{Reports, keep_inventory, lock};
use crate::Result;
use crate::db::reports::{self, ClusterReport};
use crate::db::retry;
use crate::service::local_gates;

/// Reports per flush transaction at most.
const MAX_BATCH: usize = 256;

/// Batches written at once, each on a connection of its own. One writer kept
/// PostgreSQL on one core while the hub waited for it: a batch's statements
/// run in one backend, one after the other.
const WRITERS: usize = 2;

/// How many batches `n` pending reports are split into: at most
/// [`MAX_BATCH`] each, and a multiple of [`WRITERS`] (so every writer gets
/// a share of the same size), never more than `n`.
fn batches(n: usize) -> usize {
    n.div_ceil(MAX_BATCH).next_multiple_of(WRITERS).min(n)
}

/// A flush's batches not yet started and the clusters of those being written.
#[derive(Debug, Default)]
struct Plan {
    left: usize,
    in_flight: HashSet<String>,
}

/// The next batch of `plan` from `pending`: an even share of the pending
/// reports over the batches left (at most [`MAX_BATCH`]), none of a cluster in
/// flight; their clusters are in flight from now on. Empty when no batch is
/// left or nothing can be taken.
fn take(pending: &mut HashMap<String, ClusterReport>, plan: &mut Plan) -> Vec<ClusterReport> {
    if plan.left == 0 {
        return Vec::new();
    }
    let free: Vec<&String> = pending
        .keys()
        .filter(|c| !plan.in_flight.contains(*c))
        .collect();
    if free.is_empty() {
        return Vec::new();
    }
    let size = free.len().div_ceil(plan.left).min(MAX_BATCH);
    let names: Vec<String> = free.into_iter().take(size).cloned().collect();
    plan.left -= 1;
    let mut batch = Vec::with_capacity(names.len());
    for name in names {
        if let Some(report) = pending.remove(&name) {
            batch.push(report);
        }
        plan.in_flight.insert(name);
    }
    batch
}

impl Reports {
    /// Writes every pending connection change and report now.
    pub async fn flush_all(&self) {
        // What is queued from now on waits for the next flush's linger.
        *lock(&self.first_queued) = None;
        self.flush_connections().await;
        self.flush_snapshot_states().await;
        let plan = Mutex::new(Plan {
            left: batches(lock(&self.pending).len()),
            in_flight: HashSet::new(),
        });
        let failed = AtomicBool::new(false);
        futures::future::join_all((0..WRITERS).map(|_| self.writer(&plan, &failed))).await;
    }

    /// Writes batches of `plan` one after the other until none is left, or
    /// one failed (`failed`, then the next flush retries; spokes also re-send
    /// as heartbeat).
    async fn writer(&self, plan: &Mutex<Plan>, failed: &AtomicBool) {
        while !failed.load(Ordering::Relaxed) {
            let batch = {
                let mut pending = lock(&self.pending);
                take(&mut pending, &mut lock(plan))
            };
            if batch.is_empty() {
                return;
            }
            let names: Vec<String> = batch.iter().map(|r| r.cluster.clone()).collect();
            if !self.flush_batch(batch).await {
                failed.store(true, Ordering::Relaxed);
            }
            let mut plan = lock(plan);
            for name in &names {
                plan.in_flight.remove(name);
            }
        }
    }

    /// Writes `batch` in one transaction (again report by report in
    /// savepoints if the database refused one); on failure puts it back and
    /// returns false.
    async fn flush_batch(&self, batch: Vec<ClusterReport>) -> bool {
        let mut res = retry::transaction("status reports", || self.write(&batch, false)).await;
        if res.as_ref().is_err_and(reports::refused_report) {
            // One report the database refuses must not hold up the
            // others: again, each report in a savepoint of its own.
            res = retry::transaction("status reports", || self.write(&batch, true)).await;
        }
        let Err(e) = res else {
            self.metrics.report_flushes.inc();
            return true;
        };
        self.metrics.report_flush_failures.inc();
        tracing::warn!(error = %e, reports = batch.len(), "writing status reports failed");
        // Put them back unless a newer report arrived meanwhile; the
        // next flush retries (spokes also re-send as heartbeat).
        let mut pending = lock(&self.pending);
        for report in batch {
            match pending.entry(report.cluster.clone()) {
                Entry::Occupied(mut newer) => keep_inventory(newer.get_mut(), report),
                Entry::Vacant(v) => {
                    v.insert(report);
                }
            }
        }
        false
    }

    /// Writes `batch` in one transaction. With `isolate`, each report in a
    /// savepoint of its own: a report the database refuses
    /// ([`reports::refused_report`]) is rolled back alone, recorded on its
    /// cluster and counted, and the others are written (the common case
    /// pays no savepoints: this runs only after a batch failed so).
    async fn write(&self, batch: &[ClusterReport], isolate: bool) -> Result<()> {
        let mut tx = self.service.begin().await?;
        // Name order, the one order of every path locking several clusters.
        let mut batch: Vec<&ClusterReport> = batch.iter().collect();
        batch.sort_unstable_by(|a, b| a.cluster.cmp(&b.cluster));
        if !isolate {
            // One statement per step for the whole batch (`db::report_batch`).
            let written = crate::db::report_batch::write_reports(&mut tx, &batch).await?;
            for (report, written) in batch.iter().zip(written) {
                after_write(&mut tx, report, written).await?;
            }
            tx.commit().await?;
            return Ok(());
        }
        for report in batch {
            let mut savepoint = sqlx::Connection::begin(&mut *tx).await?;
            match write_one(&mut savepoint, report).await {
                Ok(()) => savepoint.commit().await?,
                Err(e) if reports::refused_report(&e) => {
                    savepoint.rollback().await?;
                    self.metrics.report_write_failures.inc();
                    tracing::warn!(cluster = %report.cluster, error = %e,
                        "the database refused a cluster's report; the other reports are written");
                    reports::record_write_error(&mut tx, report, &e.to_string()).await?;
                }
                Err(e) => return Err(e),
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Writes one cluster's report and audits its local gates' changes.
async fn write_one(conn: &mut sqlx::PgConnection, report: &ClusterReport) -> Result<()> {
    let written = crate::db::report_batch::write_report_diff(conn, report).await?;
    after_write(conn, report, written).await
}

/// Audits `report`'s local gate changes and announces its newly held objects,
/// after it was written (`written`).
async fn after_write(
    conn: &mut sqlx::PgConnection,
    report: &ClusterReport,
    written: reports::ReportWrite,
) -> Result<()> {
    match written {
        reports::ReportWrite::NoCluster => {
            tracing::debug!(cluster = %report.cluster, "report for a deleted cluster dropped");
        }
        reports::ReportWrite::Unchanged => {}
        reports::ReportWrite::Written {
            previous_local_gates,
            newly_held,
        } => {
            let entries = local_gates::diff(&previous_local_gates, &report.local_gates);
            local_gates::write(conn, &report.cluster, report.received_at, &entries).await?;
            for ev in crate::notify::held::events(report, &newly_held) {
                crate::notify::enqueue(conn, &ev).await?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::{ClusterReport, MAX_BATCH, Plan, WRITERS, batches, take};

    fn pending(names: impl IntoIterator<Item = String>) -> HashMap<String, ClusterReport> {
        names
            .into_iter()
            .map(|cluster| {
                let report = ClusterReport {
                    cluster: cluster.clone(),
                    objects: vec![],
                    held_objects: vec![],
                    local_gates: vec![],
                    problems: vec![],
                    inventory: None,
                    revision: 1,
                    clock_offset_ms: 0,
                    received_at: chrono::DateTime::UNIX_EPOCH,
                };
                (cluster, report)
            })
            .collect()
    }

    fn names(batch: &[ClusterReport]) -> Vec<&str> {
        batch.iter().map(|r| r.cluster.as_str()).collect()
    }

    #[test]
    fn later_batches_of_a_flush_take_the_reports_that_arrived_meanwhile() {
        let mut queue = pending((0..1000).map(|i| format!("c{i:04}")));
        let mut plan = Plan {
            left: batches(queue.len()),
            ..Plan::default()
        };
        assert_eq!(plan.left, 4);
        let first = take(&mut queue, &mut plan);
        let second = take(&mut queue, &mut plan);
        assert_eq!((first.len(), second.len()), (250, 250));
        // 12 reports arrive while the first two batches are written: the two
        // batches left share them with the 500 planned.
        queue.extend(pending((0..12).map(|i| format!("late{i}"))));
        for r in first.iter().chain(&second) {
            plan.in_flight.remove(&r.cluster);
        }
        let third = take(&mut queue, &mut plan);
        let fourth = take(&mut queue, &mut plan);
        assert_eq!((third.len(), fourth.len()), (256, 256));
        assert!(queue.is_empty());
        // The plan's batches are taken: what arrives now waits for the next flush.
        queue.extend(pending(["later".to_string()]));
        assert!(take(&mut queue, &mut plan).is_empty());
        assert_eq!(queue.len(), 1);
    }

    #[test]
    fn a_cluster_with_a_batch_in_flight_keeps_its_newer_report_pending() {
        let mut queue = pending(["a", "b", "c", "d"].map(String::from));
        let mut plan = Plan {
            left: 2,
            ..Plan::default()
        };
        let first: Vec<String> = names(&take(&mut queue, &mut plan))
            .into_iter()
            .map(String::from)
            .collect();
        assert_eq!(first.len(), 2);
        // Newer reports of the clusters being written, and one of another.
        let mut newer = first.clone();
        newer.push("e".into());
        queue.extend(pending(newer));
        let second = take(&mut queue, &mut plan);
        let mut second = names(&second);
        second.sort_unstable();
        let mut others: Vec<&str> = ["a", "b", "c", "d", "e"]
            .into_iter()
            .filter(|c| !first.iter().any(|f| f == c))
            .collect();
        others.sort_unstable();
        assert_eq!(second, others);
        // The newer reports of the first batch's clusters wait for the next
        // flush, which takes them once that batch is written.
        assert!(take(&mut queue, &mut plan).is_empty());
        let mut left: Vec<&String> = queue.keys().collect();
        left.sort_unstable();
        let mut expected: Vec<&String> = first.iter().collect();
        expected.sort_unstable();
        assert_eq!(left, expected);
        let mut next = Plan {
            left: batches(queue.len()),
            ..Plan::default()
        };
        let mut taken = Vec::new();
        loop {
            let batch = take(&mut queue, &mut next);
            if batch.is_empty() {
                break;
            }
            taken.extend(batch.into_iter().map(|r| r.cluster));
        }
        taken.sort_unstable();
        assert_eq!(taken.iter().collect::<Vec<_>>(), expected);
    }

    #[test]
    fn pending_reports_split_evenly_over_the_writers() {
        assert_eq!(batches(0), 0);
        assert_eq!(batches(1), 1);
        assert_eq!(batches(10), WRITERS);
        assert_eq!(batches(1000), 4);
        for n in [1, 2, 3, 255, 256, 257, 511, 1000, 10_000] {
            let count = batches(n);
            let size = n.div_ceil(count);
            assert!(size <= MAX_BATCH, "{n}: {count} batches of {size}");
            assert!(count * size >= n, "{n}");
        }
    }
}
