//! `SpokeService.Connect`: one long-lived stream per spoke. The token (metadata)
//! names the cluster; the first message must be a Hello for that cluster. The
//! stream then sends the snapshot whenever its content changes (read from the
//! cluster's `watch` in the fan-out index), keepalives, and ingests reports.

use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fleetgate_proto::report_parts::MAX_REPORT_OBJECTS;
use fleetgate_proto::v1::{self as pb, hub_message, spoke_message};
use futures::Stream;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status, Streaming};

use super::auth::bearer;
use super::convert::{invalid, object_from_proto, snapshot_to_proto, to_status};
use super::metrics::GrpcMetrics;
use super::reports::{ReportBatcher, normalize_objects};
use crate::Error;
use crate::auth::{hash_token, hashes_equal};
use crate::db::reports::{self as db, ClusterReport};
use crate::fanout::Fanout;
use crate::service::Service;
use crate::snapshot::{ClusterSnapshot, Desired};

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
}

impl Default for StreamConfig {
    fn default() -> Self {
        Self {
            replica: "hub".into(),
            keepalive: Duration::from_secs(15),
            max_stream_age: Duration::from_secs(30 * 60),
            hello_timeout: Duration::from_secs(10),
        }
    }
}

/// The spoke service of one replica.
#[derive(Clone)]
pub struct SpokeApi {
    inner: Arc<Inner>,
}

struct Inner {
    service: Service,
    fanout: Fanout,
    reports: Arc<ReportBatcher>,
    cfg: StreamConfig,
    shutdown: CancellationToken,
    metrics: GrpcMetrics,
    /// Serialises connection-state writes per cluster shard so a reconnect's
    /// "connected" is never overwritten by the old stream's late "disconnected".
    conn_locks: Vec<tokio::sync::Mutex<()>>,
}

impl SpokeApi {
    /// A spoke service; streams end when `shutdown` is cancelled (drain).
    pub fn new(
        service: Service,
        fanout: Fanout,
        reports: Arc<ReportBatcher>,
        cfg: StreamConfig,
        shutdown: CancellationToken,
        metrics: GrpcMetrics,
    ) -> Self {
        Self {
            inner: Arc::new(Inner {
                service,
                fanout,
                reports,
                cfg,
                shutdown,
                metrics,
                conn_locks: (0..16).map(|_| tokio::sync::Mutex::new(())).collect(),
            }),
        }
    }
}

impl Inner {
    fn conn_lock(&self, cluster: &str) -> &tokio::sync::Mutex<()> {
        let h = cluster
            .bytes()
            .fold(0usize, |h, b| h.wrapping_mul(31).wrapping_add(b as usize));
        &self.conn_locks[h % self.conn_locks.len()]
    }

    async fn mark_connected(&self, cluster: &str, spoke_version: &str) {
        let _guard = self.conn_lock(cluster).lock().await;
        let res = async {
            let mut conn = self.service.pool().acquire().await?;
            db::mark_connected(
                &mut conn,
                cluster,
                &self.cfg.replica,
                spoke_version,
                self.service.now(),
            )
            .await
        }
        .await;
        if let Err(e) = res {
            tracing::warn!(%cluster, error = %e, "recording spoke connection failed");
        }
    }

    async fn mark_disconnected(&self, cluster: &str) {
        let _guard = self.conn_lock(cluster).lock().await;
        if self.fanout.subscribers(cluster) > 0 {
            return; // another stream of this spoke is (again) open here
        }
        let res = async {
            let mut conn = self.service.pool().acquire().await?;
            db::mark_disconnected(&mut conn, cluster, &self.cfg.replica, self.service.now()).await
        }
        .await;
        if let Err(e) = res {
            tracing::warn!(%cluster, error = %e, "recording spoke disconnection failed");
        }
    }
}

