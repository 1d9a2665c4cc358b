//! Shared pieces of the spoke's integration tests: a fake hub (a real tonic
//! server on a real socket), the simulator with a kube client, Flux object
//! builders, and bounded waits on object changes (never sleeps).
#![allow(dead_code)]

use std::{net::SocketAddr, pin::Pin, sync::Arc, time::Duration};

use chrono::{DateTime, Utc};
use fleetgate_proto::{
    SpokeService, SpokeServiceServer,
    time::to_timestamp,
    v1::{self as pb, hub_message, spoke_message},
};
use fleetgate_sim::{Sim, SimConfig};
use fleetgate_spoke::{Config, Spoke};
use futures::{Stream, StreamExt};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
    runtime::{WatchStreamExt, watcher},
};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc, watch};
use tokio_stream::wrappers::TcpListenerStream;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

pub const CLUSTER: &str = "c1";
pub const NS: &str = "flux-system";
pub const SPOKE_NS: &str = "fleetgate-system";
pub const TOKEN: &str = "fgs_test-token";
/// Upper bound for every wait; a hang fails the test instead of blocking CI.
pub const WAIT: Duration = Duration::from_secs(30);

mod fake_hub;
mod gates;
mod largest;
mod rbac;
#[allow(unused_imports)]
pub use gates::*;
// Like the dead_code allow above: not every test binary uses the fake hub.
#[allow(unused_imports)]
pub use fake_hub::*;
#[allow(unused_imports)]
pub use largest::*;
#[allow(unused_imports)]
pub use rbac::*;

// ---------- simulator and objects ----------

pub struct Cluster {
    pub sim: Sim,
    pub client: Client,
}

pub async fn start_cluster() -> Cluster {
    let sim = Sim::start(SimConfig {
        clusters: vec![CLUSTER.into()],
        reconcile_interval: Some(Duration::from_millis(200)),
        ..SimConfig::default()
    })
    .await
    .expect("simulator starts");
    let client = client_for(&sim).await;
    for ns in [NS, SPOKE_NS] {
        ensure_namespace(&client, ns).await;
    }
    Cluster { sim, client }
}

pub async fn client_for(sim: &Sim) -> Client {
    fleetgate_tests::kube_client(&sim.kubeconfig_yaml(CLUSTER).expect("kubeconfig")).await
}

async fn ensure_namespace(client: &Client, ns: &str) {
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let obj = serde_json::from_value(
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )
    .unwrap();
    match api.create(&PostParams::default(), &obj).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.code == 409 => {}
        Err(e) => panic!("create namespace {ns}: {e}"),
    }
}

pub fn resource(kind: &str) -> ApiResource {
    let (group, version) = match kind {
        "Kustomization" => ("kustomize.toolkit.fluxcd.io", "v1"),
        "HelmRelease" => ("helm.toolkit.fluxcd.io", "v2"),
        "ImageUpdateAutomation" => ("image.toolkit.fluxcd.io", "v1"),
        _ => ("source.toolkit.fluxcd.io", "v1"),
    };
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

pub fn api(client: &Client, kind: &str) -> Api<DynamicObject> {
    Api::namespaced_with(client.clone(), NS, &resource(kind))
}

pub fn git_repository(name: &str) -> Value {
    json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"interval": "1m", "url": format!("https://example.com/{name}.git"), "ref": {"branch": "main"}}
    })
}

pub fn kustomization(name: &str, source: &str, suspend: bool) -> Value {
    json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"interval": "1m", "path": "./", "prune": true, "suspend": suspend,
                 "sourceRef": {"kind": "GitRepository", "name": source}}
    })
}

pub fn helm_repository(name: &str) -> Value {
    json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmRepository",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"interval": "1m", "url": format!("https://charts.example.com/{name}")}
    })
}

pub fn helm_release(name: &str, repo: &str) -> Value {
    json!({
        "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"interval": "1m", "chart": {"spec": {"chart": name, "sourceRef": {"kind": "HelmRepository", "name": repo}}}}
    })
}

pub async fn create(cluster: &Cluster, obj: Value) {
    cluster
        .sim
        .create_object(CLUSTER, obj)
        .await
        .expect("create object");
}

