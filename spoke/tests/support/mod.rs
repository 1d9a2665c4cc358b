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

// ---------- fake hub ----------

/// What the fake hub saw from the spoke.
#[derive(Default)]
pub struct Seen {
    pub hellos: Vec<pb::Hello>,
    pub authorization: Vec<String>,
}

#[derive(Clone)]
struct HubService {
    /// Added to the hub's clock in `hub_time` (simulates clock skew).
    skew: chrono::Duration,
    snapshot: watch::Receiver<Option<pb::Snapshot>>,
    reports: mpsc::UnboundedSender<pb::StatusReport>,
    seen: Arc<Mutex<Seen>>,
    hello: Arc<watch::Sender<Option<pb::Hello>>>,
    /// Bumped on every connect attempt (after `seen` is updated).
    attempts: Arc<watch::Sender<usize>>,
}

type HubStream = Pin<Box<dyn Stream<Item = Result<pb::HubMessage, Status>> + Send>>;

#[tonic::async_trait]
impl SpokeService for HubService {
    type ConnectStream = HubStream;

    async fn connect(
        &self,
        request: Request<Streaming<pb::SpokeMessage>>,
    ) -> Result<Response<HubStream>, Status> {
        let auth = request
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        self.seen.lock().await.authorization.push(auth.clone());
        self.attempts.send_modify(|n| *n += 1);
        if auth != format!("Bearer {TOKEN}") {
            return Err(Status::unauthenticated("bad token"));
        }
        let mut inbound = request.into_inner();
        let hello = match inbound.message().await? {
            Some(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Hello(h)),
            }) => h,
            _ => return Err(Status::invalid_argument("first message must be a Hello")),
        };
        self.seen.lock().await.hellos.push(hello.clone());
        self.hello.send_replace(Some(hello.clone()));
        let reports = self.reports.clone();
        tokio::spawn(async move {
            while let Ok(Some(msg)) = inbound.message().await {
                if let Some(spoke_message::Msg::Report(r)) = msg.msg {
                    let _ = reports.send(r);
                }
            }
        });
        let mut snapshot = self.snapshot.clone();
        let held = hello.revision;
        let skew = self.skew;
        let stream = async_stream_snapshots(move |tx| async move {
            loop {
                let current = snapshot.borrow_and_update().clone();
                if let Some(s) = current
                    && s.revision != held
                {
                    let mut s = s;
                    s.hub_time = Some(to_timestamp(Utc::now() + skew));
                    if tx
                        .send(Ok(pb::HubMessage {
                            msg: Some(hub_message::Msg::Snapshot(s)),
                        }))
                        .await
                        .is_err()
                    {
                        return;
                    }
                }
                if snapshot.changed().await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(stream))
    }
}

/// A stream fed by a task (keeps the fake hub free of extra dependencies).
fn async_stream_snapshots<F, Fut>(f: F) -> HubStream
where
    F: FnOnce(mpsc::Sender<Result<pb::HubMessage, Status>>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(f(tx));
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx))
}

/// A gRPC server speaking the hub's spoke protocol, driven by the test.
pub struct FakeHub {
    pub addr: SocketAddr,
    snapshot: watch::Sender<Option<pb::Snapshot>>,
    pub reports: mpsc::UnboundedReceiver<pb::StatusReport>,
    pub seen: Arc<Mutex<Seen>>,
    hello_rx: watch::Receiver<Option<pb::Hello>>,
    attempts_rx: watch::Receiver<usize>,
    shutdown: CancellationToken,
    server: tokio::task::JoinHandle<()>,
}

impl FakeHub {
    pub async fn start() -> FakeHub {
        Self::start_skewed(chrono::Duration::zero()).await
    }

