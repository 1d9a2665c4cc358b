//! Shared setup for the gRPC tests: an in-process gRPC server on a real
//! socket over the REST tests' `Hub` (real PostgreSQL), tonic clients with
//! bearer metadata, a test spoke that speaks the stream protocol, and a
//! whole replica (REST and gRPC) with its event streams ([`served::Served`]).
#![allow(dead_code)]

pub mod served;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use fleetgate_hub::Service;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::grpc::GrpcOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1::{self as pb, hub_message, spoke_message};
use fleetgate_proto::{AdminServiceClient, SpokeServiceClient};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Status, Streaming};

/// Upper bound of every wait: a hang fails the test instead of blocking it.
pub const WAIT: Duration = Duration::from_secs(30);

/// Awaits `f` or panics after [`WAIT`] naming `what`.
pub async fn within<T>(what: &str, f: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// A gRPC server of the hub running in this process.
pub struct Grpc {
    pub addr: SocketAddr,
    pub channel: Channel,
    pub shutdown: CancellationToken,
    /// The replica's gRPC-side counters (reports received, stream ends).
    pub metrics: fleetgate_hub::metrics::GrpcMetrics,
    task: Option<tokio::task::JoinHandle<fleetgate_hub::Result<()>>>,
}

impl Grpc {
    /// Serves gRPC for `service` on an ephemeral loopback port.
    pub async fn start(service: Service, opts: GrpcOptions) -> Self {
        // gRPC alone (no HTTP), on a replica built as every hub is.
        Self::start_replica(Replica::new(service, HttpOptions::default(), opts)).await
    }

    /// Serves gRPC for `replica` (e.g. one with notification settings).
    pub async fn start_replica(replica: Replica) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let shutdown = CancellationToken::new();
        let metrics = replica.grpc_metrics.clone();
        let stop = shutdown.clone();
        let task = tokio::spawn(async move {
            let serving = fleetgate_hub::grpc::serve_replica(&replica, listener, stop);
            replica.run(serving).await
        });
        let channel = connect(&format!("http://{addr}")).await;
        Self {
            addr,
            channel,
            shutdown,
            metrics,
            task: Some(task),
        }
    }

    /// Default options with a short keepalive (so "no snapshot" is observable
    /// as "a keepalive came first").
    pub fn opts() -> GrpcOptions {
        GrpcOptions {
            replica_id: Some("test-replica".into()),
            spoke_keepalive: Duration::from_millis(300),
            report_flush_ms: 20,
            ..GrpcOptions::default()
        }
    }

    pub fn spoke_client(&self) -> SpokeServiceClient<Channel> {
        SpokeServiceClient::new(self.channel.clone())
    }

    pub fn admin(&self) -> AdminServiceClient<Channel> {
        AdminServiceClient::new(self.channel.clone())
    }

    /// Drains and waits for the server to stop.
    pub async fn stop(mut self) {
        self.shutdown.cancel();
        if let Some(task) = self.task.take() {
            within("gRPC server to stop", task).await.unwrap().unwrap();
        }
    }
}

