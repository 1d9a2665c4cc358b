//! The connection to the hub: one long-lived `SpokeService.Connect` stream,
//! re-established on the shared reconnect schedule ([`crate::hub::reconnect`]).
//! Receives snapshots, sends status reports on change (debounced) and as a
//! heartbeat.

use std::{sync::Arc, time::Duration};

use chrono::Utc;
use fleetgate_proto::{
    SpokeServiceClient, report_parts,
    time::from_timestamp,
    v1::{self as pb, hub_message, spoke_message},
};
use futures::StreamExt as _;
use tokio::{
    sync::{mpsc, watch},
    time::{Instant, Interval},
};
use tokio_stream::wrappers::ReceiverStream;
use tokio_util::sync::CancellationToken;
use tonic::{
    Request, Streaming,
    metadata::{Ascii, MetadataValue},
    transport::{Certificate, ClientTlsConfig, Endpoint},
};

use crate::{
    context::{Context, SnapshotSource},
    error::{Error, Result},
    hub::credential,
    hub::reconnect::{Outcome, Reconnect},
    hub::report::{InventorySent, Report},
    hub::snapshot::Snapshot,
};

/// How the spoke reaches the hub.
#[derive(Clone)]
pub struct HubTarget {
    pub endpoint: Endpoint,
    pub token: String,
}

impl HubTarget {
    /// Builds the endpoint. https URLs use TLS, trusting `--hub-ca` when given
    /// and the system's roots otherwise.
    pub fn new(url: &str, token: String, ca_pem: Option<Vec<u8>>) -> Result<Self> {
        let mut endpoint = Endpoint::from_shared(url.to_owned())
            .map_err(|e| Error::Config(format!("--hub-url {url}: {e}")))?
            .connect_timeout(Duration::from_secs(10))
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(20))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        if url.starts_with("https://") {
            let tls = match ca_pem {
                Some(pem) => ClientTlsConfig::new().ca_certificate(Certificate::from_pem(pem)),
                None => ClientTlsConfig::new().with_native_roots(),
            };
            endpoint = endpoint.tls_config(tls)?;
        } else if ca_pem.is_some() {
            return Err(Error::Config(
                "--hub-ca is set but --hub-url is not https://".into(),
            ));
        }
        Ok(HubTarget { endpoint, token })
    }
}

