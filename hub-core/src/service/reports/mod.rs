//! Report ingestion and spoke connection state, for the spoke streams of one
//! replica. Reports (possibly in parts) are assembled per stream, validated,
//! and handed to a batcher that keeps only the newest report per cluster (a
//! report is the full object set, so newer replaces older) and writes pending
//! reports in batches, several at once (`flush`); memory is bounded by the
//! number of connected clusters. Connection state (connect, disconnect) is written here
//! too; liveness between them is the replica's lease (`service::clusters::lease`).
//! Nothing here bumps the fleet revision: reports are not desired state.

mod flush;
pub mod objects;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_api_types::{SnapshotOverBudget, SnapshotPersistence};
use fleetgate_proto::report_parts::MAX_REPORT_OBJECTS;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use self::objects::ReportProblem;
use super::Service;
use crate::db::held_objects::HeldObject;
use crate::db::reports::{self, ClusterReport, LocalGate, ReportedObject};
use crate::db::retry;
use crate::metrics::GrpcMetrics;
use crate::{Error, Result};

/// A change of one cluster's connection state on this replica, waiting to
/// be written (the newest per cluster wins).
#[derive(Debug, Clone)]
enum Connection {
    Connected {
        spoke_version: String,
        at: DateTime<Utc>,
    },
    Disconnected {
        at: DateTime<Utc>,
    },
}

/// A replica's report ingestion and connection bookkeeping. Shared by its
/// spoke streams (`Arc`).
#[derive(Debug)]
pub struct Reports {
    service: Service,
    /// This replica's id, recorded as `clusters.connected_replica`.
    replica: String,
    pending: Mutex<HashMap<String, ClusterReport>>,
    wake: Notify,
    /// How long to gather reports after the first one arrives.
    linger: Duration,
    /// When the first of what waits for the next flush (a report, a
    /// connection change, a snapshot state) was queued: the flush starts
    /// `linger` after it, so what arrived during a long flush is written right
    /// after it, having waited that long already.
    first_queued: Mutex<Option<Instant>>,
    metrics: GrpcMetrics,
    /// Connection changes not yet written. One entry per cluster, the newest
    /// wins, so a reconnect's "connected" is never overwritten by the old
    /// stream's late "disconnected"; written in one statement per flush, so a
    /// reconnect storm of thousands of spokes costs a few statements.
    connections: Mutex<HashMap<String, Connection>>,
    /// Snapshot states not yet written, the newest per cluster and field.
    snapshot_states: Mutex<HashMap<String, SnapshotState>>,
}

