//! One simulated cluster: its served types, storage, access control and the
//! upstream "git" state its Flux sources pull from.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::crd::Registry;
use crate::rbac::Authorizer;
use crate::store::Store;

/// Identifies a Flux source: (kind, namespace, name).
pub type SourceKey = (String, String, String);

/// How a revision fails late on one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LateFailure {
    /// What the health check reports.
    pub message: String,
    /// From the Kustomization's first apply of the revision to the failure.
    pub after: Duration,
    /// How long it fails (`None`: until a newer revision).
    pub lasting: Option<Duration>,
}

/// The manifests pushed with one revision of a source: YAML objects per source path.
pub type Bundle = BTreeMap<String, Vec<serde_json::Value>>;

#[derive(Debug)]
pub struct Cluster {
    pub name: String,
    /// The served types; replaced as a whole when a CRD changes (see `apiextensions`).
    /// Request paths take one `Arc` of it per request.
    pub registry: RwLock<Arc<Registry>>,
    /// Serializes the apiextensions controllers (one worker, as naming_controller.go).
    pub crd_sync: Mutex<()>,
    /// A CRD (or an object of a terminating CRD) changed since the controllers last ran.
    pub crd_dirty: AtomicBool,
    /// Runs the apiextensions controllers after a CRD write (`apiextensions::after_write`,
    /// set by the simulator): the write path calls it, and the controllers write through
    /// the write path, so it is passed in rather than imported by `ops`.
    pub after_crd_write: fn(&Cluster),
    pub store: Store,
    /// How often watches with `allowWatchBookmarks` get a BOOKMARK.
    pub bookmark_interval: Duration,
    /// Overrides every Flux object's `spec.interval` (fast-forward time).
    pub reconcile_interval: Option<Duration>,
    pub authorizer: Option<Authorizer>,
    /// Newest revision "pushed" to each source's upstream (git/OCI/Helm repository).
    pub upstream: Mutex<HashMap<SourceKey, String>>,
    /// Manifests pushed with a revision of a source (source, revision) → objects per path;
    /// what the simulated kustomize-controller applies.
    pub bundles: Mutex<HashMap<(SourceKey, String), Arc<Bundle>>>,
    /// Revisions pushed as bad on this cluster (source, revision) → failure message: the
    /// consumers applying them fail (see `flux::failure`).
    pub bad_revisions: Mutex<HashMap<(SourceKey, String), String>>,
    /// Revisions pushed to fail late on this cluster (source, revision): applied and healthy
    /// first, then failing (see `flux::late`).
    pub late_failures: Mutex<HashMap<(SourceKey, String), LateFailure>>,
    /// When each Kustomization first applied a late-failing revision (Kustomization, revision).
    pub late_applied: Mutex<HashMap<(SourceKey, String), tokio::time::Instant>>,
    /// Reconciles the simulator ran per Flux object (kind, namespace, name).
    pub reconciles: Mutex<HashMap<SourceKey, u64>>,
    /// Watch requests served (tests prove clients really re-watched).
    pub watches: std::sync::atomic::AtomicU64,
    /// The cluster's service-account token issuer (its own signing key and discovery).
    pub issuer: crate::issuer::Issuer,
    /// Projected token files kept fresh, by path (see `kubelet`).
    pub projections: Mutex<HashMap<std::path::PathBuf, CancellationToken>>,
    pub shutdown: CancellationToken,
}

impl Cluster {
    /// The types served now.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub fn set_registry(&self, registry: Registry) {
        *self.registry.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(registry);
    }

    pub fn push(&self, key: SourceKey, revision: String) {
        self.upstream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, revision);
        self.store.flux_changed.notify_one();
    }

    /// Pushes `revision` together with the manifests it carries.
    pub fn push_bundle(&self, key: SourceKey, revision: String, bundle: Bundle) {
        self.bundles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert((key.clone(), revision.clone()), Arc::new(bundle));
        self.push(key, revision);
    }

    /// The manifests pushed with `revision` of `source`, if any.
    pub fn bundle(&self, source: &SourceKey, revision: &str) -> Option<Arc<Bundle>> {
        self.bundles
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(source.clone(), revision.to_string()))
            .cloned()
    }

    /// Marks `revision` of `source` bad on this cluster (`Some(message)`) or good (`None`:
    /// pushing a revision again without a failure clears the mark). Marked before the
    /// revision is published, so no pass applies it as good in between.
    pub fn mark_bad(&self, source: SourceKey, revision: String, message: Option<String>) {
        let mut bad = self.bad_revisions.lock().unwrap_or_else(|p| p.into_inner());
        match message {
            Some(m) => bad.insert((source, revision), m),
            None => bad.remove(&(source, revision)),
        };
    }

    /// Marks `revision` of `source` to fail late on this cluster (`Some`), or not (`None`).
    pub fn mark_late(&self, source: SourceKey, revision: String, late: Option<LateFailure>) {
        let mut marks = self.late_failures.lock().unwrap_or_else(|p| p.into_inner());
        match late {
            Some(l) => marks.insert((source, revision), l),
            None => marks.remove(&(source, revision)),
        };
    }

    /// The late failure `revision` of `source` was pushed with here, if any.
    pub fn late_failure(&self, source: &SourceKey, revision: &str) -> Option<LateFailure> {
        self.late_failures
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(source.clone(), revision.to_string()))
            .cloned()
    }

    /// The failure message of `revision` of `source`, if it was pushed as bad here.
    pub fn bad_revision(&self, source: &SourceKey, revision: &str) -> Option<String> {
        self.bad_revisions
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(source.clone(), revision.to_string()))
            .cloned()
    }

    pub fn upstream_revision(&self, key: &SourceKey) -> Option<String> {
        self.upstream
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }
}
