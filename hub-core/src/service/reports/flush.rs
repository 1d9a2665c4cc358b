//! The batcher's flush: every pending connection change and snapshot state,
//! then the pending reports, taken all at once and split into batches of at
//! most [`MAX_BATCH`] reports, [`WRITERS`] batches written at once, each in a
//! transaction of its own (`db::report_batch`: one statement per step for the
//! whole batch). The batches of one take hold distinct clusters (one report
//! per cluster is pending), and the next take waits for every batch of this
//! one: a cluster's newer report is never written beside, or before, its
//! older one. A batch the database refuses as a whole is written again report
//! by report in savepoints, so one refused report does not fail the others;
//! a batch that fails otherwise goes back to the queue (unless newer reports
//! of its clusters arrived) and the flush ends.

use std::collections::hash_map::Entry;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::StreamExt as _;

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

impl Reports {
    /// Writes every pending connection change and report now.
    pub async fn flush_all(&self) {
        // What is queued from now on waits for the next flush's linger.
        *lock(&self.first_queued) = None;
        self.flush_connections().await;
        self.flush_snapshot_states().await;
        loop {
            let batches = self.take_batches();
            if batches.is_empty() {
                return;
            }
            let failed = AtomicBool::new(false);
            futures::stream::iter(batches)
                .for_each_concurrent(WRITERS, |batch| {
                    let failed = &failed;
                    async move {
                        if !self.flush_batch(batch).await {
                            failed.store(true, Ordering::Relaxed);
                        }
                    }
                })
                .await;
            if failed.load(Ordering::Relaxed) {
                // The next flush retries (spokes also re-send as heartbeat).
                return;
            }
        }
    }

    /// Every pending report, taken now and split into [`batches`].
    fn take_batches(&self) -> Vec<Vec<ClusterReport>> {
        let all: Vec<ClusterReport> = {
            let mut pending = lock(&self.pending);
            pending.drain().map(|(_, r)| r).collect()
        };
        let count = batches(all.len());
        if count == 0 {
            return Vec::new();
        }
        let size = all.len().div_ceil(count);
        let mut out = Vec::with_capacity(count);
        let mut all = all.into_iter();
        loop {
            let batch: Vec<ClusterReport> = all.by_ref().take(size).collect();
            if batch.is_empty() {
                return out;
            }
            out.push(batch);
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
    use super::{MAX_BATCH, WRITERS, batches};

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
