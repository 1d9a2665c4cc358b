//! One simulated spoke: its connection loop on the real spoke's reconnect
//! schedule, the connect (TCP, then HTTP/2 on that socket) and the stream
//! (Hello, snapshots, reports on demand).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleetgate_proto::SpokeServiceClient;
use fleetgate_proto::v1::{self as pb, hub_message, spoke_message};
use fleetgate_spoke::hub::reconnect::{Outcome, Reconnect};
use futures::StreamExt as _;
use tokio::net::TcpStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, Endpoint};

use super::slot::{CLUSTER_METADATA, Credential, Event, Failure, Failures, Slot, count_failure};

/// How long a simulated spoke's connect may take (TCP, then HTTP/2).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// One simulated spoke's connection loop.
pub(super) struct SimSpoke {
    /// Position in the swarm (and the first address it dials).
    pub(super) index: usize,
    pub(super) addrs: Arc<[SocketAddr]>,
    pub(super) cred: Credential,
    pub(super) slot: Arc<Slot>,
    pub(super) epoch: Instant,
    pub(super) total: Arc<AtomicU64>,
    pub(super) failures: Failures,
    pub(super) cancel: CancellationToken,
    /// Bounds concurrent first connects (registration of a fleet), released
    /// after the first session.
    pub(super) connect_gate: Option<Arc<tokio::sync::Semaphore>>,
    pub(super) events: Option<mpsc::UnboundedSender<Event>>,
}

impl SimSpoke {
    pub(super) async fn run(mut self) {
        let mut schedule = Reconnect::default();
        // Attempts since a stream last carried a message.
        let mut attempt: u32 = 0;
        let mut dial = self.index;
        while !self.cancel.is_cancelled() {
            let permit = match &self.connect_gate {
                Some(g) => g.clone().acquire_owned().await.ok(),
                None => None,
            };
            let at = dial % self.addrs.len();
            dial = dial.wrapping_add(1);
            self.slot.attempt(attempt + 1, at);
            self.slot.dialled_us.store(self.now_us(), Ordering::Release);
            if let Some(events) = &self.events {
                let _ = events.send(Event::Attempt {
                    i: self.index,
                    attempt: attempt + 1,
                    addr: at,
                    at: std::time::SystemTime::now(),
                });
            }
            let outcome = tokio::select! {
                () = self.cancel.cancelled() => return,
                outcome = self.session(at, permit) => outcome,
            };
            self.connect_gate = None;
            attempt = if outcome == Outcome::Failed {
                attempt + 1
            } else {
                0
            };
            let delay = schedule.after(outcome);
            tokio::select! {
                () = self.cancel.cancelled() => return,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// Counts a failed attempt at address `at` (its index), or tells the parent
    /// process, which counts it, if any.
    fn failed(&self, why: Failure, at: usize) {
        // The address only tells something when there are several.
        let addr = (self.addrs.len() > 1).then_some(at);
        match &self.events {
            Some(events) => {
                let _ = events.send(Event::Failed {
                    i: self.index,
                    why,
                    addr,
                });
            }
            None => count_failure(&self.failures, why.label_at(addr)),
        }
    }

    /// Now, µs since the swarm's epoch.
    fn now_us(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Records a moment of this spoke's attempt: now into the slot's `field`,
    /// and, for a swarm in its own process, the `event` at the wall clock's now.
    fn mark(&self, field: &AtomicU64, event: impl FnOnce(usize, std::time::SystemTime) -> Event) {
        field.store(self.now_us(), Ordering::Release);
        if let Some(events) = &self.events {
            let _ = events.send(event(self.index, std::time::SystemTime::now()));
        }
    }

    /// The connection to `addr`: the TCP connect on its own, then HTTP/2 on that socket. A
    /// refused connect (nothing listening) costs the simulated spoke a socket, not a tonic
    /// channel's setup and teardown, since 10,000 of them share the cores with the servers
    /// measured.
    async fn connect(&self, addr: SocketAddr) -> Result<Channel, Failure> {
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|_| Failure::Connect)?
            .connect_timeout(CONNECT_TIMEOUT)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(20));
        let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(tcp)) => tcp,
            // Nothing listening (counted apart from timeouts; a failure to the schedule).
            Ok(Err(e)) if e.kind() == std::io::ErrorKind::ConnectionRefused => {
                return Err(Failure::Refused);
            }
            Ok(Err(_)) | Err(_) => return Err(Failure::Connect),
        };
        let _ = tcp.set_nodelay(true);
        let tcp = Arc::new(Mutex::new(Some(tcp)));
        let connector = tower::service_fn(move |_: tonic::transport::Uri| {
            let tcp = tcp.lock().unwrap_or_else(|e| e.into_inner()).take();
            async move {
                tcp.map(hyper_util::rt::TokioIo::new)
                    .ok_or_else(|| std::io::Error::other("the connection is gone"))
            }
        });
        endpoint
            .connect_with_connector(connector)
            .await
            .map_err(|_| Failure::Connect)
    }

