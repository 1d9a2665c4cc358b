//! Metadata-only watches (PartialObjectMeta) of the `--held-kinds`, restricted
//! to objects a Kustomization applied (`kustomize.toolkit.fluxcd.io/name`
//! label present): the spoke keeps about two hundred bytes per applied object
//! and never reads a Deployment's spec (the store holds each object once, its
//! key inside it; repeated values are interned). Any event wakes the reconcile
//! loop.

use std::{
    borrow::Borrow,
    collections::{BTreeMap, BTreeSet},
    sync::{
        Arc, PoisonError, RwLock,
        atomic::{AtomicBool, Ordering},
    },
};

use fleetgate_policy::GroupKind;
use futures::StreamExt;
use kube::{
    Api, Client,
    api::{DynamicObject, PartialObjectMeta},
    core::{ApiResource, GroupVersionKind},
    discovery::pinned_kind,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{
    kinds::HeldKind,
    marks::OWNER_NAME,
    observed::{AppliedObject, HeldKey, Interner},
};
use crate::serve::metrics::Metrics;

/// An applied object ordered by its key, so a set holds it without a second
/// copy of the key (as a map's key would be).
#[derive(Clone, Debug)]
struct ByKey(AppliedObject);

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key == other.0.key
    }
}
impl Eq for ByKey {}
impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key.cmp(&other.0.key)
    }
}
impl Borrow<HeldKey> for ByKey {
    fn borrow(&self) -> &HeldKey {
        &self.0.key
    }
}

type Objects = BTreeSet<ByKey>;

struct Watched {
    kind: Arc<GroupKind>,
    resource: ApiResource,
    objects: Arc<RwLock<Objects>>,
    ready: Arc<AtomicBool>,
}

/// The applied objects of every enabled held kind.
pub struct HeldWatches {
    client: Client,
    configured: Vec<HeldKind>,
    kinds: tokio::sync::RwLock<BTreeMap<GroupKind, Watched>>,
    changed: Arc<Notify>,
    metrics: Arc<Metrics>,
}

impl HeldWatches {
    pub fn new(
        client: Client,
        configured: Vec<HeldKind>,
        changed: Arc<Notify>,
        metrics: Arc<Metrics>,
    ) -> Self {
        HeldWatches {
            client,
            configured,
            kinds: Default::default(),
            changed,
            metrics,
        }
    }

    /// The kinds enabled with `--held-kinds`.
    pub fn configured(&self) -> &[HeldKind] {
        &self.configured
    }

    /// Starts a watch for each enabled kind the cluster serves and is not
    /// watched yet; missing kinds are retried on the next round.
    pub async fn discover(&self, shutdown: &CancellationToken) -> usize {
        let mut started = 0;
        for held in &self.configured {
            let gk = held.group_kind();
            if self.kinds.read().await.contains_key(&gk) {
                continue;
            }
            let gvk = GroupVersionKind::gvk(&held.group, &held.version, &held.kind);
            match pinned_kind(&self.client, &gvk).await {
                Ok((resource, _)) => {
                    let watched = self.start(gk.clone(), resource, shutdown.clone());
                    self.kinds.write().await.insert(gk, watched);
                    tracing::info!(kind = %held, "watching held kind (metadata only)");
                    started += 1;
                }
                Err(e) => {
                    let e = crate::Error::Kube(e);
                    self.metrics.error(&e);
                    tracing::warn!(kind = %held, error = %e, "held kind not served (yet); retrying");
                }
            }
        }
        started
    }

    fn start(&self, gk: GroupKind, resource: ApiResource, shutdown: CancellationToken) -> Watched {
        let gk = Arc::new(gk);
        // kube 5: an Api of PartialObjectMeta makes metadata-only requests.
        let api: Api<PartialObjectMeta<DynamicObject>> =
            Api::all_with(self.client.clone(), &resource);
        let config = watcher::Config::default().labels(OWNER_NAME).page_size(500);
        let stream = watcher(api, config).default_backoff();
        let objects: Arc<RwLock<Objects>> = Arc::default();
        let ready = Arc::new(AtomicBool::new(false));
        let (store, is_ready, changed) = (objects.clone(), ready.clone(), self.changed.clone());
        let gk_task = gk.clone();
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            let mut buffer = Objects::new();
            // Shares namespaces, owners, label sets and marks between objects.
            let mut interner = Interner::default();
            let write = || store.write().unwrap_or_else(PoisonError::into_inner);
            loop {
                let event = tokio::select! {
                    _ = shutdown.cancelled() => break,
                    event = stream.next() => event,
                };
                match event {
                    Some(Ok(watcher::Event::Apply(o))) => {
                        let a = AppliedObject::from_meta_in(&gk_task, &o.metadata, &mut interner);
                        let live = {
                            let mut objects = write();
                            objects.replace(ByKey(a));
                            objects.len()
                        };
                        // Marks of earlier closings pile up otherwise.
                        if interner.len() > 2 * live + 64 {
                            interner.sweep();
                        }
                    }
                    Some(Ok(watcher::Event::Delete(o))) => {
                        let a = AppliedObject::from_meta(&gk_task, &o.metadata);
                        write().remove(&a.key);
                    }
                    Some(Ok(watcher::Event::Init)) => buffer.clear(),
                    Some(Ok(watcher::Event::InitApply(o))) => {
                        let a = AppliedObject::from_meta_in(&gk_task, &o.metadata, &mut interner);
                        buffer.replace(ByKey(a));
                    }
                    Some(Ok(watcher::Event::InitDone)) => {
                        *write() = std::mem::take(&mut buffer);
                        interner.sweep();
                        is_ready.store(true, Ordering::Release);
                    }
                    Some(Err(e)) => {
                        tracing::warn!(kind = %gk_task, error = %e, "held-kind watch error; retrying with backoff");
                        continue;
                    }
                    None => break,
                }
                changed.notify_one();
            }
        });
        Watched {
            kind: gk,
            resource,
            objects,
            ready,
        }
    }

    /// Every applied object of the kinds listed at least once. Planning holds
    /// object by object is safe on a partial set of kinds: a kind not listed
    /// yet is simply not acted on.
    pub async fn observed(&self) -> Vec<AppliedObject> {
        let kinds = self.kinds.read().await;
        let mut out = Vec::new();
        for w in kinds.values().filter(|w| w.ready.load(Ordering::Acquire)) {
            out.extend(
                w.objects
                    .read()
                    .unwrap_or_else(PoisonError::into_inner)
                    .iter()
                    .map(|o| o.0.clone()),
            );
        }
        out
    }

    /// The watched kind `group`/`kind` (shared by its objects), once listed.
    pub async fn watched_kind(&self, group: &str, kind: &str) -> Option<Arc<GroupKind>> {
        let kinds = self.kinds.read().await;
        kinds
            .values()
            .find(|w| {
                w.kind.group == group && w.kind.kind == kind && w.ready.load(Ordering::Acquire)
            })
            .map(|w| w.kind.clone())
    }

    /// A namespaced API for objects of `kind`, if it is watched.
    pub async fn api(&self, kind: &GroupKind, namespace: &str) -> Option<Api<DynamicObject>> {
        let kinds = self.kinds.read().await;
        let w = kinds.get(kind)?;
        Some(Api::namespaced_with(
            self.client.clone(),
            namespace,
            &w.resource,
        ))
    }
}
