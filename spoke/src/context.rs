//! The spoke's shared state: clients, metrics, the watches, the snapshot being
//! enforced (a `watch` channel: every reader sees the latest) and the latest
//! report. Also the one place a new snapshot is accepted.

use std::sync::{Arc, atomic::AtomicBool};

use fleetgate_policy::Override;
use kube::Client;
use tokio::sync::watch;

use crate::{
    cluster::events::EventRecorder,
    cluster::watch::Watches,
    config::Config,
    error::{Error, Result},
    hold::watch::HeldWatches,
    hub::report::Report,
    hub::snapshot::{CompiledSnapshot, Snapshot},
    hub::snapshot_store::{Failing, Persisted, Persistence, SnapshotStore},
    serve::metrics::Metrics,
};

/// Where a snapshot came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotSource {
    Hub,
    ConfigMap,
    /// Built by a standalone spoke from the Gate objects in its cluster.
    GateObjects,
}

/// Everything the spoke's tasks share.
pub struct Context {
    pub config: Config,
    pub metrics: Arc<Metrics>,
    pub watches: Watches,
    /// Metadata-only watches of the `--held-kinds` (objects inside Kustomizations).
    pub held: HeldWatches,
    pub recorder: EventRecorder,
    pub store: SnapshotStore,
    /// The snapshot being enforced; `None`: change nothing.
    pub snapshot: watch::Sender<Option<Arc<CompiledSnapshot>>>,
    /// The latest report (`None` before the first reconcile pass).
    pub report: watch::Sender<Option<Arc<Report>>>,
    /// Set once the watches have synced and the first pass ran.
    pub ready: Arc<AtomicBool>,
    /// Overrides made in the cluster (open/close requests on Gate objects),
    /// evaluated together with the snapshot's; they work without the hub.
    pub local_overrides: watch::Sender<Arc<Vec<Override>>>,
    /// Accepted requests on the hub's gates that the hub has not recorded yet:
    /// sent on every connect, change and heartbeat until its snapshot has them.
    pub local_requests: watch::Sender<Arc<Vec<fleetgate_proto::v1::LocalRequest>>>,
    /// A freeze made in the cluster (the `fleetgate-freeze` ConfigMap), enforced like the
    /// hub's and reported to it; `None`: none.
    pub local_freeze: watch::Sender<Option<crate::gates::freeze::LocalFreeze>>,
    /// The latest freeze made in the cluster that has ended (its ConfigMap deleted), as an
    /// expired override: it fences the opening of rollout gates until the hub has counted
    /// its end (`hub::snapshot::counted_by`), so they reopen through their waves.
    pub local_freeze_ended: std::sync::Mutex<Option<Override>>,
    /// With a hub: every Gate object made in the cluster as the spoke
    /// evaluates it, reported to the hub (read-only there).
    pub local_gates: watch::Sender<Arc<Vec<fleetgate_proto::v1::LocalGateStatus>>>,
    /// Whether the snapshot in force is persisted (readiness, metrics and the report to the
    /// hub read it).
    pub persistence: watch::Sender<Persistence>,
    /// The latest snapshot taken into force that is to be persisted: `lib::persister` writes
    /// it outside `merge`, so a snapshot (a freeze) arriving meanwhile never waits for the
    /// API server, and retries a failed write.
    pub to_persist: watch::Sender<Option<Arc<CompiledSnapshot>>>,
    /// Serialises the read-modify-write of the snapshot in force: a hub
    /// snapshot (which keeps the local gates) and a change of the local gates
    /// (which keeps the hub's part) must not overwrite each other.
    merge: tokio::sync::Mutex<()>,
}

impl Context {
    pub fn new(client: Client, config: Config) -> Arc<Self> {
        let metrics = Arc::new(Metrics::new());
        let watches = Watches::new(client.clone(), metrics.clone());
        Arc::new(Context {
            held: HeldWatches::new(
                client.clone(),
                config.held_kinds.clone(),
                watches.changed.clone(),
                metrics.clone(),
            ),
            watches,
            recorder: EventRecorder::new(
                client.clone(),
                "fleetgate-spoke",
                config.instance.clone(),
            )
            .with_flux(config.events_addr.as_deref().and_then(|addr| {
                crate::cluster::flux_events::FluxEvents::start(addr, metrics.flux_events.clone())
                    .inspect_err(|e| tracing::error!(error = %e, "events to notification-controller are off"))
                    .ok()
            })),
            store: SnapshotStore::new(client, &config.namespace, &config.snapshot_configmap),
            snapshot: watch::channel(None).0,
            report: watch::channel(None).0,
            ready: Arc::new(AtomicBool::new(false)),
            local_overrides: watch::channel(Arc::new(Vec::new())).0,
            local_requests: watch::channel(Arc::new(Vec::new())).0,
            local_freeze: watch::channel(None).0,
            local_freeze_ended: std::sync::Mutex::new(None),
            local_gates: watch::channel(Arc::new(Vec::new())).0,
            persistence: watch::channel(Persistence::default()).0,
            to_persist: watch::channel(None).0,
            merge: tokio::sync::Mutex::new(()),
            metrics,
            config,
        })
    }

