//! The end-to-end phase's processes: one `fleetgate-sim` serving every
//! simulated cluster (one port each), and one real `fleetgate-spoke` per
//! cluster, connected to the hub under its own cluster name and token.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fleetgate_tests::ChildGuard;
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};

use crate::swarm::Credential;
use crate::{Error, Result, proc_stats};

/// The `--objects-per-cluster` that seeds `governed` governed objects: the
/// simulator's seed counts its sources too (a GitRepository, from 4 objects a
/// HelmRepository, from 10 an OCIRepository: `sim/src/flux/seed.rs`).
pub fn seeded_objects(governed: usize) -> usize {
    let sources = |m: usize| 1 + usize::from(m >= 4) + usize::from(m >= 10);
    (governed + 1..=governed + 3)
        .find(|&m| m - sources(m) == governed)
        .unwrap_or(governed + 3)
}
/// The spoke's namespace (its snapshot ConfigMap, Events, Lease).
const SPOKE_NAMESPACE: &str = "fleetgate-system";

/// A running simulator and a client per cluster.
pub struct SimFleet {
    child: tokio::process::Child,
    /// Per cluster, in order: its kubeconfig.
    pub kubeconfigs: Vec<PathBuf>,
    pub clients: Vec<kube::Client>,
}

impl SimFleet {
    /// Starts `fleetgate-sim` with `clusters` clusters of `governed` governed
    /// Flux objects each (Kustomizations and HelmReleases; sources besides).
    pub async fn start(
        sim_bin: &Path,
        clusters: usize,
        governed: usize,
        dir: &Path,
    ) -> Result<Self> {
        let (child, kubeconfigs) =
            crate::sim_process::start(sim_bin, clusters, seeded_objects(governed), dir).await?;
        let mut clients = Vec::with_capacity(clusters);
        for path in &kubeconfigs {
            clients.push(client(path).await?);
        }
        let namespaces = ApiResource::from_gvk(&GroupVersionKind::gvk("", "v1", "Namespace"));
        for c in &clients {
            let api: Api<DynamicObject> = Api::all_with(c.clone(), &namespaces);
            let ns: DynamicObject = serde_json::from_value(serde_json::json!({
                "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": SPOKE_NAMESPACE}
            }))
            .map_err(|e| Error::setup(e.to_string()))?;
            match api.create(&PostParams::default(), &ns).await {
                Ok(_) => {}
                Err(kube::Error::Api(s)) if s.code == 409 => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(Self {
            child,
            kubeconfigs,
            clients,
        })
    }

    /// The simulator's CPU time so far (user + system), if readable.
    pub fn cpu_time(&self) -> Option<Duration> {
        self.child
            .id()
            .and_then(|pid| proc_stats::cpu_time(pid).ok())
    }

    /// The simulator's resident memory (KiB).
    pub fn rss_kib(&self) -> u64 {
        self.child
            .id()
            .and_then(|pid| proc_stats::rss_kib(pid).ok())
            .unwrap_or(0)
    }
}

/// A kube client for the current context of a kubeconfig file.
async fn client(path: &Path) -> Result<kube::Client> {
    let kc = kube::config::Kubeconfig::read_from(path)
        .map_err(|e| Error::setup(format!("kubeconfig {}: {e}", path.display())))?;
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| Error::setup(format!("kubeconfig {}: {e}", path.display())))?;
    Ok(kube::Client::try_from(config)?)
}

/// The real spokes, one per cluster; dropped = killed.
pub struct Spokes {
    children: Vec<ChildGuard>,
}

impl Spokes {
    /// Starts a `fleetgate-spoke` for each `(credential, kubeconfig)` against
    /// the hub's gRPC address; each logs (warn) into `log_dir/<cluster>.log`.
    pub fn start(
        spoke_bin: &Path,
        hub_grpc: SocketAddr,
        fleet: &[(Credential, PathBuf)],
        log_dir: &Path,
    ) -> Result<Self> {
        std::fs::create_dir_all(log_dir)?;
        let mut children = Vec::with_capacity(fleet.len());
        for (cred, kubeconfig) in fleet {
            let log = std::fs::File::create(log_dir.join(format!("{}.log", cred.cluster)))?;
            let child = std::process::Command::new(spoke_bin)
                .args(["--cluster", &cred.cluster])
                .arg("--hub-url")
                .arg(format!("http://{hub_grpc}"))
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(["--namespace", SPOKE_NAMESPACE])
                // Any free port: nothing scrapes it here.
                .args(["--http-addr", "127.0.0.1:0"])
                .env("FLEETGATE_SPOKE_TOKEN", &cred.token)
                .env("RUST_LOG", "warn")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .map_err(|e| Error::setup(format!("starting fleetgate-spoke: {e}")))?;
            children.push(ChildGuard(child));
        }
        Ok(Self { children })
    }

    /// Fails if a spoke has exited.
    pub fn check_running(&mut self) -> Result<()> {
        for c in &mut self.children {
            if let Some(status) = c.0.try_wait()? {
                return Err(Error::setup(format!(
                    "a fleetgate-spoke exited ({status}); see its log"
                )));
            }
        }
        Ok(())
    }

    /// CPU time of all spokes so far (user + system; exited ones not counted).
    pub fn cpu_time(&self) -> Duration {
        self.children
            .iter()
            .filter_map(|c| proc_stats::cpu_time(c.0.id()).ok())
            .sum()
    }

    /// Each spoke's resident memory (KiB).
    pub fn rss_kib(&self) -> Vec<u64> {
        self.children
            .iter()
            .filter_map(|c| proc_stats::rss_kib(c.0.id()).ok())
            .collect()
    }

    /// SIGTERM to all, waits (≤ 10 s) for them to exit, kills the rest.
    pub async fn stop(mut self) {
        for c in &self.children {
            c.terminate();
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        for c in &mut self.children {
            while matches!(c.0.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn seeds_exactly_the_governed_objects() {
        for governed in 1..40 {
            let seeded = fleetgate_sim::flux::seed::fleet(super::seeded_objects(governed));
            let flux = seeded
                .iter()
                .filter(|o| o["kind"] == "Kustomization" || o["kind"] == "HelmRelease")
                .count();
            assert_eq!(flux, governed);
        }
    }
}