/// Runs the hub connection until `shutdown`, reconnecting on the shared
/// schedule ([`crate::hub::reconnect`]).
pub async fn run(ctx: Arc<Context>, target: HubTarget, shutdown: CancellationToken) {
    let mut schedule = Reconnect::new(ctx.config.reconnect_min, ctx.config.reconnect_max);
    while !shutdown.is_cancelled() {
        let mut seen = Seen::default();
        let result = session(&ctx, &target, &shutdown, &mut seen).await;
        ctx.metrics.hub_connected.set(0);
        match result {
            Ok(End::Shutdown) => break,
            Ok(End::Renew) => {
                tracing::info!("the hub credential expires soon; reconnecting with the fresh one");
            }
            Err(e) if seen.outcome() == Outcome::Ended => {
                ctx.metrics.error(&e);
                tracing::info!("the hub ended the stream (draining or stream age); reconnecting");
            }
            Err(e) => {
                ctx.metrics.error(&e);
                tracing::warn!(error = %e, "hub connection lost; enforcing the held snapshot meanwhile");
            }
        }
        let delay = schedule.after(seen.outcome());
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// What one session saw, for the reconnect schedule.
#[derive(Debug, Default)]
struct Seen {
    /// A message from the hub arrived.
    received: bool,
    /// The hub ended the stream with status OK.
    ended: bool,
}

impl Seen {
    fn outcome(&self) -> Outcome {
        Outcome::of(self.received, self.ended)
    }
}

/// How a session ended without an error.
enum End {
    Shutdown,
    /// Its credential (a JWT) is about to expire: connect again with the fresh one.
    Renew,
}

/// What woke a session up.
enum Step {
    /// Shutdown, or the context that feeds reports went away.
    Stop,
    Inbound(std::result::Result<Option<pb::HubMessage>, tonic::Status>),
    /// The report changed: send it within the debounce period.
    ReportChanged,
    /// The debounce period after a change is over.
    ReportDue,
    Heartbeat,
    /// A request was made on a Gate object in the cluster.
    RequestsChanged,
    /// The cluster's own freeze (its `fleetgate-freeze` ConfigMap) began or ended.
    FreezeChanged,
    /// No message from the hub within the idle timeout.
    Idle,
    /// The JWT this stream presented is about to expire.
    Renew,
}

/// One stream's life: [`Session::open`] connects and says Hello, then each
/// wake-up ([`Step`]) is handled by a small method. `Ok` on shutdown and when
/// the credential must be renewed.
async fn session(
    ctx: &Context,
    target: &HubTarget,
    shutdown: &CancellationToken,
    seen: &mut Seen,
) -> Result<End> {
    let mut s = Session::open(ctx, target).await?;
    loop {
        match s.next(shutdown).await {
            Step::Stop => return Ok(End::Shutdown),
            Step::Renew => {
                // Ended on purpose, like a hub's drain: reconnect at once.
                seen.ended = true;
                return Ok(End::Renew);
            }
            Step::Inbound(msg) => {
                let Some(msg) = msg? else {
                    seen.ended = true;
                    return Err(Error::Hub(tonic::Status::unavailable(
                        "the hub closed the stream",
                    )));
                };
                seen.received = true;
                s.inbound(msg).await;
            }
            Step::ReportChanged => s.report_changed(),
            Step::ReportDue => {
                s.debounce = None;
                s.send_report();
            }
            Step::Heartbeat => {
                s.send_report();
                s.send_local_requests();
            }
            Step::RequestsChanged => s.send_local_requests(),
            Step::FreezeChanged => s.send_freeze(),
            Step::Idle => {
                return Err(Error::Hub(tonic::Status::deadline_exceeded(
                    "no message from the hub within the idle timeout",
                )));
            }
        }
    }
}

/// A connected stream and what the spoke tracks about it.
struct Session<'a> {
    ctx: &'a Context,
    /// Outbound messages. Reports are full views, so a report dropped because
    /// the hub reads slowly is made good by the next one: a small queue and
    /// `try_send`.
    tx: mpsc::Sender<pb::SpokeMessage>,
    inbound: Streaming<pb::HubMessage>,
    report_rx: watch::Receiver<Option<Arc<Report>>>,
    requests_rx: watch::Receiver<Arc<Vec<pb::LocalRequest>>>,
    freeze_rx: watch::Receiver<Option<crate::gates::freeze::LocalFreeze>>,
    local_gates_rx: watch::Receiver<Arc<Vec<pb::LocalGateStatus>>>,
    persistence_rx: watch::Receiver<crate::hub::snapshot_store::Persistence>,
    heartbeat: Interval,
    /// Spoke clock minus hub clock, from the last snapshot or keepalive.
    clock_offset_ms: i64,
    /// When the pending report goes out.
    debounce: Option<Instant>,
    /// The inventory this stream carried last (reports carry it only when it changed).
    inventory: InventorySent,
    last_message: Instant,
    /// When the stream's credential must be renewed (a JWT's, before its `exp`).
    renew_at: Option<Instant>,
}

impl<'a> Session<'a> {
    /// Connects, sends Hello, the current report and the unrecorded requests.
    async fn open(ctx: &'a Context, target: &HubTarget) -> Result<Session<'a>> {
        let channel = target.endpoint.connect().await?;
        // The hub encodes snapshots within the same limit (one constant for both sides), and
        // its budgets keep every snapshot under it.
        let mut client = SpokeServiceClient::new(channel)
            .max_decoding_message_size(fleetgate_policy::budgets::GRPC_MAX_MESSAGE_BYTES)
            .max_encoding_message_size(fleetgate_policy::budgets::GRPC_MAX_MESSAGE_BYTES);
        let (tx, rx) = mpsc::channel::<pb::SpokeMessage>(8);
        let hello = pb::Hello {
            cluster: ctx.config.cluster.clone(),
            spoke_version: env!("CARGO_PKG_VERSION").into(),
            revision: ctx.revision(),
            local_gates_enforced: ctx
                .snapshot
                .borrow()
                .as_ref()
                .is_some_and(|s| s.snapshot.local_gates_enforced),
            spoke_commit: env!("FLEETGATE_COMMIT").into(),
        };
        let _ = tx.try_send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Hello(hello)),
        });
        // A queued report goes out as parts of a few KiB (`StatusReport.more`), so
        // the hub keeps no report-sized buffer per stream; the queue still holds
        // whole reports, so a dropped one is dropped whole.
        let outbound = ReceiverStream::new(rx)
            .flat_map(|m| futures::stream::iter(report_parts::message_parts(m)));
        let mut request = Request::new(outbound);
        let (authorization, limit) = bearer(ctx, target).await?;
        let renew_at = limit.map(|l| Instant::now() + l);
        request
            .metadata_mut()
            .insert("authorization", authorization);
        // Names the cluster for a hub that verifies the cluster's own JWT (a cluster
        // token names its cluster by itself). Cluster names are DNS labels: ASCII.
        if let Ok(cluster) = MetadataValue::try_from(ctx.config.cluster.as_str()) {
            request.metadata_mut().insert("fleetgate-cluster", cluster);
        }
        let inbound = client.connect(request).await?.into_inner();
        ctx.metrics.hub_connected.set(1);
        tracing::info!(revision = ctx.revision(), "connected to the hub");

        let mut report_rx = ctx.report.subscribe();
        report_rx.mark_unchanged();
        let mut requests_rx = ctx.local_requests.subscribe();
        requests_rx.mark_unchanged();
        let mut freeze_rx = ctx.local_freeze.subscribe();
        freeze_rx.mark_unchanged();
        let mut local_gates_rx = ctx.local_gates.subscribe();
        local_gates_rx.mark_unchanged();
        let mut persistence_rx = ctx.persistence.subscribe();
        persistence_rx.mark_unchanged();
        let every = ctx.config.heartbeat_interval;
        let mut s = Session {
            ctx,
            tx,
            inbound,
            report_rx,
            requests_rx,
            freeze_rx,
            local_gates_rx,
            persistence_rx,
            heartbeat: tokio::time::interval_at(Instant::now() + every, every),
            clock_offset_ms: 0,
            debounce: None,
            inventory: InventorySent::default(),
            last_message: Instant::now(),
            renew_at,
        };
        s.send_report();
        s.send_local_requests();
        s.send_freeze();
        Ok(s)
    }

    /// Waits for whatever happens first.
    async fn next(&mut self, shutdown: &CancellationToken) -> Step {
        let idle = self.last_message + self.ctx.config.hub_idle_timeout;
        tokio::select! {
            _ = shutdown.cancelled() => Step::Stop,
            msg = self.inbound.message() => Step::Inbound(msg),
            changed = self.report_rx.changed() => match changed {
                Ok(()) => Step::ReportChanged,
                Err(_) => Step::Stop,
            },
            // The Gate objects made in the cluster travel with the report.
            changed = self.local_gates_rx.changed() => match changed {
                Ok(()) => Step::ReportChanged,
                Err(_) => Step::Stop,
            },
            // So does whether the snapshot in force is persisted.
            changed = self.persistence_rx.changed() => match changed {
                Ok(()) => Step::ReportChanged,
                Err(_) => Step::Stop,
            },
            _ = sleep_until_opt(self.debounce) => Step::ReportDue,
            _ = self.heartbeat.tick() => Step::Heartbeat,
            changed = self.requests_rx.changed() => match changed {
                Ok(()) => Step::RequestsChanged,
                Err(_) => Step::Stop,
            },
            changed = self.freeze_rx.changed() => match changed {
                Ok(()) => Step::FreezeChanged,
                Err(_) => Step::Stop,
            },
            _ = tokio::time::sleep_until(idle) => Step::Idle,
            _ = sleep_until_opt(self.renew_at) => Step::Renew,
        }
    }

    /// A snapshot is enforced (a bad one is rejected, the previous one stays);
    /// snapshots and keepalives measure the clock offset.
    async fn inbound(&mut self, msg: pb::HubMessage) {
        self.last_message = Instant::now();
        match msg.msg {
            Some(hub_message::Msg::Snapshot(snap)) => {
                self.measure_clock(snap.hub_time.as_ref());
                let revision = snap.revision;
                let accepted = match Snapshot::from_proto(snap) {
                    Ok(s) => self.ctx.accept(s, SnapshotSource::Hub).await,
                    Err(e) => Err(e),
                };
                if let Err(e) = accepted {
                    self.ctx.metrics.error(&e);
                    tracing::error!(revision, error = %e, "rejected snapshot; the previous one stays in force");
                }
            }
            Some(hub_message::Msg::Keepalive(k)) => self.measure_clock(k.hub_time.as_ref()),
            None => {}
        }
    }

    fn measure_clock(&mut self, hub_time: Option<&prost_types::Timestamp>) {
        if let Some(t) = hub_time.and_then(from_timestamp) {
            self.clock_offset_ms = (Utc::now() - t).num_milliseconds();
        }
    }

    /// Throttle rather than trail: the first change starts the clock, so a
    /// steady stream of changes still reports every period.
    fn report_changed(&mut self) {
        self.debounce
            .get_or_insert(Instant::now() + self.ctx.config.report_debounce);
    }

    /// Queues the current report, if there is one yet, with the inventory when
    /// this stream has not carried it yet or it changed. A report dropped from a
    /// full queue leaves the inventory due, so the next report carries it.
    fn send_report(&mut self) {
        let Some(report) = self.ctx.report.borrow().clone() else {
            return;
        };
        let inventory = self.inventory.due(&report);
        let mut message = report.to_proto(self.clock_offset_ms, Utc::now(), inventory.is_some());
        message.local_gates = self.ctx.local_gates.borrow().to_vec();
        message.snapshot_persistence = Some(self.ctx.persistence.borrow().to_proto());
        let queued = self.tx.try_send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Report(message)),
        });
        if let (Ok(()), Some(digest)) = (queued, inventory) {
            self.inventory.sent(digest);
        }
    }

    /// Tells the hub the cluster's own freeze state (on connect and on every change; the
    /// hub records a change once and ignores a repeat).
    fn send_freeze(&self) {
        let msg =
            crate::gates::freeze::LocalFreeze::to_proto(self.ctx.local_freeze.borrow().as_ref());
        let _ = self.tx.try_send(pb::SpokeMessage {
            msg: Some(spoke_message::Msg::LocalRequest(msg)),
        });
    }

    /// Queues every request made in the cluster that the hub has not recorded
    /// (the hub deduplicates, so a repeat is harmless and a dropped one is resent).
    fn send_local_requests(&self) {
        for r in self.ctx.local_requests.borrow().iter() {
            let _ = self.tx.try_send(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::LocalRequest(r.clone())),
            });
        }
    }
}