    /// A hub whose clock is `skew` ahead of the machine's.
    pub async fn start_skewed(skew: chrono::Duration) -> FakeHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve(listener, skew)
    }

    /// A hub on a given address (to stand in for a restarted hub).
    pub async fn start_at(addr: SocketAddr) -> FakeHub {
        let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
        Self::serve(listener, chrono::Duration::zero())
    }

    /// A hub serving TLS with `identity` (certificate + key PEM).
    pub async fn start_tls(identity: tonic::transport::Identity) -> FakeHub {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        Self::serve_with(listener, chrono::Duration::zero(), Some(identity))
    }

    fn serve(listener: tokio::net::TcpListener, skew: chrono::Duration) -> FakeHub {
        Self::serve_with(listener, skew, None)
    }

    fn serve_with(
        listener: tokio::net::TcpListener,
        skew: chrono::Duration,
        tls: Option<tonic::transport::Identity>,
    ) -> FakeHub {
        let addr = listener.local_addr().unwrap();
        let (snapshot, snapshot_rx) = watch::channel(None);
        let (reports_tx, reports) = mpsc::unbounded_channel();
        let seen = Arc::new(Mutex::new(Seen::default()));
        let (hello, hello_rx) = watch::channel(None);
        let (attempts, attempts_rx) = watch::channel(0usize);
        let service = HubService {
            attempts: Arc::new(attempts),
            hello: Arc::new(hello),
            skew,
            snapshot: snapshot_rx,
            reports: reports_tx,
            seen: seen.clone(),
        };
        let shutdown = CancellationToken::new();
        let sd = shutdown.clone();
        let mut builder = tonic::transport::Server::builder();
        if let Some(identity) = tls {
            builder = builder
                .tls_config(tonic::transport::ServerTlsConfig::new().identity(identity))
                .expect("server TLS config");
        }
        let server = tokio::spawn(async move {
            let _ = builder
                .add_service(SpokeServiceServer::new(service))
                .serve_with_incoming_shutdown(
                    TcpListenerStream::new(listener),
                    sd.cancelled_owned(),
                )
                .await;
        });
        FakeHub {
            addr,
            snapshot,
            reports,
            seen,
            hello_rx,
            attempts_rx,
            shutdown,
            server,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Makes `snapshot` the cluster's current desired state (pushed to connected spokes).
    pub fn set(&self, snapshot: pb::Snapshot) {
        self.snapshot.send_replace(Some(snapshot));
    }

    /// Waits for a report satisfying `pred`.
    pub async fn report_where(
        &mut self,
        what: &str,
        pred: impl Fn(&pb::StatusReport) -> bool,
    ) -> pb::StatusReport {
        let fut = async {
            while let Some(r) = self.reports.recv().await {
                if pred(&r) {
                    return r;
                }
            }
            panic!("report stream ended while waiting for {what}");
        };
        tokio::time::timeout(WAIT, fut)
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for a report: {what}"))
    }

    /// Waits for a spoke's Hello.
    pub async fn wait_hello(&self) -> pb::Hello {
        let mut rx = self.hello_rx.clone();
        let hello = tokio::time::timeout(WAIT, rx.wait_for(|h| h.is_some()))
            .await
            .expect("a Hello")
            .expect("hub running");
        hello.clone().expect("checked")
    }

    /// Waits until a spoke tried to connect with `authorization`.
    pub async fn wait_authorization(&self, authorization: &str) {
        let mut rx = self.attempts_rx.clone();
        let fut = async {
            loop {
                if self
                    .seen
                    .lock()
                    .await
                    .authorization
                    .iter()
                    .any(|a| a == authorization)
                {
                    return;
                }
                rx.changed().await.expect("hub running");
            }
        };
        tokio::time::timeout(WAIT, fut)
            .await
            .unwrap_or_else(|_| panic!("no attempt with {authorization}"));
    }

    /// Stops the server and closes every stream (the hub is gone).
    pub async fn stop(self) {
        self.shutdown.cancel();
        self.snapshot.send_replace(None);
        drop(self.snapshot);
        let _ = tokio::time::timeout(WAIT, self.server).await;
    }
}

// ---------- snapshots ----------

/// A Gate manifest as JSON text.
pub fn gate_json(name: &str, mode: &str, kinds: &[&str], default: &str) -> String {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": kinds}, "mode": mode, "default": default}
    })
    .to_string()
}

pub fn gate(name: &str, mode: &str, kinds: &[&str], default: &str) -> pb::GateRule {
    pb::GateRule {
        name: name.into(),
        version: 1,
        manifest_json: gate_json(name, mode, kinds, default),
    }
}

pub fn snapshot(
    revision: u64,
    gates: Vec<pb::GateRule>,
    overrides: Vec<pb::Override>,
) -> pb::Snapshot {
    pb::Snapshot {
        revision,
        cluster: CLUSTER.into(),
        gates,
        overrides,
        hub_time: None,
    }
}

/// An override of `gate` to `state` from `starts_at` on, with no expiry.
pub fn override_from(gate: &str, state: &str, starts_at: DateTime<Utc>) -> pb::Override {
    pb::Override {
        id: format!("ov-{gate}-{state}"),
        gate: gate.into(),
        state: state.into(),
        starts_at: Some(to_timestamp(starts_at)),
        expires_at: None,
        actor: "test".into(),
        reason: "test".into(),
        created_at: Some(to_timestamp(Utc::now())),
    }
}

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
    let yaml = sim.kubeconfig_yaml(CLUSTER).expect("kubeconfig");
    let kc: kube::config::Kubeconfig = serde_yaml::from_str(&yaml).expect("kubeconfig parses");
    let config =
        kube::Config::from_custom_kubeconfig(kc, &kube::config::KubeConfigOptions::default())
            .await
            .expect("kube config");
    Client::try_from(config).expect("client")
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
    let api = api(client, kind);
    let fut = async {
        let mut stream = std::pin::pin!(watcher::watch_object(api, name).boxed());
        while let Some(ev) = stream.next().await {
            if let Ok(Some(obj)) = ev
                && pred(&obj)
            {
                return obj;
            }
        }
        panic!("watch ended while waiting for {kind} {name}: {what}");
    };
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {kind} {name}: {what}"))
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
        pred: impl Fn(&fleetgate_spoke::report::Report) -> bool,
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