/// What a replica learnt of one cluster's snapshot and not yet wrote: an outer `None`
/// leaves the stored field as it is.
#[derive(Debug, Clone, Default)]
struct SnapshotState {
    persistence: Option<Option<SnapshotPersistence>>,
    over_budget: Option<Option<SnapshotOverBudget>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Plain maps: no invariant a panicking holder could break halfway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Reports {
    /// Ingestion for `replica`, gathering reports for `linger` per flush.
    pub fn new(
        service: Service,
        replica: String,
        linger: Duration,
        metrics: GrpcMetrics,
    ) -> Arc<Self> {
        Arc::new(Self {
            service,
            replica,
            pending: Mutex::new(HashMap::new()),
            wake: Notify::new(),
            linger,
            first_queued: Mutex::new(None),
            metrics,
            connections: Mutex::new(HashMap::new()),
            snapshot_states: Mutex::new(HashMap::new()),
        })
    }

    /// This replica's id.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Queues `cluster`'s complete, validated report received now; a newer
    /// report of the same cluster replaces it. The held-object gauges follow
    /// the report at once. `revision` is the snapshot revision the spoke
    /// enforced when it made the report.
    pub fn submit(&self, cluster: &str, revision: u64, report: Assembled, clock_offset_ms: i64) {
        self.metrics.reports_received.inc();
        self.metrics.set_held_objects(cluster, &report.held_objects);
        self.metrics.would_hold.set(cluster, &report.objects);
        self.metrics.set_local_gates(cluster, &report.local_gates);
        self.metrics.count_report_problems(&report.problems);
        let mut report = ClusterReport {
            cluster: cluster.to_string(),
            objects: report.objects,
            held_objects: report.held_objects,
            local_gates: report.local_gates,
            problems: report.problems,
            inventory: report.inventory,
            revision,
            clock_offset_ms,
            received_at: self.service.now(),
        };
        let mut pending = lock(&self.pending);
        if let Some(older) = pending.remove(&report.cluster) {
            keep_inventory(&mut report, older);
        }
        pending.insert(report.cluster.clone(), report);
        drop(pending);
        self.queued();
    }

    /// Wakes the flusher for something just queued, noting when the first of
    /// what waits was queued.
    fn queued(&self) {
        lock(&self.first_queued).get_or_insert_with(Instant::now);
        self.wake.notify_one();
    }

    /// Reports waiting to be written.
    pub fn backlog(&self) -> usize {
        lock(&self.pending).len()
    }

    /// Flushes until `shutdown`, then flushes what is left.
    pub async fn run(self: Arc<Self>, shutdown: CancellationToken) {
        loop {
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = self.wake.notified() => {}
            }
            let first = lock(&self.first_queued).unwrap_or_else(Instant::now);
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep_until(first + self.linger) => {}
            }
            self.flush_all().await;
        }
        self.flush_all().await;
    }

    /// Records (with the next flush) that `cluster`'s spoke (version
    /// `spoke_version`) connected to this replica.
    pub fn connected(&self, cluster: &str, spoke_version: &str) {
        let change = Connection::Connected {
            spoke_version: spoke_version.to_string(),
            at: self.service.now(),
        };
        lock(&self.connections).insert(cluster.to_string(), change);
        self.queued();
    }

    /// Records (with the next flush) that `cluster`'s spoke left this
    /// replica, unless `still_connected` (checked under the queue's lock, so
    /// no connection recorded meanwhile is overwritten) says another of its
    /// streams is (again) open here.
    pub fn disconnected(&self, cluster: &str, still_connected: impl FnOnce() -> bool) {
        let mut connections = lock(&self.connections);
        if still_connected() {
            return;
        }
        // Another replica serves the cluster's next stream and exports its
        // gauges; summing over replicas must not count it twice.
        self.metrics.forget_held_objects(cluster);
        self.metrics.forget_local_gates(cluster);
        let at = self.service.now();
        connections.insert(cluster.to_string(), Connection::Disconnected { at });
        drop(connections);
        self.queued();
    }

    async fn flush_connections(&self) {
        let changes = std::mem::take(&mut *lock(&self.connections));
        if changes.is_empty() {
            return;
        }
        let (mut connected, mut disconnected) = (Vec::new(), Vec::new());
        for (cluster, change) in &changes {
            match change {
                Connection::Connected { spoke_version, at } => {
                    connected.push((cluster.as_str(), spoke_version.as_str(), *at));
                }
                Connection::Disconnected { at } => disconnected.push((cluster.as_str(), *at)),
            }
        }
        // Name order, the one order of every path locking several clusters.
        connected.sort_unstable();
        disconnected.sort_unstable();
        let (service, replica) = (&self.service, self.replica.as_str());
        let (c, d) = (&connected, &disconnected);
        let res = retry::transaction("connection state", move || async move {
            let mut tx = service.begin().await?;
            reports::mark_connected_many(&mut tx, c, replica).await?;
            reports::mark_disconnected_many(&mut tx, d, replica).await?;
            tx.commit().await?;
            Ok(())
        })
        .await;
        if let Err(e) = res {
            tracing::warn!(error = %e, clusters = changes.len(), "recording spoke connections failed; will retry");
            // Put them back unless a newer change arrived meanwhile.
            let mut pending = lock(&self.connections);
            for (cluster, change) in changes {
                pending.entry(cluster).or_insert(change);
            }
        }
    }

    /// Records (with the next flush) what `cluster`'s spoke reported of its persisted
    /// snapshot with its latest whole report (`None`: a spoke that predates it). Only the
    /// cluster's own authenticated stream calls this: its identity is `cluster`.
    pub fn snapshot_persistence(&self, cluster: &str, persistence: Option<SnapshotPersistence>) {
        lock(&self.snapshot_states)
            .entry(cluster.to_string())
            .or_default()
            .persistence = Some(persistence);
        self.queued();
    }

    /// Records (with the next flush) that the snapshot sent to `cluster` was over its budget
    /// (`over`: the hub holds it closed) or within it (`None`: clears a stored one). The
    /// store keeps `since` while the cluster stays over and writes only a change.
    pub fn snapshot_over_budget(&self, cluster: &str, over: Option<SnapshotOverBudget>) {
        lock(&self.snapshot_states)
            .entry(cluster.to_string())
            .or_default()
            .over_budget = Some(over);
        self.queued();
    }

    async fn flush_snapshot_states(&self) {
        let states = std::mem::take(&mut *lock(&self.snapshot_states));
        if states.is_empty() {
            return;
        }
        // Name order, the one order of every path locking several clusters.
        let mut sorted: Vec<(&String, &SnapshotState)> = states.iter().collect();
        sorted.sort_unstable_by(|a, b| a.0.cmp(b.0));
        // Clearing the over-budget record is what the first snapshot of every stream
        // queues (a reconnect storm: one per spoke): those go in one statement.
        let clears: Vec<&str> = sorted
            .iter()
            .filter(|(_, s)| matches!(s.over_budget, Some(None)))
            .map(|(c, _)| c.as_str())
            .collect();
        let singles: Vec<(&String, &SnapshotState)> = sorted
            .iter()
            .filter(|(_, s)| s.persistence.is_some() || matches!(s.over_budget, Some(Some(_))))
            .copied()
            .collect();
        let all: Vec<&str> = sorted.iter().map(|(c, _)| c.as_str()).collect();
        let (service, clears, singles, all) = (&self.service, &clears, &singles, &all);
        let res = retry::transaction("snapshot states", move || async move {
            let mut tx = service.begin().await?;
            if !clears.is_empty() && !singles.is_empty() {
                // The batch and the single writes would lock rows in two passes: all
                // of them first, in name order.
                reports::lock_connections(&mut tx, all).await?;
            }
            let mut transition =
                reports::clear_snapshot_over_budget_many(&mut tx, clears).await? > 0;
            for (cluster, state) in singles {
                if let Some(over) = state.over_budget.as_ref().filter(|o| o.is_some()) {
                    let w =
                        reports::set_snapshot_over_budget(&mut tx, cluster, over.as_ref()).await?;
                    transition |= w.transition;
                }
                if let Some(persistence) = &state.persistence {
                    let w =
                        reports::set_snapshot_persistence(&mut tx, cluster, persistence.as_ref())
                            .await?;
                    transition |= w.transition;
                }
            }
            if transition {
                // Watchers (WatchFleet, the dashboard's events) announce the cluster's new
                // snapshot state at once, though no snapshot changed; a new persisted
                // revision alone wakes nobody (`reports::StateWrite::transition`).
                crate::db::revision::nudge(&mut tx).await?;
            }
            tx.commit().await?;
            Ok(())
        })
        .await;
        if let Err(e) = res {
            tracing::warn!(error = %e, clusters = states.len(), "recording snapshot states failed; will retry");
            // Put them back unless newer ones arrived meanwhile.
            let mut pending = lock(&self.snapshot_states);
            for (cluster, state) in states {
                let newer = pending.entry(cluster).or_default();
                if newer.persistence.is_none() {
                    newer.persistence = state.persistence;
                }
                if newer.over_budget.is_none() {
                    newer.over_budget = state.over_budget;
                }
            }
        }
    }

    /// Clears this replica's connection state (left by a crash before start,
    /// or, `drained_at`, by streams a drain ended without recording it).
    /// Returns how many clusters it cleared.
    pub async fn clear_connections(&self, drained_at: Option<DateTime<Utc>>) -> Result<u64> {
        let mut conn = self.service.conn().await?;
        reports::clear_replica(&mut conn, &self.replica, drained_at).await
    }
}