/// Owns a stream's subscription; on drop (stream ended or client gone) it
/// unsubscribes and records the disconnection if it was the last stream.
struct Connection {
    inner: Arc<Inner>,
    cluster: String,
    rx: Option<watch::Receiver<Desired>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.rx.take();
        self.inner.metrics.spokes_connected.dec();
        let inner = self.inner.clone();
        let cluster = std::mem::take(&mut self.cluster);
        tracing::info!(%cluster, "spoke disconnected");
        if self.inner.shutdown.is_cancelled() {
            // Draining: the server clears this replica's connection state in
            // one statement once every stream has ended, instead of thousands
            // of updates competing with the drain (fleetgate-bench storm).
            return;
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { inner.mark_disconnected(&cluster).await });
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
            .service
            .authenticate_spoke(&token)
            .await
            .map_err(to_status)?
            .name;
        let inbound = req.into_inner();
        let stream = session(self.inner.clone(), cluster, token, inbound);
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

fn hub_msg(msg: hub_message::Msg) -> pb::HubMessage {
    pb::HubMessage { msg: Some(msg) }
}

/// Whether a spoke holding `held` (content last sent, or what its Hello
/// revision stands for) needs `new`.
fn needs_send(held: Option<&ClusterSnapshot>, new: &ClusterSnapshot) -> bool {
    held.is_none_or(|h| !h.same_content(new))
}

/// What woke a stream up.
enum Step {
    Stop(&'static str),
    Changed(Desired),
    Inbound(Result<Option<pb::SpokeMessage>, Status>),
    Keepalive,
}

fn session(
    inner: Arc<Inner>,
    cluster: String,
    token: String,
    mut inbound: Streaming<pb::SpokeMessage>,
) -> impl Stream<Item = Result<pb::HubMessage, Status>> + Send {
    async_stream::try_stream! {
        // Futures awaited once (or rarely) are boxed: a generator is as large
        // as its largest await point for the stream's whole life, and the
        // database futures would otherwise make every idle stream ~1 KiB larger.
        let first = Box::pin(tokio::time::timeout(inner.cfg.hello_timeout, inbound.message())).await;
        let hello = match first {
            Err(_) => Err(invalid("hello", "the first message must be a Hello (none received in time)"))?,
            Ok(Err(status)) => Err(status)?,
            Ok(Ok(None)) => return,
            Ok(Ok(Some(pb::SpokeMessage { msg: Some(spoke_message::Msg::Hello(h)) }))) => h,
            Ok(Ok(Some(_))) => Err(invalid("hello", "the first message must be a Hello"))?,
        };
        if hello.cluster != cluster {
            Err(Status::permission_denied(format!(
                "hello.cluster: this token belongs to cluster '{cluster}', not '{}'",
                hello.cluster
            )))?;
        }
        let token_hash = hash_token(&token);
        let rx = Box::pin(inner.fanout.subscribe(&cluster)).await.map_err(to_status)?;
        let mut conn = Connection { inner: inner.clone(), cluster: cluster.clone(), rx: Some(rx) };
        inner.metrics.spokes_connected.inc();
        Box::pin(inner.mark_connected(&cluster, &hello.spoke_version)).await;
        tracing::info!(%cluster, spoke_version = %hello.spoke_version, revision = hello.revision, "spoke connected");

        // What the spoke holds: nothing known, unless its Hello revision is the
        // current one (then it holds exactly the current content).
        let mut held: Option<Arc<ClusterSnapshot>> = None;
        let mut held_revision = hello.revision;
        let initial = conn.rx.as_mut().map(|rx| rx.borrow_and_update().clone());
        match initial {
            Some(Desired::Snapshot(s)) => {
                if s.revision != hello.revision {
                    inner.metrics.snapshots_sent.inc();
                    yield hub_msg(hub_message::Msg::Snapshot(snapshot_to_proto(&s, inner.service.now())));
                }
                held_revision = s.revision;
                held = Some(s);
            }
            Some(Desired::Gone) => Err(Status::unauthenticated("cluster deleted"))?,
            Some(Desired::Pending) | None => {}
        }

        let age = inner.cfg.max_stream_age.mul_f64(rand::random_range(0.9..1.1));
        let end_of_life = tokio::time::sleep(age);
        tokio::pin!(end_of_life);
        let mut keepalive = tokio::time::interval_at(
            tokio::time::Instant::now() + inner.cfg.keepalive,
            inner.cfg.keepalive,
        );
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);

        // Objects of a report whose last part has not arrived yet.
        let mut partial: Vec<db::ReportedObject> = Vec::new();
        while let Some(rx) = conn.rx.as_mut() {
            // Decide inside `select!`, act outside it: `?` and `yield` of
            // `try_stream!` do not reach into the macro's branches.
            let step = tokio::select! {
                () = inner.shutdown.cancelled() => Step::Stop("draining"),
                () = &mut end_of_life => Step::Stop("max stream age reached"),
                changed = rx.changed() => match changed {
                    Ok(()) => Step::Changed(rx.borrow_and_update().clone()),
                    Err(_) => Step::Stop("index closed"),
                },
                msg = inbound.message() => Step::Inbound(msg),
                _ = keepalive.tick() => Step::Keepalive,
            };
            match step {
                Step::Stop(why) => {
                    tracing::debug!(%cluster, why, "ending spoke stream");
                    break;
                }
                Step::Changed(desired) => {
                    // Something about this cluster changed: a rotated token or a
                    // deleted cluster must end the stream now. The snapshot read
                    // carries the token hash, so thousands of streams woken by one
                    // fleet-wide change do not each query the database.
                    let known = match &desired {
                        Desired::Snapshot(s) => s.token_hash.as_deref().map(|h| hashes_equal(h, &token_hash)),
                        _ => None,
                    };
                    match known {
                        Some(true) => {}
                        Some(false) => Err(Status::unauthenticated("spoke token revoked or rotated"))?,
                        None => match Box::pin(inner.service.authenticate_spoke(&token)).await {
                            Ok(c) if c.name == cluster => {}
                            Ok(_) | Err(Error::Unauthenticated(_)) => {
                                Err(Status::unauthenticated("spoke token revoked or rotated"))?;
                            }
                            Err(e) => tracing::warn!(%cluster, error = %e, "re-checking spoke token failed"),
                        },
                    }
                    match desired {
                        Desired::Snapshot(s) => {
                            if needs_send(held.as_deref(), &s) {
                                inner.metrics.snapshots_sent.inc();
                                yield hub_msg(hub_message::Msg::Snapshot(snapshot_to_proto(&s, inner.service.now())));
                                held_revision = s.revision;
                                held = Some(s);
                            }
                        }
                        Desired::Gone => Err(Status::unauthenticated("cluster deleted"))?,
                        Desired::Pending => {}
                    }
                }
                Step::Inbound(Ok(Some(pb::SpokeMessage { msg: Some(spoke_message::Msg::Report(report)) }))) => {
                    // A report may come in parts (`more`); it is applied whole,
                    // when its last part arrives.
                    if partial.len() + report.objects.len() > MAX_REPORT_OBJECTS {
                        Err(invalid(
                            "report.objects",
                            format!("more than {MAX_REPORT_OBJECTS} objects in one report"),
                        ))?;
                    }
                    partial.extend(report.objects.into_iter().map(object_from_proto));
                    if report.more {
                        continue;
                    }
                    let objects = normalize_objects(std::mem::take(&mut partial)).map_err(to_status)?;
                    inner.metrics.reports_received.inc();
                    inner.reports.submit(ClusterReport {
                        cluster: cluster.clone(),
                        objects,
                        clock_offset_ms: report.clock_offset_ms,
                        received_at: inner.service.now(),
                    });
                }
                Step::Inbound(Ok(Some(pb::SpokeMessage { msg: Some(spoke_message::Msg::Hello(_)) }))) => {
                    Err(invalid("hello", "only the first message may be a Hello"))?;
                }
                Step::Inbound(Ok(Some(pb::SpokeMessage { msg: Some(spoke_message::Msg::LocalRequest(r)) }))) => {
                    // Already in force on the cluster: a refusal here is logged,
                    // not fatal to the stream (the spoke resends until recorded).
                    let recorded = match local_request_from_proto(r) {
                        Ok(r) => inner.service.record_local_request(&cluster, r).await.map_err(to_status),
                        Err(e) => Err(e),
                    };
                    match recorded {
                        Ok(Some(o)) => tracing::info!(%cluster, gate = %o.gate, state = %o.state, actor = %o.actor, "recorded a request made in the cluster"),
                        Ok(None) => {}
                        Err(status) => tracing::warn!(%cluster, %status, "request made in the cluster not recorded"),
                    }
                }
                Step::Inbound(Ok(Some(pb::SpokeMessage { msg: None }))) => {}
                Step::Inbound(Ok(None)) => break,
                Step::Inbound(Err(status)) => {
                    tracing::debug!(%cluster, %status, "spoke stream broke");
                    break;
                }
                Step::Keepalive => {
                    // Keeps `last_seen_at` fresh, which "connected" is derived from.
                    inner.reports.seen(&cluster, inner.service.now());
                    yield hub_msg(hub_message::Msg::Keepalive(pb::Keepalive {
                        hub_time: Some(fleetgate_proto::time::to_timestamp(inner.service.now())),
                        revision: held_revision,
                    }));
                }
            }
        }
        drop(conn);
    }
}

/// A spoke's report of a request made in its cluster, checked field by field.
fn local_request_from_proto(
    r: pb::LocalRequest,
) -> Result<crate::service::local_requests::LocalRequest, Status> {
    use fleetgate_proto::time::from_timestamp;
    let time = |t: Option<&prost_types::Timestamp>, field: &str| {
        t.and_then(from_timestamp)
            .ok_or_else(|| invalid(field, "missing or out-of-range timestamp"))
    };
    Ok(crate::service::local_requests::LocalRequest {
        state: r
            .state
            .parse()
            .map_err(|e: fleetgate_policy::PolicyError| invalid("localRequest.state", e.message))?,
        requested_at: time(r.requested_at.as_ref(), "localRequest.requestedAt")?,
        expires_at: time(r.expires_at.as_ref(), "localRequest.expiresAt")?,
        gate: r.gate,
        reason: r.reason,
        requested_by: r.requested_by,
    })
}
