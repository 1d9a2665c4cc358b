//! Report ingestion and spoke connection state, for the spoke streams of one
//! replica. Reports (possibly in parts) are assembled per stream, validated,
//! and handed to a batcher that keeps only the newest report per cluster (a
//! report is the full object set, so newer replaces older) and writes pending
//! reports in one transaction per flush; memory is bounded by the number of
//! connected clusters. Connection state (connect, disconnect) is written here
//! too; liveness between them is the replica's lease (`service::lease`).
//! Nothing here bumps the fleet revision: reports are not desired state.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_proto::report_parts::MAX_REPORT_OBJECTS;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{Service, local_gates};
use crate::db::held_objects::HeldObject;
use crate::db::reports::{self, ClusterReport, LocalGate, ReportedObject};
use crate::db::retry;
use crate::metrics::GrpcMetrics;
use crate::{Error, Result};

/// Reports per flush transaction at most.
const MAX_BATCH: usize = 256;

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
    metrics: GrpcMetrics,
    /// Connection changes not yet written. One entry per cluster, the newest
    /// wins, so a reconnect's "connected" is never overwritten by the old
    /// stream's late "disconnected"; written in one statement per flush, so a
    /// reconnect storm of thousands of spokes costs a few statements.
    connections: Mutex<HashMap<String, Connection>>,
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
            metrics,
            connections: Mutex::new(HashMap::new()),
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
        self.metrics.set_local_gates(cluster, &report.local_gates);
        let report = ClusterReport {
            cluster: cluster.to_string(),
            objects: report.objects,
            held_objects: report.held_objects,
            local_gates: report.local_gates,
            revision,
            clock_offset_ms,
            received_at: self.service.now(),
        };
        lock(&self.pending).insert(report.cluster.clone(), report);
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
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(self.linger) => {}
            }
            self.flush_all().await;
        }
        self.flush_all().await;
    }

    /// Writes every pending connection change and report now.
    pub async fn flush_all(&self) {
        self.flush_connections().await;
        loop {
            let batch: Vec<ClusterReport> = {
                let mut pending = lock(&self.pending);
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
                let mut pending = lock(&self.pending);
                for report in batch {
                    pending.entry(report.cluster.clone()).or_insert(report);
                }
                return;
            }
            self.metrics.report_flushes.inc();
        }
    }

    async fn write(&self, batch: &[ClusterReport]) -> Result<()> {
        let mut tx = self.service.begin().await?;
        // Name order, the one order of every path locking several clusters.
        let mut batch: Vec<&ClusterReport> = batch.iter().collect();
        batch.sort_unstable_by(|a, b| a.cluster.cmp(&b.cluster));
        for report in batch {
            match reports::write_report_diff(&mut tx, report).await? {
                reports::ReportWrite::NoCluster => {
                    tracing::debug!(cluster = %report.cluster, "report for a deleted cluster dropped");
                }
                reports::ReportWrite::Unchanged => {}
                reports::ReportWrite::Written {
                    previous_local_gates,
                } => {
                    let entries = local_gates::diff(&previous_local_gates, &report.local_gates);
                    local_gates::write(&mut tx, &report.cluster, report.received_at, &entries)
                        .await?;
                }
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// Records (with the next flush) that `cluster`'s spoke (version
    /// `spoke_version`) connected to this replica.
    pub fn connected(&self, cluster: &str, spoke_version: &str) {
        let change = Connection::Connected {
            spoke_version: spoke_version.to_string(),
            at: self.service.now(),
        };
        lock(&self.connections).insert(cluster.to_string(), change);
        self.wake.notify_one();
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
        self.wake.notify_one();
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

    /// Clears this replica's connection state (left by a crash before start,
    /// or, `drained_at`, by streams a drain ended without recording it).
    /// Returns how many clusters it cleared.
    pub async fn clear_connections(&self, drained_at: Option<DateTime<Utc>>) -> Result<u64> {
        let mut conn = self.service.conn().await?;
        reports::clear_replica(&mut conn, &self.replica, drained_at).await
    }
}

/// A whole report, validated and without duplicates.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Assembled {
    pub objects: Vec<ReportedObject>,
    /// Empty from spokes that predate object holds.
    pub held_objects: Vec<HeldObject>,
    /// Gate objects made in the cluster, by name; empty from spokes that
    /// predate them.
    pub local_gates: Vec<LocalGate>,
}

/// The parts of one report received so far on a stream: a report may come in
/// parts (`more`) and is applied whole, when its last part arrives.
#[derive(Debug, Default)]
pub struct ReportParts {
    received: Assembled,
}

impl ReportParts {
    /// Held objects received so far (the index of the next one).
    pub fn held_len(&self) -> usize {
        self.received.held_objects.len()
    }

    /// Adds a part; returns the whole report, validated and without
    /// duplicates, when this was its last part (`more` false). Errors name
    /// the field (`report.objects[3].kind`).
    pub fn add(
        &mut self,
        objects: impl ExactSizeIterator<Item = ReportedObject>,
        held_objects: Vec<HeldObject>,
        local_gates: Vec<LocalGate>,
        more: bool,
    ) -> Result<Option<Assembled>> {
        let r = &mut self.received;
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
        r.held_objects.extend(held_objects);
        // Spokes send them on the last part; one list per report either way.
        if !local_gates.is_empty() {
            r.local_gates = local_gates;
        }
        if more {
            return Ok(None);
        }
        let r = std::mem::take(r);
        Ok(Some(Assembled {
            objects: normalize_objects(r.objects)?,
            held_objects: normalize_held_objects(r.held_objects)?,
            local_gates: normalize_local_gates(r.local_gates)?,
        }))
    }
}

/// Most local gates one report may carry.
pub const MAX_LOCAL_GATES: usize = 1000;

/// Validates a report's local gates and orders them by name. Errors name the
/// field, e.g. `report.local_gates[1].name`.
pub fn normalize_local_gates(mut gates: Vec<LocalGate>) -> Result<Vec<LocalGate>> {
    if gates.len() > MAX_LOCAL_GATES {
        return Err(Error::invalid(
            "report.local_gates",
            format!("more than {MAX_LOCAL_GATES} local gates in one report"),
        ));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (i, g) in gates.iter().enumerate() {
        let field = |f: &str| format!("report.local_gates[{i}].{f}");
        // A Kubernetes object name (DNS-1123 subdomain).
        let valid = !g.name.is_empty()
            && g.name.len() <= 253
            && g.name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && g.name.starts_with(|c: char| c.is_ascii_alphanumeric())
            && g.name.ends_with(|c: char| c.is_ascii_alphanumeric());
        if !valid {
            return Err(Error::invalid(
                field("name"),
                format!("'{}' is not a Kubernetes object name", g.name),
            ));
        }
        if !seen.insert(g.name.as_str()) {
            return Err(Error::invalid(
                field("name"),
                format!("'{}' is reported twice", g.name),
            ));
        }
        if !matches!(g.ready.as_str(), "True" | "False") {
            return Err(Error::invalid(
                field("ready"),
                format!("must be True or False, not '{}'", g.ready),
            ));
        }
        if g.held > g.governed {
            return Err(Error::invalid(
                field("held"),
                format!("{} held of {} governed", g.held, g.governed),
            ));
        }
    }
    gates.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(gates)
}

/// Validates a report's held objects and removes duplicates (the last one of
/// a key wins). Errors name the field, e.g. `report.held_objects[2].name`.
pub fn normalize_held_objects(objects: Vec<HeldObject>) -> Result<Vec<HeldObject>> {
    let mut by_key: BTreeMap<(String, String, String, String), HeldObject> = BTreeMap::new();
    for (i, o) in objects.into_iter().enumerate() {
        let required = [
            ("kind", &o.kind),
            ("name", &o.name),
            ("kustomization_name", &o.kustomization_name),
            ("kustomization_namespace", &o.kustomization_namespace),
        ];
        if let Some((field, _)) = required.iter().find(|(_, v)| v.is_empty()) {
            return Err(Error::invalid(
                format!("report.held_objects[{i}].{field}"),
                "must not be empty",
            ));
        }
        let key = (
            o.group.clone(),
            o.kind.clone(),
            o.namespace.clone(),
            o.name.clone(),
        );
        by_key.insert(key, o);
    }
    Ok(by_key.into_values().collect())
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
        if let Some(ready) = o.ready.as_deref()
            && !matches!(ready, "True" | "False" | "Unknown")
        {
            return Err(Error::invalid(
                format!("report.objects[{i}].ready"),
                format!("must be True, False, Unknown or empty, not '{ready}'"),
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
            ready: None,
            ready_reason: None,
            ready_message: None,
            stalled: false,
            generation: None,
            observed_generation: None,
            last_attempted_revision: None,
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

    fn held(kind: &str, name: &str, ks: &str) -> HeldObject {
        HeldObject {
            group: "apps".into(),
            kind: kind.into(),
            namespace: "web".into(),
            name: name.into(),
            kustomization_namespace: "flux-system".into(),
            kustomization_name: ks.into(),
            gates: vec!["g".into()],
            held_by: vec![],
            held_by_person: false,
            held_since_revision: None,
            held_since: None,
            newer_revision_applied: false,
        }
    }

    #[test]
    fn held_objects_are_checked_and_deduplicated() {
        let mut second = held("Deployment", "nginx", "apps");
        second.held_by = vec!["g".into()];
        let out =
            normalize_held_objects(vec![held("Deployment", "nginx", "apps"), second]).unwrap();
        assert_eq!(out.len(), 1);
        assert!(out[0].is_held());
        let err = normalize_held_objects(vec![held("Deployment", "nginx", "apps"), {
            held("Deployment", "x", "")
        }])
        .unwrap_err();
        assert_eq!(
            err.field(),
            Some("report.held_objects[1].kustomization_name")
        );
    }

    #[test]
    fn a_report_without_held_objects_is_whole() {
        // What a spoke that predates object holds sends.
        let mut parts = ReportParts::default();
        let first = parts
            .add(
                vec![obj("Kustomization", "a", "x", false)].into_iter(),
                vec![],
                vec![],
                true,
            )
            .unwrap();
        assert!(first.is_none());
        let whole = parts
            .add(vec![].into_iter(), vec![], vec![], false)
            .unwrap()
            .unwrap();
        assert_eq!(whole.objects.len(), 1);
        assert!(whole.held_objects.is_empty());
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
        let mut maybe = obj("Kustomization", "a", "x", false);
        maybe.ready = Some("Maybe".into());
        let err = normalize_objects(vec![maybe]).unwrap_err();
        assert_eq!(err.field(), Some("report.objects[0].ready"));
    }

    #[test]
    fn local_gates_are_checked_and_ordered() {
        let g = |name: &str| LocalGate {
            name: name.into(),
            ready: "True".into(),
            ..LocalGate::default()
        };
        let out = normalize_local_gates(vec![g("b"), g("a.freeze")]).unwrap();
        assert_eq!(out[0].name, "a.freeze");
        let err = normalize_local_gates(vec![g("a"), g("a")]).unwrap_err();
        assert_eq!(err.field(), Some("report.local_gates[1].name"));
        let err = normalize_local_gates(vec![g("-a")]).unwrap_err();
        assert_eq!(err.field(), Some("report.local_gates[0].name"));
        let mut over = g("a");
        over.held = 2;
        over.governed = 1;
        let err = normalize_local_gates(vec![over]).unwrap_err();
        assert_eq!(err.field(), Some("report.local_gates[0].held"));
    }
}
