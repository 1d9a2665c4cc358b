//! The fake hub: a real tonic `SpokeService` on a real socket that serves
//! snapshots the test sets, records what the spoke says, and collects reports;
//! plus builders for gate rules, snapshots and overrides.

use super::*;

/// What the fake hub saw from the spoke.
#[derive(Default)]
pub struct Seen {
    pub hellos: Vec<pb::Hello>,
    pub authorization: Vec<String>,
    /// The `more` flag of every report message received, in order.
    pub report_parts: Vec<bool>,
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
        let seen = self.seen.clone();
        tokio::spawn(async move {
            // Reports come in parts (`more`); tests see each whole report,
            // as the hub applies it.
            let (mut objects, mut inventory) = (Vec::new(), Vec::new());
            while let Ok(Some(msg)) = inbound.message().await {
                if let Some(spoke_message::Msg::Report(mut r)) = msg.msg {
                    seen.lock().await.report_parts.push(r.more);
                    objects.append(&mut r.objects);
                    inventory.append(&mut r.inventory);
                    if !r.more {
                        r.objects = std::mem::take(&mut objects);
                        r.inventory = std::mem::take(&mut inventory);
                        let _ = reports.send(r);
                    }
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
            let _ =
                builder
                    .add_service(SpokeServiceServer::new(service).max_encoding_message_size(
                        fleetgate_policy::budgets::GRPC_MAX_MESSAGE_BYTES,
                    ))
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
        release: None,
        waiting: None,
        opening_fence: None,
        calendars: vec![],
    }
}

/// A gate of `mode` over the Kustomizations named `names`.
pub fn gate_named(name: &str, mode: &str, names: &[&str], default: &str) -> pb::GateRule {
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"], "names": names}, "mode": mode, "default": default}
    });
    pb::GateRule {
        name: name.into(),
        version: 1,
        manifest_json: manifest.to_string(),
        release: None,
        waiting: None,
        opening_fence: None,
        calendars: vec![],
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
        local_gates_enforced: false,
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
