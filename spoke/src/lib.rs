//! fleetgate-spoke: enforces the hub's gates on one cluster's Flux objects.
//! It suspends what closed gates hold (and marks it), resumes only what it
//! suspended itself, keeps enforcing from a persisted snapshot when the hub is
//! unreachable, and reports per-object status back to the hub.
//!
//! Layers: imports `fleetgate-policy` and `fleetgate-proto` only; never the hub or the CLI.
//! Inside, the pure planners (`suspend/plan.rs`, `hold/plan.rs`) import no controller, and
//! the hub and cluster sides import nothing of the loops that use them.
#![forbid(unsafe_code)]

// The data flow, in folders: `hub` (stream, snapshot, report) and `cluster`
// (watches of the Flux objects) feed the reconcile loop (`controller`), which
// plans and applies whole-object suspends (`suspend`) and object-level holds
// (`hold`); `gates` keeps the in-cluster Gate objects; `serve` answers HTTP.
pub mod clock;
pub mod cluster;
pub mod config;
mod context;
pub(crate) mod controller;
mod error;
pub mod gates;
pub mod hold;
pub mod hub;
mod serve;
pub mod suspend;

use std::{sync::Arc, time::Duration};

use tokio::{net::TcpListener, task::JoinSet};
use tokio_util::sync::CancellationToken;

pub use config::{Config, WithoutSnapshot};
pub use context::{Context, SnapshotSource};
pub use error::{Error, Result};

use crate::{
    hub::{connection::HubTarget, snapshot::CompiledSnapshot},
    serve::{flagger, health, health::HealthState},
};

/// Builds a Kubernetes client from `--kubeconfig`, or in-cluster / default config.
pub async fn kube_client(config: &Config) -> Result<kube::Client> {
    let kube_config = match &config.kubeconfig {
        Some(path) => {
            let kc = kube::config::Kubeconfig::read_from(path)
                .map_err(|e| Error::KubeConfig(format!("{}: {e}", path.display())))?;
            kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| Error::KubeConfig(format!("{}: {e}", path.display())))?
        }
        None => kube::Config::infer()
            .await
            .map_err(|e| Error::KubeConfig(e.to_string()))?,
    };
    kube::Client::try_from(kube_config).map_err(Error::from)
}

/// Enforces the persisted snapshot, or the `--enforce-without-snapshot` policy
/// when there is none. Runs before the hub is contacted. `Err` when the API
/// server could not be asked: then nothing is decided (falling back to the
/// policy could resume what the unread snapshot holds) and the caller retries.
async fn load_persisted(ctx: &Context) -> Result<()> {
    match ctx.store.load().await {
        Ok(Some((snapshot, persisted))) => {
            match ctx.accept(snapshot, SnapshotSource::ConfigMap).await {
                Ok(_) => {
                    tracing::info!(
                        revision = persisted.revision,
                        stored_bytes = persisted.stored_bytes,
                        config_maps = persisted.config_maps,
                        seconds = persisted.seconds,
                        "persisted snapshot read"
                    );
                    ctx.persisted_at_start(persisted);
                    return Ok(());
                }
                Err(e) => {
                    ctx.metrics.error(&e);
                    tracing::error!(error = %e, "persisted snapshot unusable; treated as none");
                }
            }
        }
        Ok(None) => {
            tracing::info!(configmap = %ctx.config.snapshot_configmap, "no persisted snapshot")
        }
        Err(e @ Error::PersistedSnapshot { .. }) => {
            ctx.metrics.error(&e);
            tracing::error!(error = %e, "persisted snapshot corrupt; treated as none");
        }
        Err(e) => {
            ctx.metrics.error(&e);
            tracing::warn!(error = %e, "could not read the persisted snapshot; retrying");
            return Err(e);
        }
    }
    enforce_without_snapshot(ctx);
    Ok(())
}

/// First and longest wait between attempts to persist a snapshot that could not be.
const PERSIST_RETRY_MIN: Duration = Duration::from_secs(2);
const PERSIST_RETRY_MAX: Duration = Duration::from_secs(60);

/// Persists the latest snapshot taken into force (`Context::to_persist`), one write at a
/// time and outside the lock that takes snapshots into force, so a snapshot arriving during
/// a long write (a freeze) is enforced at once; only the newest is written. A failed write
/// is tried again (2 s, doubling to a minute) until one succeeds, so a refusal that ends
/// (RBAC fixed, API server back) ends the not-ready state without waiting for the next
/// snapshot.
async fn persister(ctx: Arc<Context>, shutdown: CancellationToken) {
    let mut rx = ctx.to_persist.subscribe();
    let mut wait = PERSIST_RETRY_MIN;
    loop {
        let failing = ctx.persistence.borrow().failing.is_some();
        tokio::select! {
            _ = shutdown.cancelled() => return,
            changed = rx.changed() => {
                if changed.is_err() {
                    return;
                }
                wait = PERSIST_RETRY_MIN;
            }
            _ = tokio::time::sleep(wait), if failing => {
                wait = (wait * 2).min(PERSIST_RETRY_MAX);
            }
        }
        let Some(latest) = rx.borrow_and_update().clone() else {
            continue;
        };
        ctx.persist(latest).await;
    }
}