pub fn revision(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

pub async fn push(cluster: &Cluster, repo: &str, rev: &str) {
    push_kind(cluster, "GitRepository", repo, rev).await;
}

pub async fn push_kind(cluster: &Cluster, kind: &str, name: &str, rev: &str) {
    cluster
        .sim
        .push_revision(CLUSTER, kind, NS, name, rev)
        .await
        .expect("push");
}

/// Waits for an events.k8s.io Event with `reason` regarding object `name`.
pub async fn wait_event(
    client: &Client,
    reason: &str,
    name: &str,
) -> k8s_openapi::api::events::v1::Event {
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), NS);
    let fut = async {
        let mut stream =
            std::pin::pin!(watcher(events, watcher::Config::default()).applied_objects());
        while let Some(ev) = stream.next().await {
            if let Ok(e) = ev
                && e.reason.as_deref() == Some(reason)
                && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name)
            {
                return e;
            }
        }
        panic!("event watch ended waiting for {reason} on {name}");
    };
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for event {reason} on {name}"))
}

/// Pushes revision `n` to GitRepository `repo` and waits until Kustomization
/// `ks` applied it.
pub async fn push_and_wait_applied(cluster: &Cluster, ks: &str, n: u32) {
    push(cluster, "repo", &revision(n)).await;
    let want = revision(n);
    wait_for(
        &cluster.client,
        "Kustomization",
        ks,
        "revision applied",
        |o| status_str(o, "/status/lastAppliedRevision") == Some(want.as_str()),
    )
    .await;
}

/// Waits until object `kind/name` satisfies `pred` (watch, bounded).
pub async fn wait_for(
    client: &Client,
    kind: &str,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let what = format!("{kind}: {what}");
    fleetgate_tests::watch_until(api(client, kind), name, &what, WAIT, pred).await
}

pub fn suspended(o: &DynamicObject) -> bool {
    o.data
        .pointer("/spec/suspend")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

pub fn annotation<'a>(o: &'a DynamicObject, key: &str) -> Option<&'a str> {
    o.metadata
        .annotations
        .as_ref()?
        .get(key)
        .map(String::as_str)
}

pub fn status_str<'a>(o: &'a DynamicObject, pointer: &str) -> Option<&'a str> {
    o.data.pointer(pointer).and_then(Value::as_str)
}

/// `flux suspend` / `flux resume` as a person does it: only spec.suspend.
pub async fn set_suspend_by_hand(client: &Client, kind: &str, name: &str, suspend: bool) {
    api(client, kind)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": suspend}})),
        )
        .await
        .expect("manual suspend/resume");
}

// ---------- the spoke ----------

pub fn spoke_config(hub_url: Option<String>) -> Config {
    let mut c = Config::for_cluster(CLUSTER).unwrap();
    c.hub_url = hub_url;
    c.token = Some(TOKEN.into());
    c.token_file = None;
    c.hub_ca = None;
    c.kubeconfig = None;
    c.namespace = SPOKE_NS.into();
    c.http_addr = "127.0.0.1:0".parse().unwrap();
    c.report_debounce = Duration::from_millis(100);
    c.heartbeat_interval = Duration::from_secs(30);
    c.reconnect_min = Duration::from_millis(50);
    c.reconnect_max = Duration::from_millis(500);
    c
}

pub struct RunningSpoke {
    pub spoke: Option<Spoke>,
    pub shutdown: CancellationToken,
}

impl RunningSpoke {
    pub async fn start(cluster: &Cluster, config: Config) -> RunningSpoke {
        let shutdown = CancellationToken::new();
        let client = client_for(&cluster.sim).await;
        let spoke = Spoke::start(client, config, shutdown.clone())
            .await
            .expect("spoke starts");
        RunningSpoke {
            spoke: Some(spoke),
            shutdown,
        }
    }

    pub fn ctx(&self) -> &Arc<fleetgate_spoke::Context> {
        &self.spoke.as_ref().expect("running").ctx
    }

    /// Waits until the spoke's watches synced and its first pass ran (the
    /// first report is published at the end of that pass).
    pub async fn wait_ready(&self) {
        let mut rx = self.ctx().report.subscribe();
        tokio::time::timeout(WAIT, rx.wait_for(|r| r.is_some()))
            .await
            .expect("spoke ready")
            .expect("spoke running");
    }

    /// Waits until the spoke's latest report satisfies `pred`.
    pub async fn report_where(
        &self,
        what: &str,
        pred: impl Fn(&fleetgate_spoke::hub::report::Report) -> bool,
    ) {
        let mut rx = self.ctx().report.subscribe();
        tokio::time::timeout(WAIT, rx.wait_for(|r| r.as_deref().is_some_and(&pred)))
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for the spoke's report: {what}"))
            .expect("spoke running");
    }

    pub fn http_addr(&self) -> SocketAddr {
        self.spoke.as_ref().expect("running").http_addr
    }

    pub async fn stop(mut self) {
        if let Some(s) = self.spoke.take() {
            tokio::time::timeout(WAIT, s.stop())
                .await
                .expect("spoke stops");
        }
    }
}

impl Drop for RunningSpoke {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}