/// The items of one list in a part of a report, each with its index in the
/// report; `seen` counts the left-out ones too.
#[derive(Debug)]
pub struct Received<T> {
    pub items: Vec<(usize, T)>,
    pub seen: usize,
}

impl<T> Default for Received<T> {
    fn default() -> Self {
        Self {
            items: Vec::new(),
            seen: 0,
        }
    }
}

/// A whole report, checked object by object and without duplicates.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Assembled {
    pub objects: Vec<ReportedObject>,
    /// Empty from spokes that predate object holds.
    pub held_objects: Vec<HeldObject>,
    /// Gate objects made in the cluster, by name; empty from spokes that
    /// predate them.
    pub local_gates: Vec<LocalGate>,
    /// Objects stored repaired or left out ([`report_objects`]).
    pub problems: Vec<ReportProblem>,
    /// Every Flux object the spoke sees; `None` from spokes that predate inventories.
    pub inventory: Option<Vec<crate::db::inventories::InventoryObject>>,
}

/// The inventory in one part of a report.
#[derive(Debug, Default)]
pub struct Inventory {
    pub objects: Vec<crate::db::inventories::InventoryObject>,
    /// The report carries the whole inventory (`StatusReport.has_inventory`).
    pub carried: bool,
}

/// The parts of one report received so far on a stream: a report may come in
/// parts (`more`) and is applied whole, when its last part arrives.
#[derive(Debug, Default)]
pub struct ReportParts {
    received: Assembled,
    /// Index in the report of each of `received.held_objects`.
    held_at: Vec<usize>,
    /// Held objects received so far, left-out ones included.
    held_seen: usize,
    /// Index in the report of each of `received.local_gates`.
    local_at: Vec<usize>,
    found: objects::Found,
}

impl ReportParts {
    /// Held objects received so far (the index of the next one).
    pub fn held_len(&self) -> usize {
        self.held_seen
    }