/// The `authorization` header and, for a JWT, how long the stream may run on it
/// ([`credential::stream_limit`]). The token file is re-read on every connect, so
/// a rotated Secret or a projected token the kubelet rewrote is picked up without
/// a restart (a file caught mid-write is read again: [`credential::read_settled`]); if it
/// stays unreadable, the token read at start is used.
async fn bearer(
    ctx: &Context,
    target: &HubTarget,
) -> Result<(MetadataValue<Ascii>, Option<Duration>)> {
    let token = match credential::read_settled(&ctx.config).await {
        Ok(Some(t)) => t,
        Ok(None) => target.token.clone(),
        Err(e) => {
            tracing::warn!(error = %e, "cannot re-read the token; using the one read at start");
            target.token.clone()
        }
    };
    let limit = credential::stream_limit(&token, Utc::now().timestamp());
    let header = MetadataValue::try_from(format!("Bearer {token}")).map_err(|_| {
        Error::Config("the spoke token contains characters not allowed in a header".into())
    })?;
    Ok((header, limit))
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_configuration_follows_the_url() {
        assert!(HubTarget::new("https://hub:9090", "t".into(), None).is_ok());
        assert!(HubTarget::new("http://hub:9090", "t".into(), None).is_ok());
        assert!(HubTarget::new("http://hub:9090", "t".into(), Some(b"pem".to_vec())).is_err());
        assert!(HubTarget::new("not a url", "t".into(), None).is_err());
    }
}
