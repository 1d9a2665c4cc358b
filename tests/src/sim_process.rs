//! `fleetgate-sim` as a real process for end-to-end tests: one simulated
//! cluster (no seeded objects, Flux reconciling every 200 ms), its kubeconfig
//! file, a client and the namespaces a spoke needs.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use kube::Api;
use kube::api::PostParams;

use crate::{ChildGuard, bin_path, kube_client::kube_client_from_file};

/// Namespaces created in the cluster: Flux's and the spoke's.
pub const NAMESPACES: [&str; 2] = ["flux-system", "fleetgate-system"];

/// A running simulator with one cluster.
pub struct SimProcess {
    pub child: ChildGuard,
    /// The cluster's API server URL (also the simulator's push endpoint).
    pub url: String,
    /// The cluster's kubeconfig file (for kubectl and the spoke).
    pub kubeconfig: PathBuf,
    pub client: kube::Client,
    _dir: tempfile::TempDir,
}

impl SimProcess {
    /// Starts the simulator and waits (60 s at most) until it printed its
    /// cluster line `name url kubeconfig`.
    pub async fn start() -> SimProcess {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut child = ChildGuard(
            Command::new(bin_path("fleetgate-sim"))
                .args(["--clusters", "1", "--objects-per-cluster", "0"])
                .args(["--reconcile-interval", "200ms"])
                .arg("--kubeconfig-dir")
                .arg(dir.path())
                .env("RUST_LOG", "warn")
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("starting fleetgate-sim"),
        );
        let stdout = child.0.stdout.take().expect("sim stdout");
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            BufReader::new(stdout).read_line(&mut line).map(|_| line)
        });
        let line = tokio::time::timeout(Duration::from_secs(60), line)
            .await
            .expect("sim prints its clusters")
            .expect("reading sim stdout")
            .expect("sim stdout line");
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields.len(), 3, "cluster url kubeconfig: {line}");
        let (url, kubeconfig) = (fields[1].to_owned(), PathBuf::from(fields[2]));
        let client = kube_client_from_file(&kubeconfig).await;
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        for ns in NAMESPACES {
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
        SimProcess {
            child,
            url,
            kubeconfig,
            client,
            _dir: dir,
        }
    }
}