    /// Records that the item at `field` could not even be converted (a bad
    /// time): it is left out, the rest of the report is stored.
    pub fn dropped(&mut self, field: String, object: String, message: impl Into<String>) {
        self.found.dropped(field, object, message);
    }

    /// Adds a part; returns the whole report, checked object by object and
    /// without duplicates, when this was its last part (`more` false). Only a
    /// report past the size limits is an error (naming the field): one
    /// object's content never is (see [`report_objects`]).
    pub fn add(
        &mut self,
        objects: impl ExactSizeIterator<Item = ReportedObject>,
        held: Received<HeldObject>,
        local_gates: Received<LocalGate>,
        inventory: Inventory,
        more: bool,
    ) -> Result<Option<Assembled>> {
        let held_objects = held.items;
        let r = &mut self.received;
        let inv = r.inventory.get_or_insert_with(Vec::new);
        let Inventory {
            objects: inventory,
            carried,
        } = inventory;
        if inv.len() + inventory.len() > MAX_REPORT_OBJECTS {
            return Err(Error::invalid(
                "report.inventory",
                format!("more than {MAX_REPORT_OBJECTS} inventory objects in one report"),
            ));
        }
        inv.extend(inventory);
        if r.objects.len() + objects.len() > MAX_REPORT_OBJECTS {
            return Err(Error::invalid(
                "report.objects",
                format!("more than {MAX_REPORT_OBJECTS} objects in one report"),
            ));
        }
        if r.held_objects.len() + held_objects.len() > MAX_REPORT_OBJECTS {
            return Err(Error::invalid(
                "report.held_objects",
                format!("more than {MAX_REPORT_OBJECTS} held objects in one report"),
            ));
        }
        r.objects.extend(objects);
        self.held_seen += held.seen;
        for (i, h) in held_objects {
            self.held_at.push(i);
            r.held_objects.push(h);
        }
        // Spokes send them on the last part; one list per report either way.
        if local_gates.seen > 0 {
            (self.local_at, r.local_gates) = local_gates.items.into_iter().unzip();
        }
        if more {
            return Ok(None);
        }
        let r = std::mem::take(r);
        let mut found = std::mem::take(&mut self.found);
        let held_at = std::mem::take(&mut self.held_at);
        let local_at = std::mem::take(&mut self.local_at);
        self.held_seen = 0;
        let objects = objects::objects(r.objects, &mut found);
        let held = held_at.into_iter().zip(r.held_objects).collect();
        let held_objects = objects::held_objects(held, &mut found);
        let local = local_at.into_iter().zip(r.local_gates).collect();
        let local_gates = objects::local_gates(local, &mut found);
        // Carried (`has_inventory`, the same on every part): the whole inventory, even
        // empty. Not carried: none this time (the stored one stays), or a spoke that
        // predates the flag and sends its inventory with every report.
        let inventory = r.inventory.filter(|i| carried || !i.is_empty());
        Ok(Some(Assembled {
            objects,
            held_objects,
            local_gates,
            problems: found.0,
            inventory,
        }))
    }
}

/// `newer` replaces `older` (not written yet) but keeps `older`'s inventory when
/// it carries none: spokes send the inventory only when it changed, so the one
/// report that carried it must not be lost to the next one.
fn keep_inventory(newer: &mut ClusterReport, older: ClusterReport) {
    if newer.inventory.is_none() {
        newer.inventory = older.inventory;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(inventory: Option<&[&str]>, object: &str) -> ClusterReport {
        let entry = |name: &str| crate::db::inventories::InventoryObject {
            kind: "Kustomization".into(),
            namespace: "apps".into(),
            name: name.into(),
            ..Default::default()
        };
        ClusterReport {
            cluster: "c1".into(),
            objects: vec![ReportedObject {
                name: object.to_string(),
                ..Default::default()
            }],
            held_objects: vec![],
            local_gates: vec![],
            problems: vec![],
            inventory: inventory.map(|i| i.iter().map(|n| entry(n)).collect()),
            revision: 1,
            clock_offset_ms: 0,
            received_at: chrono::DateTime::UNIX_EPOCH,
        }
    }

    #[test]
    fn a_newer_report_without_the_inventory_keeps_the_older_one_s() {
        let mut newer = report(None, "b");
        keep_inventory(&mut newer, report(Some(&["x"]), "a"));
        assert_eq!(newer.objects[0].name, "b");
        assert_eq!(
            newer.inventory.as_ref().map(|i| i[0].name.as_str()),
            Some("x")
        );
        // A newer inventory, even empty, wins.
        let mut newer = report(Some(&[]), "b");
        keep_inventory(&mut newer, report(Some(&["x"]), "a"));
        assert_eq!(newer.inventory.map(|i| i.len()), Some(0));
    }
}
