//! The public handle: start N simulated clusters (one 127.0.0.1 port each, a Flux
//! simulator task each), seed them, push revisions, hand out kubeconfigs, shut down.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::error::Error;
use crate::flux;
use crate::ops::{self, Track, WriteOpts};
use crate::rbac::{Authorizer, RbacConfig};
use crate::store::Store;
use crate::upstream::{Failure, parse_manifests, push};

/// How to run the simulated fleet.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Cluster names; each gets its own port.
    pub clusters: Vec<String>,
    /// Overrides every Flux object's `spec.interval` (fast-forward).
    pub reconcile_interval: Option<Duration>,
    /// Enables bearer-token authentication and RBAC.
    pub rbac: Option<RbacConfig>,
    /// Period of BOOKMARK events on watches that allow them.
    pub bookmark_interval: Duration,
    /// Watch events kept per cluster; older resourceVersions get 410 Gone.
    pub history_limit: usize,
    /// Cluster `i` listens on `base_port + i`; `None` picks free ports.
    pub base_port: Option<u16>,
    /// Serve HTTPS with the embedded test certificate (kubectl only sends bearer tokens
    /// over TLS, so use this with `rbac` when kubectl must authenticate).
    pub tls: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            clusters: vec!["cluster-000".into()],
            reconcile_interval: None,
            rbac: None,
            bookmark_interval: Duration::from_secs(5),
            history_limit: 10_000,
            base_port: None,
            tls: false,
        }
    }
}

impl SimConfig {
    /// `n` clusters named `cluster-000`, `cluster-001`, ...
    pub fn with_clusters(n: usize) -> SimConfig {
        SimConfig {
            clusters: (0..n).map(|i| format!("cluster-{i:03}")).collect(),
            ..SimConfig::default()
        }
    }
}

struct Running {
    cluster: Arc<Cluster>,
    url: String,
}

/// A running simulated fleet; cheap to clone.
#[derive(Clone)]
pub struct Sim {
    clusters: Arc<BTreeMap<String, Running>>,
    admin_token: Option<String>,
    tls: bool,
    shutdown: CancellationToken,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];

fn seed_opts() -> WriteOpts {
    WriteOpts {
        manager: "fleetgate-sim".into(),
        ..WriteOpts::default()
    }
}

/// Creates `obj`, creating its namespace first when missing.
fn create_in(cluster: &Cluster, obj: Value) -> anyhow::Result<Value> {
    let av = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    let rt = cluster
        .registry()
        .by_kind(av, kind)
        .ok_or_else(|| anyhow!("unknown kind {av}/{kind}"))?;
    let ns = obj["metadata"]["namespace"].as_str().map(String::from);
    if let (true, Some(ns)) = (rt.namespaced, &ns) {
        let ns_obj = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        let nst = cluster
            .registry()
            .by_kind("v1", "Namespace")
            .ok_or_else(|| anyhow!("no Namespace type"))?;
        match ops::create(cluster, &nst, None, ns_obj, &seed_opts(), Track::Update) {
            Ok(_) => {}
            Err(Error::Api(s)) if s.reason == "AlreadyExists" => {}
            Err(e) => return Err(e.into()),
        }
    }
    let out = ops::create(
        cluster,
        &rt,
        ns.as_deref(),
        obj,
        &seed_opts(),
        Track::Update,
    )?;
    Ok((*out.object).clone())
}