    /// Every override made in the cluster: the requests on Gate objects and its freeze.
    pub fn local_overrides_now(&self) -> Arc<Vec<Override>> {
        let requests = self.local_overrides.borrow().clone();
        let ended = self
            .local_freeze_ended
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
            .filter(|e| {
                let snapshot = self.snapshot.borrow();
                !snapshot
                    .as_ref()
                    .is_some_and(|s| crate::hub::snapshot::counted_by(&s.snapshot, e))
            });
        let freeze = self.local_freeze.borrow().as_ref().map(|f| f.to_override());
        if freeze.is_none() && ended.is_none() {
            return requests;
        }
        let mut all = requests.as_ref().clone();
        all.extend(ended);
        all.extend(freeze);
        Arc::new(all)
    }

    /// The revision being enforced (0: none, or an invented no-snapshot policy).
    pub fn revision(&self) -> u64 {
        self.snapshot.borrow().as_ref().map_or(0, |s| s.revision())
    }

    /// Takes a snapshot built from the cluster's Gate objects into force (a
    /// standalone spoke) and persists it: it holds the last valid version of
    /// each gate, which a Gate object edited into an invalid spec keeps in
    /// force across a restart.
    pub async fn enforce_local(&self, compiled: Arc<CompiledSnapshot>) {
        let _merge = self.merge.lock().await;
        self.metrics
            .snapshot_revision
            .set(i64::try_from(compiled.revision()).unwrap_or(i64::MAX));
        tracing::info!(
            revision = compiled.revision(),
            gates = compiled.snapshot.gates.len(),
            source = ?SnapshotSource::GateObjects,
            "snapshot in force"
        );
        self.snapshot.send_replace(Some(compiled.clone()));
        self.to_persist.send_replace(Some(compiled));
    }

    /// Takes a snapshot into force unless it is for another cluster, not newer
    /// than the one held, or does not compile. Returns the compiled snapshot
    /// when it was taken. A snapshot from the hub is then persisted.
    pub async fn accept(
        &self,
        mut snapshot: Snapshot,
        source: SnapshotSource,
    ) -> Result<Option<Arc<CompiledSnapshot>>> {
        let _merge = self.merge.lock().await;
        if snapshot.cluster != self.config.cluster {
            return Err(Error::InvalidSnapshot(format!(
                "snapshot is for cluster '{}', this spoke is '{}'",
                snapshot.cluster, self.config.cluster
            )));
        }
        let held = self.revision();
        // A hub restarted with another `--local-gates` resends the revision
        // the spoke holds: take the setting.
        let setting_changed =
            source == SnapshotSource::Hub
                && snapshot.revision == held
                && self.snapshot.borrow().as_ref().is_some_and(|c| {
                    c.snapshot.local_gates_enforced != snapshot.local_gates_enforced
                });
        if snapshot.revision <= held && !setting_changed {
            if snapshot.revision < held {
                tracing::warn!(
                    received = snapshot.revision,
                    held,
                    ?source,
                    "ignoring snapshot older than the one held"
                );
            }
            return Ok(None);
        }
        if source == SnapshotSource::Hub
            && let Some(current) = self.snapshot.borrow().as_ref()
        {
            // The hub does not know the cluster's Gate objects: keep the ones
            // in force (the gates loop drops them if the hub now ignores them).
            snapshot.local_gates = current.snapshot.local_gates.clone();
        }
        let compiled = Arc::new(CompiledSnapshot::compile(snapshot)?);
        self.snapshot.send_replace(Some(compiled.clone()));
        self.metrics
            .snapshot_revision
            .set(i64::try_from(compiled.revision()).unwrap_or(i64::MAX));
        tracing::info!(
            revision = compiled.revision(),
            gates = compiled.snapshot.gates.len(),
            ?source,
            "snapshot in force"
        );
        if source == SnapshotSource::Hub {
            self.to_persist.send_replace(Some(compiled.clone()));
        }
        Ok(Some(compiled))
    }

