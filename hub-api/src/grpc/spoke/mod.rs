//! `SpokeService.Connect`: one long-lived stream per spoke. The token (metadata)
//! names the cluster; the first message must be a Hello for that cluster. The
//! stream then sends the snapshot whenever its content changes (read from the
//! cluster's `watch` in the fan-out index), keepalives, and hands reports to
//! the replica's report ingestion. Each stream is a [`session::Session`].

mod session;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fleetgate_proto::v1 as pb;
use futures::Stream;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use super::auth::bearer;
use super::convert::to_status;
use crate::fanout::Fanout;
use crate::metrics::GrpcMetrics;
use crate::options::GrpcOptions;
use crate::replica::Replica;
use crate::service::Service;
use crate::service::reports::Reports;
use crate::service::spoke_auth::SpokeAuth;

/// Tunables of spoke streams.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// This replica's id, recorded as `clusters.connected_replica`.
    pub replica: String,
    /// Interval between keepalives.
    pub keepalive: Duration,
    /// A stream ends cleanly (status OK) after this age ±10 %, so spokes
    /// reconnect and spread over replicas (e.g. after a scale-out).
    pub max_stream_age: Duration,
    /// How long the hub waits for the Hello.
    pub hello_timeout: Duration,
    /// `--local-gates enforce`: snapshots tell spokes to enforce Gate objects
    /// made in their cluster beside the hub's gates.
    pub local_gates_enforced: bool,
}

/// How long the hub waits for the Hello.
const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

impl StreamConfig {
    /// The stream settings of replica `replica` from its gRPC options.
    pub fn new(replica: &str, opts: &GrpcOptions) -> Self {
        Self {
            replica: replica.to_string(),
            keepalive: opts.spoke_keepalive,
            max_stream_age: opts.spoke_stream_max_age,
            hello_timeout: HELLO_TIMEOUT,
            local_gates_enforced: opts.local_gates == crate::options::LocalGates::Enforce,
        }
    }
}

/// The spoke service of one replica.
#[derive(Clone)]
pub struct SpokeApi {
    inner: Arc<Inner>,
}

/// What every stream of the replica shares.
struct Inner {
    service: Service,
    fanout: Fanout,
    reports: Arc<Reports>,
    cfg: StreamConfig,
    shutdown: CancellationToken,
    metrics: GrpcMetrics,
    /// Token checks of connecting spokes, batched.
    auth: SpokeAuth,
    /// Streams subscribed now.
    live: AtomicUsize,
    /// Woken when `live` drops to zero.
    none_live: Notify,
}

impl SpokeApi {
    /// The spoke service of `replica`; streams end when `shutdown` is
    /// cancelled (drain).
    pub fn new(replica: &Replica, shutdown: CancellationToken) -> Self {
        Self {
            inner: Arc::new(Inner {
                service: replica.service.clone(),
                fanout: replica.fanout.clone(),
                reports: replica.reports.clone(),
                cfg: StreamConfig::new(replica.id(), &replica.grpc),
                shutdown,
                metrics: replica.grpc_metrics.clone(),
                auth: SpokeAuth::new(replica.service.clone()),
                live: AtomicUsize::new(0),
                none_live: Notify::new(),
            }),
        }
    }

    /// Resolves once no stream of this service is open (at once if none is).
    /// The drain waits for this, not for every connection to close.
    pub async fn streams_ended(&self) {
        loop {
            let notified = self.inner.none_live.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.inner.live.load(Ordering::Acquire) == 0 {
                return;
            }
            notified.await;
        }
    }
}

type HubStream = Pin<Box<dyn Stream<Item = Result<pb::HubMessage, Status>> + Send>>;

#[tonic::async_trait]
impl pb::spoke_service_server::SpokeService for SpokeApi {
    type ConnectStream = HubStream;

    async fn connect(
        &self,
        req: Request<Streaming<pb::SpokeMessage>>,
    ) -> Result<Response<HubStream>, Status> {
        let token = bearer(&req)?;
        let cluster = self
            .inner
            .auth
            .authenticate(&token)
            .await
            .map_err(to_status)?
            .name;
        let inbound = req.into_inner();
        let stream = session::stream(self.inner.clone(), cluster, token, inbound);
        Ok(Response::new(Box::pin(Observed {
            inner: Box::pin(stream),
            metrics: self.inner.metrics.clone(),
            done: false,
        })))
    }
}

/// Records how a stream ended (`stream_ends{reason}`): its error status,
/// `ok` for a clean end (drain, max age, client closed), `dropped` when the
/// client went away mid-stream.
struct Observed {
    inner: HubStream,
    metrics: GrpcMetrics,
    done: bool,
}

impl Stream for Observed {
    type Item = Result<pb::HubMessage, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.inner.as_mut().poll_next(cx);
        if let std::task::Poll::Ready(item) = &polled
            && !self.done
        {
            match item {
                Some(Ok(_)) => {}
                Some(Err(status)) => {
                    self.done = true;
                    self.metrics.stream_ended(&end_reason(status.code()));
                }
                None => {
                    self.done = true;
                    self.metrics.stream_ended("ok");
                }
            }
        }
        polled
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if !self.done {
            self.metrics.stream_ended("dropped");
        }
    }
}

/// `PermissionDenied` → `permission_denied`.
fn end_reason(code: tonic::Code) -> String {
    let mut out = String::new();
    for (i, c) in format!("{code:?}").chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}