impl Sim {
    pub async fn start(config: SimConfig) -> anyhow::Result<Sim> {
        let registry = crate::apiextensions::seed::templates()?.registry.clone();
        let shutdown = CancellationToken::new();
        let mut clusters = BTreeMap::new();
        let mut tasks = Vec::new();
        for (i, name) in config.clusters.iter().enumerate() {
            if clusters.contains_key(name) {
                bail!("duplicate cluster name {name:?}");
            }
            let port = match config.base_port {
                None => 0,
                Some(b) => u16::try_from(i)
                    .ok()
                    .and_then(|i| b.checked_add(i))
                    .ok_or_else(|| anyhow!("base port {b} + {i} clusters exceeds 65535"))?,
            };
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
                .await
                .with_context(|| format!("binding 127.0.0.1:{port} for cluster {name}"))?;
            let scheme = if config.tls { "https" } else { "http" };
            let url = format!("{scheme}://{}", listener.local_addr()?);
            let cluster = Arc::new(Cluster {
                name: name.clone(),
                registry: std::sync::RwLock::new(registry.clone()),
                crd_sync: Mutex::default(),
                crd_dirty: Default::default(),
                after_crd_write: crate::apiextensions::after_write,
                store: Store::new(config.history_limit),
                bookmark_interval: config.bookmark_interval,
                reconcile_interval: config.reconcile_interval,
                authorizer: config.rbac.as_ref().map(Authorizer::new),
                upstream: Mutex::default(),
                bundles: Mutex::default(),
                bad_revisions: Mutex::default(),
                late_failures: Mutex::default(),
                late_applied: Mutex::default(),
                reconciles: Mutex::default(),
                watches: Default::default(),
                issuer: crate::issuer::Issuer::new(url.clone()),
                projections: Mutex::default(),
                shutdown: shutdown.child_token(),
            });
            crate::apiextensions::seed::install(&cluster)?;
            for ns in SYSTEM_NAMESPACES {
                create_in(
                    &cluster,
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
                )?;
            }
            if let Some(rbac) = &config.rbac {
                for doc in &rbac.manifests {
                    for obj in parse_manifests(doc)? {
                        // Rendered deploy manifests also hold kinds this server does not
                        // serve (Deployments, ...): only what it serves is loaded.
                        let (av, kind) = (
                            obj["apiVersion"].as_str().unwrap_or_default(),
                            obj["kind"].as_str().unwrap_or_default(),
                        );
                        if cluster.registry().by_kind(av, kind).is_none() {
                            tracing::debug!(%av, %kind, "skipping manifest of an unserved kind");
                            continue;
                        }
                        match create_in(&cluster, obj) {
                            Ok(_) => {}
                            Err(e)
                                if e.downcast_ref::<Error>()
                                    .is_some_and(|e| e.status().reason == "AlreadyExists") => {}
                            Err(e) => return Err(e),
                        }
                    }
                }
            }
            let app = crate::handlers::router(cluster.clone());
            let stop = cluster.shutdown.clone();
            let tls = config.tls;
            tasks.push(tokio::spawn(async move {
                let served = if tls {
                    crate::tls::serve(listener, app, stop)
                        .await
                        .map_err(anyhow::Error::from)
                } else {
                    axum::serve(listener, app)
                        .with_graceful_shutdown(async move { stop.cancelled().await })
                        .await
                        .map_err(anyhow::Error::from)
                };
                if let Err(e) = served {
                    tracing::error!(error = %e, "simulated API server failed");
                }
            }));
            tasks.push(tokio::spawn(flux::run(cluster.clone())));
            clusters.insert(name.clone(), Running { cluster, url });
        }
        Ok(Sim {
            clusters: Arc::new(clusters),
            admin_token: config.rbac.map(|r| r.admin_token),
            tls: config.tls,
            shutdown,
            tasks: Arc::new(Mutex::new(tasks)),
        })
    }

    pub fn clusters(&self) -> Vec<String> {
        self.clusters.keys().cloned().collect()
    }

    fn cluster(&self, name: &str) -> anyhow::Result<&Arc<Cluster>> {
        self.clusters
            .get(name)
            .map(|r| &r.cluster)
            .ok_or_else(|| anyhow!("no simulated cluster named {name:?}"))
    }

    /// `http://127.0.0.1:PORT` of a cluster.
    pub fn url(&self, cluster: &str) -> Option<String> {
        self.clusters.get(cluster).map(|r| r.url.clone())
    }

    /// A kubeconfig for kubectl and kube-rs (with the admin token when RBAC is on).
    pub fn kubeconfig_yaml(&self, cluster: &str) -> Option<String> {
        let url = self.url(cluster)?;
        Some(crate::kubeconfig::render(
            cluster,
            &url,
            self.admin_token.as_deref(),
            self.ca_pem(),
        ))
    }

    /// A kubeconfig authenticating with `token` (e.g. a ServiceAccount's from `RbacConfig`).
    pub fn kubeconfig_yaml_with_token(&self, cluster: &str, token: &str) -> Option<String> {
        let url = self.url(cluster)?;
        Some(crate::kubeconfig::render(
            cluster,
            &url,
            Some(token),
            self.ca_pem(),
        ))
    }