impl Drop for Grpc {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A lazily connecting channel to `url`.
pub async fn connect(url: &str) -> Channel {
    Endpoint::from_shared(url.to_string())
        .unwrap()
        .connect_timeout(Duration::from_secs(5))
        .connect_lazy()
}

/// `msg` with `authorization: Bearer <token>`.
pub fn authed<T>(msg: T, token: &str) -> Request<T> {
    let mut req = Request::new(msg);
    req.metadata_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    req
}

/// A test spoke: one open `Connect` stream.
pub struct TestSpoke {
    tx: mpsc::Sender<pb::SpokeMessage>,
    rx: Streaming<pb::HubMessage>,
}

impl TestSpoke {
    /// Opens a stream with `token` and sends a Hello for `cluster` holding
    /// `revision`. Errors of the handshake show up on the first `next`.
    pub async fn connect(
        channel: Channel,
        token: &str,
        cluster: &str,
        revision: u64,
    ) -> Result<Self, Status> {
        let (tx, rx) = mpsc::channel(16);
        tx.send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Hello(pb::Hello {
                local_gates_enforced: Default::default(),
                cluster: cluster.into(),
                spoke_version: "test-0.1.0".into(),
                revision,
                ..Default::default()
            })),
        })
        .await
        .unwrap();
        let mut client = SpokeServiceClient::new(channel);
        let resp = within(
            "Connect response",
            client.connect(authed(ReceiverStream::new(rx), token)),
        )
        .await?;
        Ok(Self {
            tx,
            rx: resp.into_inner(),
        })
    }

    /// The next message: Ok(None) when the hub ended the stream cleanly.
    pub async fn next(&mut self) -> Result<Option<pb::HubMessage>, Status> {
        within("a hub message", self.rx.message()).await
    }

    /// Reads until the hub ends the stream; panics on an error status.
    pub async fn clean_end(&mut self, what: &str) {
        within(what, async {
            loop {
                match self.rx.message().await {
                    Ok(Some(_)) => continue,
                    Ok(None) => break,
                    Err(s) => panic!("expected a clean end of stream, got {s:?}"),
                }
            }
        })
        .await;
    }

    /// The next snapshot, skipping keepalives.
    pub async fn snapshot(&mut self) -> pb::Snapshot {
        // Bounded as a whole: keepalives keep arriving while nothing else does.
        within("a snapshot", async {
            loop {
                match self.rx.message().await {
                    Ok(Some(pb::HubMessage {
                        msg: Some(hub_message::Msg::Snapshot(s)),
                    })) => return s,
                    Ok(Some(_)) => continue,
                    other => panic!("expected a snapshot, got {other:?}"),
                }
            }
        })
        .await
    }

    /// The first message must be a keepalive (no snapshot was due).
    pub async fn expect_keepalive(&mut self) -> pb::Keepalive {
        match self.next().await {
            Ok(Some(pb::HubMessage {
                msg: Some(hub_message::Msg::Keepalive(k)),
            })) => k,
            other => panic!("expected a keepalive, got {other:?}"),
        }
    }

    /// The status that ends the stream (skipping other messages).
    pub async fn error(&mut self) -> Status {
        within("the stream to fail", async {
            loop {
                match self.rx.message().await {
                    Ok(Some(_)) => continue,
                    Ok(None) => panic!("stream ended cleanly, expected an error"),
                    Err(s) => return s,
                }
            }
        })
        .await
    }

    /// Sends a status report.
    pub async fn report(&self, revision: u64, objects: Vec<pb::ObjectStatus>) {
        self.report_part(revision, objects, 42, false).await;
    }

    /// Sends one part of a status report (`more`: further parts follow).
    pub async fn report_part(
        &self,
        revision: u64,
        objects: Vec<pb::ObjectStatus>,
        clock_offset_ms: i64,
        more: bool,
    ) {
        self.tx
            .send(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Report(pb::StatusReport {
                    local_gates: Default::default(),
                    inventory: Default::default(),
                    has_inventory: false,
                    snapshot_persistence: None,
                    revision,
                    objects,
                    clock_offset_ms,
                    observed_at: None,
                    more,
                    held_objects: vec![],
                })),
            })
            .await
            .unwrap();
    }

    /// Ends the request stream, as a spoke shutting down does.
    pub fn close(&mut self) {
        let (tx, _) = tokio::sync::mpsc::channel(1);
        self.tx = tx;
    }

    /// Sends a whole status report (fields not given: `..Default::default()`).
    pub async fn send_report(&self, report: pb::StatusReport) {
        self.send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Report(report)),
        })
        .await;
    }

    /// Sends any message.
    pub async fn send(&self, msg: pb::SpokeMessage) {
        self.tx.send(msg).await.unwrap();
    }
}

/// A governed Kustomization as a spoke reports it.
pub fn kustomization(ns: &str, name: &str, held: bool, gates: &[&str]) -> pb::ObjectStatus {
    pb::ObjectStatus {
        kind: "Kustomization".into(),
        namespace: ns.into(),
        name: name.into(),
        suspended: held,
        suspended_by: if held {
            gates.iter().map(|g| g.to_string()).collect()
        } else {
            vec![]
        },
        gates: gates.iter().map(|g| g.to_string()).collect(),
        last_applied_revision: "main@sha1:aaa".into(),
        newest_source_revision: if held {
            "main@sha1:bbb".into()
        } else {
            "main@sha1:aaa".into()
        },
        held,
        suspended_by_human: false,
        ignored: false,
        ready: "True".into(),
        ready_reason: "ReconciliationSucceeded".into(),
        ready_message: "Applied revision: main@sha1:aaa".into(),
        stalled: false,
        generation: 1,
        observed_generation: 1,
        would_suspend_by: vec![],
        would_hold: false,
        last_attempted_revision: "main@sha1:aaa".into(),
    }
}

/// The audit entries of `target_kind` that `ListAudit` shows `token`, newest first.
pub async fn audit_entries(
    admin: &mut AdminServiceClient<Channel>,
    target_kind: &str,
    token: &str,
) -> Vec<pb::AuditEntry> {
    let req = pb::ListAuditRequest {
        target_kind: target_kind.into(),
        ..Default::default()
    };
    within("ListAudit", admin.list_audit(authed(req, token)))
        .await
        .unwrap()
        .into_inner()
        .entries
}

/// Gate names in a snapshot.
pub fn gate_names(s: &pb::Snapshot) -> Vec<String> {
    s.gates.iter().map(|g| g.name.clone()).collect()
}