/// Applies `--enforce-without-snapshot` unless a snapshot is in force already.
fn enforce_without_snapshot(ctx: &Context) {
    let policy = match ctx.config.enforce_without_snapshot {
        WithoutSnapshot::None => {
            tracing::warn!(
                "no snapshot: changing nothing until the hub sends one (--enforce-without-snapshot=none)"
            );
            return;
        }
        WithoutSnapshot::Open => Ok(CompiledSnapshot::all_open()),
        WithoutSnapshot::Closed => CompiledSnapshot::all_closed(),
    };
    match policy {
        Ok(p) => {
            let p = Arc::new(p);
            // A snapshot from the hub that arrived meanwhile wins.
            let applied = ctx.snapshot.send_if_modified(|cur| {
                if cur.is_some() {
                    return false;
                }
                *cur = Some(p.clone());
                true
            });
            if applied {
                tracing::warn!(policy = ?ctx.config.enforce_without_snapshot, "no snapshot: enforcing --enforce-without-snapshot");
            }
        }
        Err(e) => tracing::error!(error = %e, "cannot build the no-snapshot policy"),
    }
}

/// A running spoke: its shared state and its tasks.
pub struct Spoke {
    pub ctx: Arc<Context>,
    pub http_addr: std::net::SocketAddr,
    tasks: JoinSet<()>,
    shutdown: CancellationToken,
}

impl Spoke {
    /// Starts every task: health listener, watches, the persisted snapshot,
    /// the reconcile loop, rediscovery, and the hub connection.
    pub async fn start(
        client: kube::Client,
        config: Config,
        shutdown: CancellationToken,
    ) -> Result<Spoke> {
        let hub = match &config.hub_url {
            Some(url) => {
                let token = config.read_token()?.ok_or_else(|| {
                    Error::Config(
                        "--hub-url needs a token (--token-file or FLEETGATE_SPOKE_TOKEN)".into(),
                    )
                })?;
                let ca = match &config.hub_ca {
                    Some(p) => Some(
                        std::fs::read(p)
                            .map_err(|e| Error::Config(format!("--hub-ca {}: {e}", p.display())))?,
                    ),
                    None => None,
                };
                Some(HubTarget::new(url, token, ca)?)
            }
            None => None,
        };
        let listener = TcpListener::bind(config.http_addr)
            .await
            .map_err(Error::Http)?;
        let http_addr = listener.local_addr().map_err(Error::Http)?;
        let ctx = Context::new(client, config);
        let mut tasks = JoinSet::new();

        let health = HealthState {
            metrics: ctx.metrics.clone(),
            ready: ctx.ready.clone(),
            persistence: ctx.persistence.subscribe(),
        };
        let sd = shutdown.clone();
        let router = health::app(health).merge(flagger::router(ctx.clone()));
        tasks.spawn(async move {
            if let Err(e) = health::serve(listener, router, sd).await {
                tracing::error!(error = %e, "health listener failed");
            }
        });

        ctx.watches.discover(&shutdown).await;
        ctx.held.discover(&shutdown).await;
        // Standalone, the Gate objects are the persisted state: nothing is
        // enforced until their watch has listed.
        if !ctx.config.standalone && load_persisted(&ctx).await.is_err() {
            let (c, sd) = (ctx.clone(), shutdown.clone());
            tasks.spawn(async move {
                loop {
                    tokio::select! {
                        _ = sd.cancelled() => return,
                        _ = tokio::time::sleep(Duration::from_secs(2)) => {}
                    }
                    // A snapshot from the hub supersedes whatever was persisted.
                    let superseded = c.snapshot.borrow().is_some();
                    if superseded || load_persisted(&c).await.is_ok() {
                        return;
                    }
                }
            });
        }
        tasks.spawn(persister(ctx.clone(), shutdown.clone()));
        tasks.spawn(controller::run(ctx.clone(), shutdown.clone()));
        tasks.spawn(gates::run(ctx.clone(), shutdown.clone()));
        tasks.spawn(gates::freeze_watch::run(ctx.clone(), shutdown.clone()));

        let (c, sd) = (ctx.clone(), shutdown.clone());
        tasks.spawn(async move {
            let every = c.config.discovery_interval.max(Duration::from_secs(1));
            loop {
                // Until one round succeeded nothing is enforced: retry soon.
                let period = if c.watches.discovered() {
                    every
                } else {
                    every.min(Duration::from_secs(2))
                };
                tokio::select! {
                    _ = sd.cancelled() => return,
                    _ = tokio::time::sleep(period) => {
                        let was = c.watches.discovered();
                        let started = c.watches.discover(&sd).await;
                        let held_started = c.held.discover(&sd).await;
                        if !started.is_empty() || held_started > 0 || (!was && c.watches.discovered()) {
                            c.watches.changed.notify_one();
                        }
                    }
                }
            }
        });

        match hub {
            Some(target) => {
                tasks.spawn(hub::connection::run(ctx.clone(), target, shutdown.clone()));
            }
            None if ctx.config.standalone => {
                tracing::info!("standalone: the gates are the Gate objects in this cluster")
            }
            None => tracing::warn!("no --hub-url: running offline from the persisted snapshot"),
        }
        Ok(Spoke {
            ctx,
            http_addr,
            tasks,
            shutdown,
        })
    }

    /// Waits for every task to end (after `shutdown` fires).
    pub async fn join(mut self) {
        while self.tasks.join_next().await.is_some() {}
    }

    /// Fires shutdown and waits for every task.
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.join().await;
    }
}
