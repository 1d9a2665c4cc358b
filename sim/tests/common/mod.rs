//! Shared helpers for the simulator's integration tests: start a simulated cluster,
//! build a kube-rs client for it, run the real kubectl against it, wait for conditions.
#![allow(dead_code)]

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use fleetgate_sim::{Sim, SimConfig};
use kube::Client;
use serde_json::Value;

pub const CLUSTER: &str = "cluster-000";

pub async fn start(config: SimConfig) -> Sim {
    Sim::start(config).await.expect("simulator starts")
}

pub async fn start_default() -> Sim {
    start(SimConfig {
        reconcile_interval: Some(Duration::from_millis(100)),
        ..SimConfig::with_clusters(1)
    })
    .await
}

pub async fn client(sim: &Sim) -> Client {
    fleetgate_tests::kube_client(&sim.kubeconfig_yaml(CLUSTER).expect("kubeconfig")).await
}

/// Polls `f` until it returns Some, failing after 10 s.
pub async fn eventually<T, F, Fut>(what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn get(sim: &Sim, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    sim.get_object(CLUSTER, api_version, kind, ns, name)
}

/// A kubectl with a fresh HOME and cache dir, pointed at the simulated cluster.
pub struct Kubectl {
    pub dir: tempfile::TempDir,
    pub kubeconfig: PathBuf,
}

pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Output {
    /// Asserts the command failed with `needle` in its stderr.
    pub fn assert_fails_with(&self, needle: &str) {
        assert!(!self.ok, "expected failure, got: {}", self.stdout);
        assert!(
            self.stderr.contains(needle),
            "{needle:?} not in: {}",
            self.stderr
        );
    }
}

impl Kubectl {
    pub fn new(sim: &Sim) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        sim.write_kubeconfig(CLUSTER, &kubeconfig)
            .expect("kubeconfig written");
        Kubectl { dir, kubeconfig }
    }

    pub fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new("kubectl");
        cmd.env_clear()
            .env("HOME", self.dir.path())
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(self.dir.path().join("cache"))
            .args(args)
            .kill_on_drop(true);
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        self.run_stdin(args, None).await
    }

    pub async fn run_stdin(&self, args: &[&str], stdin: Option<&str>) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut cmd = self.command(args);
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn().expect("kubectl runs");
        let mut pipe = child.stdin.take().expect("stdin");
        if let Some(input) = stdin {
            pipe.write_all(input.as_bytes())
                .await
                .expect("stdin written");
        }
        drop(pipe);
        let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("kubectl finished within 60 s")
            .expect("kubectl output");
        Output {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Runs and asserts success, returning stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(out.ok, "kubectl {args:?} failed: {}", out.stderr);
        out.stdout
    }
}