    /// PEM of the CA to trust when TLS is on.
    pub fn ca_pem(&self) -> Option<&'static str> {
        self.tls.then_some(crate::tls::CA_PEM)
    }

    pub fn write_kubeconfig(&self, cluster: &str, path: &Path) -> anyhow::Result<()> {
        let yaml = self
            .kubeconfig_yaml(cluster)
            .ok_or_else(|| anyhow!("no simulated cluster named {cluster:?}"))?;
        std::fs::write(path, yaml).with_context(|| format!("writing {}", path.display()))
    }

    /// "Pushes a commit": the source publishes `revision` on its next reconcile (at once
    /// unless suspended; a suspended source publishes it when resumed).
    pub async fn push_revision(
        &self,
        cluster: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        revision: &str,
    ) -> anyhow::Result<()> {
        Ok(push(
            self.cluster(cluster)?,
            kind,
            namespace,
            name,
            revision,
            None,
            None,
        )?)
    }

    /// Pushes a revision carrying manifests (source path → multi-document YAML): the
    /// Kustomizations on that source apply the objects under their `spec.path` as
    /// kustomize-controller would (see `flux::kustomize`).
    pub async fn push_manifests(
        &self,
        cluster: &str,
        source: (&str, &str, &str),
        revision: &str,
        manifests: &BTreeMap<String, String>,
    ) -> anyhow::Result<()> {
        let (kind, namespace, name) = source;
        Ok(push(
            self.cluster(cluster)?,
            kind,
            namespace,
            name,
            revision,
            Some(manifests),
            None,
        )?)
    }

    /// Pushes a bad revision (with manifests when given): the consumers applying it go
    /// Ready=False the way Flux reports failures (see `flux::failure`) and keep their last
    /// applied revision, until a good revision follows.
    pub async fn push_failing(
        &self,
        cluster: &str,
        source: (&str, &str, &str),
        revision: &str,
        manifests: Option<&BTreeMap<String, String>>,
        failure: &Failure,
    ) -> anyhow::Result<()> {
        let (kind, namespace, name) = source;
        Ok(push(
            self.cluster(cluster)?,
            kind,
            namespace,
            name,
            revision,
            manifests,
            Some(failure),
        )?)
    }

    /// Creates an object as-is (namespace created if missing); returns the stored object.
    pub async fn create_object(&self, cluster: &str, obj: Value) -> anyhow::Result<Value> {
        create_in(self.cluster(cluster)?, obj)
    }

    /// The stored object, if any.
    pub fn get_object(
        &self,
        cluster: &str,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<Value> {
        let c = self.cluster(cluster).ok()?;
        let rt = c.registry().by_kind(api_version, kind)?;
        c.store
            .with(|s| s.get(&rt.key(), namespace, name))
            .map(|o| (*o).clone())
    }

    /// Seeds every cluster with `objects_per_cluster` realistic Flux objects.
    pub async fn seed_fleet(&self, objects_per_cluster: usize) -> anyhow::Result<()> {
        let objects = flux::seed::fleet(objects_per_cluster);
        for running in self.clusters.values() {
            for obj in &objects {
                match create_in(&running.cluster, obj.clone()) {
                    Ok(_) => {}
                    Err(e)
                        if e.downcast_ref::<Error>()
                            .is_some_and(|e| e.status().reason == "AlreadyExists") => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// How many times the simulator reconciled one Flux object.
    pub fn reconcile_count(&self, cluster: &str, kind: &str, namespace: &str, name: &str) -> u64 {
        let Ok(c) = self.cluster(cluster) else {
            return 0;
        };
        let counts = c.reconciles.lock().unwrap_or_else(|p| p.into_inner());
        counts
            .get(&(kind.into(), namespace.into(), name.into()))
            .copied()
            .unwrap_or(0)
    }

    /// How many watch requests a cluster has served.
    pub fn watch_count(&self, cluster: &str) -> u64 {
        self.cluster(cluster)
            .map_or(0, |c| c.watches.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Drops a cluster's watch history: watching from any earlier resourceVersion now
    /// gets 410 Gone (what etcd compaction does).
    pub fn compact(&self, cluster: &str) -> anyhow::Result<()> {
        self.cluster(cluster)?.store.with(|s| s.compact());
        Ok(())
    }

    /// Stops every server and simulator task (open watches end).
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let tasks: Vec<JoinHandle<()>> =
            std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        for t in tasks {
            let abort = t.abort_handle();
            if tokio::time::timeout(Duration::from_secs(5), t)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }
}
