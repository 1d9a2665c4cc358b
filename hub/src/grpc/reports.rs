//! Status-report ingestion: spoke streams hand their reports to a batcher that
//! keeps only the newest report per cluster (a report is the full object set,
//! so newer replaces older) and writes pending reports in one transaction per
//! flush. Memory is bounded by the number of connected clusters.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::PgPool;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::metrics::GrpcMetrics;
use crate::db::reports::{self, ClusterReport, ReportedObject};
use crate::db::retry;
use crate::{Error, Result};

/// Reports per flush transaction at most.
const MAX_BATCH: usize = 256;

/// Coalesces and writes status reports.
#[derive(Debug)]
pub struct ReportBatcher {
    pool: PgPool,
    pending: Mutex<HashMap<String, ClusterReport>>,
    /// Streams alive at the given instant (keepalive sent), not yet written.
    seen: Mutex<HashMap<String, DateTime<Utc>>>,
    wake: Notify,
    /// How long to gather reports after the first one arrives.
    linger: Duration,
    metrics: GrpcMetrics,
}

impl ReportBatcher {
    /// A batcher writing to `pool`, gathering reports for `linger` per flush.
    pub fn new(pool: PgPool, linger: Duration, metrics: GrpcMetrics) -> Arc<Self> {
        Arc::new(Self {
            pool,
            pending: Mutex::new(HashMap::new()),
            seen: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            linger,
            metrics,
        })
    }

    fn pending(&self) -> std::sync::MutexGuard<'_, HashMap<String, ClusterReport>> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues a report; a newer report of the same cluster replaces it.
    pub fn submit(&self, report: ClusterReport) {
        self.pending().insert(report.cluster.clone(), report);
        self.wake.notify_one();
    }

    /// Queues a liveness stamp for `cluster` (its stream is open at `at`),
    /// written with the next flush so `last_seen_at` stays fresh without one
    /// statement per keepalive.
    pub fn seen(&self, cluster: &str, at: DateTime<Utc>) {
        self.seen
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(cluster.to_string(), at);
        self.wake.notify_one();
    }

    /// Reports waiting to be written.
    pub fn backlog(&self) -> usize {
        self.pending().len()
    }

    /// Flushes until `shutdown`, then flushes what is left.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.wake.notified() => {}
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.linger) => {}
            }
            self.flush_all().await;
        }
        self.flush_all().await;
    }

    /// Writes every pending report and liveness stamp now.
    pub async fn flush_all(&self) {
        self.flush_seen().await;
        loop {
            let batch: Vec<ClusterReport> = {
                let mut pending = self.pending();
                let keys: Vec<String> = pending.keys().take(MAX_BATCH).cloned().collect();
                keys.iter().filter_map(|k| pending.remove(k)).collect()
            };
            if batch.is_empty() {
                return;
            }
            if let Err(e) = retry::transaction("status reports", || self.write(&batch)).await {
                self.metrics.report_flush_failures.inc();
                tracing::warn!(error = %e, reports = batch.len(), "writing status reports failed");
                // Put them back unless a newer report arrived meanwhile; the
                // next flush retries (spokes also re-send as heartbeat).
                let mut pending = self.pending();
                for report in batch {
                    pending.entry(report.cluster.clone()).or_insert(report);
                }
                return;
            }
            self.metrics.report_flushes.inc();
        }
    }

    async fn flush_seen(&self) {
        let seen: Vec<(String, DateTime<Utc>)> =
            std::mem::take(&mut *self.seen.lock().unwrap_or_else(|e| e.into_inner()))
                .into_iter()
                .collect();
        if seen.is_empty() {
            return;
        }
        let (pool, seen) = (&self.pool, &seen);
        let res = retry::transaction("last-seen stamps", move || async move {
            let mut conn = pool.acquire().await?;
            reports::touch_seen(&mut conn, seen).await
        })
        .await;
        if let Err(e) = res {
            // Not retried: the next keepalive stamps again.
            tracing::warn!(error = %e, clusters = seen.len(), "refreshing last-seen times failed");
        }
    }

    async fn write(&self, batch: &[ClusterReport]) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        // Name order, the one order of every path locking several clusters.
        let mut batch: Vec<&ClusterReport> = batch.iter().collect();
        batch.sort_unstable_by(|a, b| a.cluster.cmp(&b.cluster));
        for report in batch {
            if !reports::write_report(&mut tx, report).await? {
                tracing::debug!(cluster = %report.cluster, "report for a deleted cluster dropped");
            }
        }
        tx.commit().await?;
        Ok(())
    }
}

/// Validates a report's objects and removes duplicates (the last one of a key
/// wins). Errors name the field, e.g. `report.objects[3].kind`.
pub fn normalize_objects(objects: Vec<ReportedObject>) -> Result<Vec<ReportedObject>> {
    let mut by_key: BTreeMap<(String, String, String), ReportedObject> = BTreeMap::new();
    for (i, o) in objects.into_iter().enumerate() {
        if o.kind.parse::<fleetgate_policy::FluxKind>().is_err() {
            return Err(Error::invalid(
                format!("report.objects[{i}].kind"),
                format!("unknown Flux kind '{}'", o.kind),
            ));
        }
        if o.name.is_empty() {
            return Err(Error::invalid(
                format!("report.objects[{i}].name"),
                "must not be empty",
            ));
        }
        if o.namespace.is_empty() {
            return Err(Error::invalid(
                format!("report.objects[{i}].namespace"),
                "must not be empty",
            ));
        }
        by_key.insert((o.kind.clone(), o.namespace.clone(), o.name.clone()), o);
    }
    Ok(by_key.into_values().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(kind: &str, ns: &str, name: &str, held: bool) -> ReportedObject {
        ReportedObject {
            kind: kind.into(),
            namespace: ns.into(),
            name: name.into(),
            suspended: false,
            suspended_by: vec![],
            gates: vec![],
            last_applied_revision: None,
            newest_source_revision: None,
            held,
            suspended_by_human: false,
            ignored: false,
        }
    }

    #[test]
    fn duplicates_collapse_to_the_last() {
        let out = normalize_objects(vec![
            obj("Kustomization", "a", "x", false),
            obj("Kustomization", "a", "x", true),
            obj("HelmRelease", "a", "x", false),
        ])
        .unwrap();
        assert_eq!(out.len(), 2);
        assert!(out.iter().any(|o| o.kind == "Kustomization" && o.held));
    }

    #[test]
    fn bad_kind_names_the_field() {
        let err = normalize_objects(vec![
            obj("Kustomization", "a", "x", false),
            obj("Deployment", "a", "y", false),
        ])
        .unwrap_err();
        assert_eq!(err.field(), Some("report.objects[1].kind"));
        let err = normalize_objects(vec![obj("Kustomization", "a", "", false)]).unwrap_err();
        assert_eq!(err.field(), Some("report.objects[0].name"));
    }
}
