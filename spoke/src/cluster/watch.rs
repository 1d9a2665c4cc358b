//! Watches every Flux kind the cluster serves with `kube::runtime::watcher` and
//! keeps an object store per kind. Any event wakes the reconcile loop
//! (level-triggered: it re-reads the stores, it does not consume events).

use std::{
    collections::BTreeMap,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
};

use fleetgate_policy::FluxKind;
use futures::StreamExt;
use kube::{
    Api, Client,
    core::ApiResource,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::{Notify, RwLock};
use tokio_util::sync::CancellationToken;

use crate::{
    cluster::flux_object::FluxObject,
    cluster::kinds,
    cluster::object_store::{ObjectStore, StoreWriter},
    cluster::observed::ObservedObject,
    serve::metrics::Metrics,
};

/// Objects per initial LIST page: a page is held whole (body and parsed
/// objects) while it is read, so smaller pages lower the spoke's peak memory.
const LIST_PAGE: u32 = 50;

struct Watched {
    resource: ApiResource,
    store: Arc<ObjectStore>,
    /// Set once the first full list is in the store. The writer swaps in a
    /// re-list atomically, so the store stays complete after that.
    ready: Arc<AtomicBool>,
}

/// The object stores of every watched Flux kind.
pub struct Watches {
    client: Client,
    kinds: RwLock<BTreeMap<FluxKind, Watched>>,
    /// Signalled on every watch event (coalesced: one permit).
    pub changed: Arc<Notify>,
    /// Set once a discovery round answered for every kind (found or missing):
    /// until then a kind might be watched-but-unknown, and planning on a
    /// partial view of the kinds could resume what another kind's gate holds.
    discovered: AtomicBool,
    /// Kinds reported missing, so the log line is written once per kind.
    missing: std::sync::Mutex<std::collections::BTreeSet<FluxKind>>,
    metrics: Arc<Metrics>,
}

impl Watches {
    pub fn new(client: Client, metrics: Arc<Metrics>) -> Self {
        Watches {
            client,
            kinds: RwLock::new(BTreeMap::new()),
            changed: Arc::new(Notify::new()),
            discovered: AtomicBool::new(false),
            missing: Default::default(),
            metrics,
        }
    }

    /// Looks for Flux kinds not watched yet and starts a watch for each one found.
    /// Returns the kinds started. Errors are logged; the next round retries.
    pub async fn discover(&self, shutdown: &CancellationToken) -> Vec<FluxKind> {
        let mut started = Vec::new();
        let mut failed = false;
        for kind in FluxKind::ALL {
            if self.kinds.read().await.contains_key(&kind) {
                continue;
            }
            match kinds::discover(&self.client, kind).await {
                Ok(Some(resource)) => {
                    let ready = Arc::new(AtomicBool::new(false));
                    let store = self.start(kind, resource.clone(), ready.clone(), shutdown.clone());
                    self.kinds.write().await.insert(
                        kind,
                        Watched {
                            resource,
                            store,
                            ready,
                        },
                    );
                    tracing::info!(kind = kind.as_str(), "watching Flux kind");
                    started.push(kind);
                }
                Ok(None) => {
                    let first = self
                        .missing
                        .lock()
                        .map(|mut m| m.insert(kind))
                        .unwrap_or(true);
                    if first {
                        tracing::info!(kind = kind.as_str(), api_version = %kind.api_version(), "Flux CRD not installed; skipped until it appears");
                    }
                }
                Err(e) => {
                    failed = true;
                    self.metrics.error(&e);
                    tracing::warn!(kind = kind.as_str(), error = %e, "discovery failed; retrying");
                }
            }
        }
        if !failed {
            self.discovered.store(true, Ordering::Release);
        }
        started
    }

    /// The Kubernetes client the watches use.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// True once a discovery round completed without errors.
    pub fn discovered(&self) -> bool {
        self.discovered.load(Ordering::Acquire)
    }

    fn start(
        &self,
        kind: FluxKind,
        resource: ApiResource,
        ready: Arc<AtomicBool>,
        shutdown: CancellationToken,
    ) -> Arc<ObjectStore> {
        // Parsed straight into the fields the spoke keeps (`flux_object`).
        let api: Api<FluxObject> = Api::all_with(self.client.clone(), &resource);
        let mut writer = StoreWriter::new(kind);
        let reader = writer.reader();
        let changed = self.changed.clone();
        let stream =
            watcher(api, watcher::Config::default().page_size(LIST_PAGE)).default_backoff();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            loop {
                tokio::select! {
                    _ = shutdown.cancelled() => break,
                    event = stream.next() => match event {
                        Some(Ok(event)) => {
                            if writer.apply(event) {
                                ready.store(true, Ordering::Release);
                            }
                            changed.notify_one();
                        }
                        Some(Err(e)) => tracing::warn!(kind = kind.as_str(), error = %e, "watch error; retrying with backoff"),
                        None => break,
                    },
                }
            }
        });
        reader
    }

    /// Every object of every watched kind, as the planner sees them; `None`
    /// until every watch has listed once. Planning on a partial view is unsafe:
    /// a source frozen through a Kustomization not listed yet would look
    /// ungoverned and be resumed.
    pub async fn observed(&self) -> Option<Vec<ObservedObject>> {
        if !self.discovered() {
            return None;
        }
        let kinds = self.kinds.read().await;
        if !kinds.values().all(|w| w.ready.load(Ordering::Acquire)) {
            return None;
        }
        let mut out = Vec::new();
        for w in kinds.values() {
            out.extend(w.store.state());
        }
        Some(out)
    }

    /// A namespaced API for objects of `kind`, if it is watched.
    pub async fn api(
        &self,
        kind: FluxKind,
        namespace: &str,
    ) -> Option<(Api<FluxObject>, ApiResource)> {
        let kinds = self.kinds.read().await;
        let w = kinds.get(&kind)?;
        Some((
            Api::namespaced_with(self.client.clone(), namespace, &w.resource),
            w.resource.clone(),
        ))
    }

    /// The kinds currently watched.
    pub async fn watched(&self) -> Vec<FluxKind> {
        self.kinds.read().await.keys().copied().collect()
    }
}
