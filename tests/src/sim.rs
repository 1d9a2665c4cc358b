//! `fleetgate-sim` as a real process for end-to-end tests: one simulated
//! cluster (or several) without Flux objects, Flux controllers reconciling
//! every 200 ms, each cluster's API URL and kubeconfig read from the lines it
//! prints at start, a client for it and the namespaces a spoke needs.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use kube::Api;
use kube::api::PostParams;

use crate::{ChildGuard, bin_path, kube_client_from_file};

/// A running simulator with one cluster.
#[derive(Debug)]
pub struct SimProcess {
    pub child: ChildGuard,
    /// The cluster's API server (also serves `/sim/v1/push`).
    pub url: String,
    /// A kubeconfig for the cluster (for kube clients and the real kubectl).
    pub kubeconfig: PathBuf,
}

/// Starts `fleetgate-sim` with one cluster, writing its kubeconfig into `dir`;
/// waits (60 s at most) for the line naming the cluster.
pub async fn start_sim(dir: &Path) -> SimProcess {
    let (child, mut clusters) = start_sim_clusters(dir, 1).await;
    let one = clusters.remove(0);
    SimProcess {
        child,
        url: one.url,
        kubeconfig: one.kubeconfig,
    }
}

/// One cluster of a multi-cluster simulator.
#[derive(Debug, Clone)]
pub struct SimCluster {
    /// `cluster-000`, `cluster-001`, …
    pub name: String,
    /// Its API server (also serves `/sim/v1/push`).
    pub url: String,
    /// A kubeconfig for it.
    pub kubeconfig: PathBuf,
}

/// Starts `fleetgate-sim` with `n` clusters (no Flux objects, controllers
/// reconciling every 200 ms), writing their kubeconfigs into `dir`; waits
/// (60 s at most) for the `n` lines naming them.
pub async fn start_sim_clusters(dir: &Path, n: usize) -> (ChildGuard, Vec<SimCluster>) {
    start_sim_with(dir, n, &[]).await
}

/// Like [`start_sim_clusters`], with more `fleetgate-sim` arguments (e.g.
/// `--service-account-token`, which turns RBAC and TLS on).
pub async fn start_sim_with(dir: &Path, n: usize, extra: &[&str]) -> (ChildGuard, Vec<SimCluster>) {
    let mut child = ChildGuard(
        Command::new(bin_path("fleetgate-sim"))
            .args(["--clusters", &n.to_string(), "--objects-per-cluster", "0"])
            .args(["--reconcile-interval", "200ms"])
            .args(extra)
            .arg("--kubeconfig-dir")
            .arg(dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting fleetgate-sim"),
    );
    let stdout = child.0.stdout.take().expect("sim stdout");
    let lines = tokio::task::spawn_blocking(move || {
        let mut reader = BufReader::new(stdout);
        let mut lines = Vec::with_capacity(n);
        for _ in 0..n {
            let mut line = String::new();
            reader.read_line(&mut line)?;
            lines.push(line);
        }
        // Keep draining, so the simulator never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        Ok::<_, std::io::Error>(lines)
    });
    let lines = tokio::time::timeout(Duration::from_secs(60), lines)
        .await
        .expect("sim prints its clusters")
        .expect("reading the sim's stdout")
        .expect("reading the sim's stdout");
    let clusters = lines
        .iter()
        .map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(fields.len(), 3, "cluster url kubeconfig: {line}");
            SimCluster {
                name: fields[0].to_owned(),
                url: fields[1].to_owned(),
                kubeconfig: PathBuf::from(fields[2]),
            }
        })
        .collect();
    (child, clusters)
}

impl SimProcess {
    /// A kube-rs client for the cluster.
    pub async fn client(&self) -> kube::Client {
        kube_client_from_file(&self.kubeconfig).await
    }

    /// Creates the namespaces (those that exist already are fine).
    pub async fn create_namespaces(&self, names: &[&str]) {
        create_namespaces(&self.client().await, names).await;
    }
}

/// Creates the namespaces through `client` (those that exist already are fine).
pub async fn create_namespaces(client: &kube::Client, names: &[&str]) {
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    for ns in names {
        let obj = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}
        }))
        .expect("namespace");
        match namespaces.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => panic!("namespace {ns}: {e}"),
        }
    }
}
