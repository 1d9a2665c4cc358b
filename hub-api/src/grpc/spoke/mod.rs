//! `SpokeService.Connect`: one long-lived stream per spoke. The token (metadata)
//! names the cluster; the first message must be a Hello for that cluster. The
//! stream then sends the snapshot whenever its content changes (read from the
//! cluster's `watch` in the fan-out index), keepalives, and hands reports to
//! the replica's report ingestion. Each stream is a [`session::Session`].

mod inbound;
mod inner;
mod session;
mod stream;

pub use inner::StreamConfig;

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fleetgate_proto::v1 as pb;
use futures::Stream;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use inner::Inner;

use super::auth::bearer;
use super::convert::to_status;
use crate::auth::hash_token;
use crate::identity::token::looks_like_jwt;
use crate::replica::Replica;
use crate::service::clusters::spoke_auth::SpokeAuth;

/// The metadata a spoke names its cluster in (needed with a JWT credential).
pub const CLUSTER_METADATA: &str = "fleetgate-cluster";

/// The spoke service of one replica.
#[derive(Clone)]
pub struct SpokeApi {
    inner: Arc<Inner>,
}

impl SpokeApi {
    /// The spoke service of `replica`; streams end when `shutdown` is
    /// cancelled (drain).
    ///
    /// Spawns the task that wakes every stream when `shutdown` is cancelled: streams
    /// do not wait on it each (a future per stream), they check it whenever woken.
    pub fn new(replica: &Replica, shutdown: CancellationToken) -> Self {
        let fanout = replica.fanout.clone();
        let drain = shutdown.clone();
        tokio::spawn(async move {
            drain.cancelled().await;
            fanout.wake_all();
        });
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
        // A draining replica takes no new stream (a spoke may still open one on a
        // connection that has not seen the GOAWAY yet): it would end at once, and
        // its reports would reach a batcher that has stopped.
        if self.inner.shutdown.is_cancelled() {
            return Err(Status::unavailable("hub replica draining: reconnect"));
        }
        let token = bearer(&req)?;
        let (cluster, credential) = if looks_like_jwt(&token) {
            // The cluster's own JWT names no cluster of ours: the spoke says which one it
            // is, and the JWT must be what that cluster was registered with.
            let cluster = req
                .metadata()
                .get(CLUSTER_METADATA)
                .and_then(|v| v.to_str().ok())
                .filter(|v| !v.is_empty())
                .ok_or_else(|| {
                    Status::unauthenticated(format!(
                        "a JWT credential needs the {CLUSTER_METADATA} metadata naming the cluster"
                    ))
                })?
                .to_string();
            let signed = self
                .inner
                .auth
                .authenticate_jwt(&cluster, &token)
                .await
                .map_err(to_status)?;
            let credential = session::Credential::Jwt {
                expires: signed.expires,
                registration: signed.registration,
            };
            (cluster, credential)
        } else {
            // A replica's warm start knows every cluster's token hash until a change
            // notification names the cluster (`Fanout::warm_up`).
            let cluster = match self.inner.fanout.warm_cluster_of(&hash_token(&token)) {
                Some(cluster) => cluster,
                None => {
                    self.inner
                        .auth
                        .authenticate(&token)
                        .await
                        .map_err(to_status)?
                        .name
                }
            };
            (cluster, session::Credential::Token(token))
        };
        let inbound = req.into_inner();
        let stream = stream::stream(self.inner.clone(), cluster, credential, inbound);
        Ok(Response::new(Box::pin(Observed {
            inner: stream,
            shared: self.inner.clone(),
            done: false,
        })))
    }
}

/// Records how a stream ended (`stream_ends{reason}`): its error status,
/// `ok` for a clean end (drain, max age, client closed), `dropped` when the
/// client went away mid-stream.
struct Observed<S> {
    inner: S,
    /// The replica's shared stream state, for its metrics: one pointer per stream, where a
    /// clone of the metrics' handles was ~300 B per connected spoke.
    shared: Arc<Inner>,
    done: bool,
}

impl<S: Stream<Item = Result<pb::HubMessage, Status>> + Unpin> Stream for Observed<S> {
    type Item = Result<pb::HubMessage, Status>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = Pin::new(&mut self.inner).poll_next(cx);
        if let std::task::Poll::Ready(item) = &polled
            && !self.done
        {
            match item {
                Some(Ok(_)) => {}
                Some(Err(status)) => {
                    self.done = true;
                    self.shared.metrics.stream_ended(&end_reason(status.code()));
                }
                None => {
                    self.done = true;
                    self.shared.metrics.stream_ended("ok");
                }
            }
        }
        polled
    }
}

impl<S> Drop for Observed<S> {
    fn drop(&mut self) {
        if !self.done {
            self.shared.metrics.stream_ended("dropped");
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