    /// With a hub: enforces `rules` (the last valid version of each Gate object
    /// made in the cluster, none when the hub ignores them) beside the hub's
    /// gates at the same revision, and persists them with the hub's snapshot
    /// so a restart while the hub is unreachable keeps enforcing them. Nothing
    /// happens without a hub snapshot (whether to enforce is the hub's call).
    pub async fn set_local_gates(&self, rules: Vec<crate::hub::snapshot::GateRule>) {
        let _merge = self.merge.lock().await;
        let Some(current) = self.snapshot.borrow().clone() else {
            return;
        };
        if current.revision() == 0 || current.snapshot.local_gates == rules {
            return;
        }
        let mut snapshot = current.snapshot.clone();
        snapshot.local_gates = rules;
        let compiled = match CompiledSnapshot::compile(snapshot) {
            Ok(c) => Arc::new(c),
            Err(e) => {
                tracing::error!(error = %e, "local Gate objects did not compile; the previous ones stay in force");
                return;
            }
        };
        tracing::info!(
            revision = compiled.revision(),
            local_gates = compiled.snapshot.local_gates.len(),
            "local Gate objects in force beside the hub's gates"
        );
        self.snapshot.send_replace(Some(compiled.clone()));
        self.to_persist.send_replace(Some(compiled));
    }

    /// Records that the snapshot read back from the cluster at start is the persisted copy.
    pub fn persisted_at_start(&self, persisted: Persisted) {
        self.record_persisted(&persisted);
        self.persistence
            .send_modify(|p| p.persisted = Some(persisted));
    }

    fn record_persisted(&self, p: &Persisted) {
        let m = &self.metrics;
        let gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        m.snapshot_persisted_bytes.set(gauge(p.stored_bytes));
        m.snapshot_persisted_json_bytes.set(gauge(p.json_bytes));
        m.snapshot_persisted_configmaps.set(gauge(p.config_maps));
        m.snapshot_persisted_revision
            .set(i64::try_from(p.revision).unwrap_or(i64::MAX));
        m.snapshot_persist_failing.set(0);
    }

    /// Persists `compiled` (by `lib::persister` only, one write at a time) and makes the
    /// outcome visible: metrics, an Event on the head ConfigMap when persisting
    /// starts or stops failing, readiness and the report to the hub (through
    /// `persistence`), and the log.
    pub async fn persist(&self, compiled: Arc<CompiledSnapshot>) {
        let revision = compiled.revision();
        let result = self.store.save(compiled).await;
        let was_failing = self.persistence.borrow().failing.clone();
        match result {
            Ok(p) => {
                self.metrics.snapshot_persist_duration.observe(p.seconds);
                self.record_persisted(&p);
                let log = p.config_maps > 1 || p.json_bytes > p.stored_bytes;
                if log {
                    tracing::info!(
                        revision,
                        json_bytes = p.json_bytes,
                        stored_bytes = p.stored_bytes,
                        config_maps = p.config_maps,
                        seconds = p.seconds,
                        "snapshot persisted"
                    );
                }
                self.persistence.send_modify(|s| {
                    s.persisted = Some(p.clone());
                    s.failing = None;
                });
                if let Some(f) = was_failing {
                    tracing::info!(
                        revision,
                        failed_attempts = f.attempts,
                        "snapshot persisted again"
                    );
                    let note = format!(
                        "Revision {revision} persisted in {} ConfigMap(s), {} bytes, after {} failed attempt(s) since {}.",
                        p.config_maps,
                        p.stored_bytes,
                        f.attempts,
                        f.since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
                    );
                    self.event(false, "SnapshotPersisted", note).await;
                }
            }
            Err(e) => {
                self.metrics.error(&e);
                self.metrics.snapshot_persist_failures.inc();
                self.metrics.snapshot_persist_failing.set(1);
                let persisted = self
                    .persistence
                    .borrow()
                    .persisted
                    .as_ref()
                    .map(|p| p.revision);
                let fallback = match persisted {
                    Some(r) => format!("revision {r}"),
                    None => "no snapshot (--enforce-without-snapshot)".to_owned(),
                };
                tracing::error!(
                    revision,
                    error = %e,
                    "could not persist the snapshot in force; a restart without the hub would enforce {fallback}"
                );
                let failing = Failing {
                    revision,
                    error: e.to_string(),
                    since: was_failing
                        .as_ref()
                        .map_or_else(chrono::Utc::now, |f| f.since),
                    attempts: was_failing.as_ref().map_or(0, |f| f.attempts) + 1,
                };
                self.persistence
                    .send_modify(|s| s.failing = Some(failing.clone()));
                // One Event per revision (a retry of the same one only counts).
                if was_failing.is_none_or(|f| f.revision != revision) {
                    let note = format!(
                        "Revision {revision} is enforced but not persisted: {e}. A restart without the hub would enforce {fallback}; retrying."
                    );
                    self.event(true, "SnapshotNotPersisted", note).await;
                }
            }
        }
    }

    /// An Event regarding the head ConfigMap of the persisted snapshot.
    async fn event(&self, warning: bool, reason: &'static str, note: String) {
        let regarding = k8s_openapi::api::core::v1::ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
            namespace: Some(self.store.namespace().to_owned()),
            name: Some(self.store.name().to_owned()),
            ..Default::default()
        };
        if let Err(e) = self
            .recorder
            .publish_typed(warning, reason, "Persist", note, &regarding)
            .await
        {
            tracing::warn!(error = %e, reason, "could not publish the Event");
        }
    }
}
