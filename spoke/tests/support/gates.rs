//! Gate objects in the spoke's tests: the real kubectl against the simulated
//! cluster, waits on a Gate's status and on its Events (bounded watches).

use std::{path::PathBuf, process::Stdio};

use futures::StreamExt;
use k8s_openapi::api::events::v1::Event;
use kube::{
    Api, Client,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher},
};
use serde_json::Value;

use super::{CLUSTER, Cluster, WAIT};

/// The Gate objects' API.
pub fn gates(client: &Client) -> Api<DynamicObject> {
    Api::all_with(client.clone(), &fleetgate_spoke::gates::resource())
}

/// The `Opened` condition's status and reason.
pub fn opened(o: &DynamicObject) -> Option<(String, String)> {
    let c = o.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Opened")?;
    Some((
        c["status"].as_str()?.to_owned(),
        c["reason"].as_str()?.to_owned(),
    ))
}

/// A condition's field, e.g. `condition(o, "Ready", "message")`.
pub fn condition<'a>(o: &'a DynamicObject, type_: &str, field: &str) -> Option<&'a str> {
    o.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)?[field]
        .as_str()
}

/// Waits until Gate `name` satisfies `pred`.
pub async fn wait_gate(
    client: &Client,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let what = format!("gate: {what}");
    fleetgate_tests::watch_until(gates(client), name, &what, WAIT, pred).await
}

/// Waits for an Event with `reason` about Gate `name` (cluster-scoped objects'
/// Events live in `default`) whose note contains `needle`.
pub async fn wait_gate_event(client: &Client, reason: &str, name: &str, needle: &str) -> Event {
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let fut = async {
        let mut stream =
            std::pin::pin!(watcher(events, watcher::Config::default()).applied_objects());
        while let Some(ev) = stream.next().await {
            if let Ok(e) = ev
                && e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
                && e.note.as_deref().unwrap_or_default().contains(needle)
            {
                return e;
            }
        }
        panic!("event watch ended waiting for {reason} on gate {name}");
    };
    tokio::time::timeout(WAIT, fut).await.unwrap_or_else(|_| {
        panic!("timed out waiting for event {reason} ({needle}) on gate {name}")
    })
}

/// The real kubectl with its own HOME, pointed at the simulated cluster.
pub struct Kubectl {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
}

pub struct Output {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

impl Kubectl {
    pub fn new(cluster: &Cluster) -> Kubectl {
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = dir.path().join("kubeconfig");
        cluster
            .sim
            .write_kubeconfig(CLUSTER, &kubeconfig)
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
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        cmd
    }

    pub async fn run_stdin(&self, args: &[&str], stdin: &str) -> Output {
        use tokio::io::AsyncWriteExt;
        let mut child = self.command(args).spawn().expect("kubectl runs");
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(stdin.as_bytes())
            .await
            .expect("stdin written");
        drop(pipe);
        let out = tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("kubectl finished")
            .expect("kubectl output");
        Output {
            ok: out.status.success(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub async fn run(&self, args: &[&str]) -> Output {
        self.run_stdin(args, "").await
    }

    /// Runs and asserts success; returns stdout.
    pub async fn ok(&self, args: &[&str]) -> String {
        let out = self.run(args).await;
        assert!(out.ok, "kubectl {args:?}: {}", out.stderr);
        out.stdout
    }

    /// `kubectl apply -f -` of a YAML document.
    pub async fn apply(&self, yaml: &str) {
        let out = self.run_stdin(&["apply", "-f", "-"], yaml).await;
        assert!(out.ok, "kubectl apply: {}", out.stderr);
    }
}

/// The JSON of a Gate object's spec field, for assertions.
pub fn spec_of(o: &DynamicObject) -> &Value {
    &o.data["spec"]
}