    /// One stream to address `at` (its index); returns how it ended.
    async fn session(
        &self,
        at: usize,
        permit: Option<tokio::sync::OwnedSemaphorePermit>,
    ) -> Outcome {
        let channel = match self.connect(self.addrs[at]).await {
            Ok(channel) => channel,
            Err(why) => {
                self.failed(why, at);
                return Outcome::Failed;
            }
        };
        self.mark(&self.slot.connected_us, |i, at| Event::Connected { i, at });
        let Ok(auth) = MetadataValue::try_from(format!("Bearer {}", self.cred.token)) else {
            return Outcome::Failed;
        };
        // The cluster's name, as the real spoke sends it with any credential (a JWT
        // names no cluster of the hub's).
        let Ok(cluster) = MetadataValue::try_from(self.cred.cluster.as_str()) else {
            return Outcome::Failed;
        };
        let mut client =
            SpokeServiceClient::with_interceptor(channel, move |mut req: tonic::Request<()>| {
                req.metadata_mut().insert("authorization", auth.clone());
                req.metadata_mut().insert(CLUSTER_METADATA, cluster.clone());
                Ok(req)
            });
        let (tx, rx) = mpsc::channel(4);
        let hello = pb::SpokeMessage {
            msg: Some(spoke_message::Msg::Hello(pb::Hello {
                local_gates_enforced: Default::default(),
                cluster: self.cred.cluster.clone(),
                spoke_version: "bench".into(),
                revision: self.slot.revision.load(Ordering::Acquire),
                ..Default::default()
            })),
        };
        if tx.try_send(hello).is_err() {
            return Outcome::Failed;
        }
        *self.slot.outbound.lock().unwrap_or_else(|e| e.into_inner()) = Some(tx);
        self.slot.sessions.fetch_add(1, Ordering::AcqRel);
        let response = client
            .connect(
                // Reports go out in parts, as the real spoke sends them.
                tokio_stream::wrappers::ReceiverStream::new(rx).flat_map(|m| {
                    futures::stream::iter(fleetgate_proto::report_parts::message_parts(m))
                }),
            )
            .await;
        drop(permit);
        if response.is_ok() {
            self.mark(&self.slot.accepted_us, |i, at| Event::Accepted { i, at });
        }
        let mut got = false;
        let mut ended = false;
        if let Err(status) = &response {
            self.failed(Failure::Status(status.code()), at);
        }
        if let Ok(response) = response {
            let mut inbound = response.into_inner();
            loop {
                let msg = match inbound.next().await {
                    Some(Ok(msg)) => msg,
                    // Status OK: the hub ended the stream on purpose.
                    None => {
                        ended = true;
                        break;
                    }
                    Some(Err(_)) => break,
                };
                got = true;
                if let Some(hub_message::Msg::Snapshot(s)) = msg.msg {
                    let now = u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX);
                    self.slot.snapshot(s.revision, now, &self.total);
                    if let Some(events) = &self.events {
                        let _ = events.send(Event::Snapshot {
                            i: self.index,
                            revision: s.revision,
                            at: std::time::SystemTime::now(),
                        });
                    }
                }
            }
            // The stream ended (a cancel drops this future before it gets here).
            self.slot.ends.fetch_add(1, Ordering::AcqRel);
            self.mark(&self.slot.ended_us, |i, at| Event::Ended { i, at });
            if !got {
                self.failed(
                    if ended {
                        Failure::EndedEmpty
                    } else {
                        Failure::BrokeEmpty
                    },
                    at,
                );
            }
        }
        self.slot
            .outbound
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        Outcome::of(got, ended)
    }
}
