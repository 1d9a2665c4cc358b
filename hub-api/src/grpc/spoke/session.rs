//! What one spoke stream does: [`Session::open`] checks the Hello and subscribes,
//! then each wake-up ([`Step`]) is handled by a small method that returns what to
//! send. `super::stream` (a hand-written `Stream`) only sequences them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::task::Poll;

use fleetgate_proto::v1::{self as pb, hub_message};
use futures::Stream;
use tokio::time::{Instant, Sleep};
use tonic::{Status, Streaming};

use super::inner::Inner;
use crate::Error;
use crate::auth::{hash_token, hashes_equal};
use crate::fanout::Desired;
use crate::fanout::index::Receiver;
use crate::grpc::convert::{snapshot_to_proto, to_status};
use crate::metrics::SpokeVersionLabels;
use crate::service::fleet::Snapshot;
use crate::service::local_gates::requests::LocalRequest;
use crate::service::reports::ReportParts;
use prometheus_client::metrics::gauge::Gauge;

/// What woke a stream up.
pub(super) enum Step {
    Stop(&'static str),
    Changed(Desired),
    // Boxed: a message is large next to the other steps.
    Inbound(Box<Result<Option<pb::SpokeMessage>, Status>>),
    Keepalive,
}

/// Whether the stream goes on after an inbound message (`super::inbound`).
pub(super) enum Flow {
    Continue,
    /// A request made in the cluster, to record (a database write).
    Record(LocalRequest),
    /// The cluster's own freeze state (its `fleetgate-freeze` ConfigMap), to record.
    Freeze(Option<crate::service::freezes::LocalFreeze>),
    End,
}

/// What the spoke signed in with.
pub(super) enum Credential {
    /// A cluster token: re-checked when the cluster's token may have changed.
    Token(String),
    /// The cluster's own JWT, verified at connect against the cluster's registration: the
    /// stream ends when it expires, or when the registration changes (`registration`: the
    /// cluster's credential hash read with the binding the JWT was verified against; a
    /// change of the binding replaces it).
    Jwt {
        expires: chrono::DateTime<chrono::Utc>,
        registration: Vec<u8>,
    },
}

fn hub_msg(msg: hub_message::Msg) -> pb::HubMessage {
    pb::HubMessage { msg: Some(msg) }
}

/// A stream's subscription to its cluster; on drop (stream ended or client
/// gone) it unsubscribes and records the disconnection if it was the last
/// stream of the cluster here.
struct Subscription {
    inner: Arc<Inner>,
    cluster: String,
    /// This stream's count in `spokes_by_version` (the family's handle for the spoke's
    /// version labels: one pointer, where the labels were two strings per stream).
    by_version: Gauge,
    rx: Option<Receiver>,
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.rx.take();
        self.inner.metrics.spokes_connected.dec();
        self.by_version.dec();
        let inner = self.inner.clone();
        let cluster = std::mem::take(&mut self.cluster);
        // A drain ends every stream at once: one line for all (its phase line), not
        // thousands competing with the drain for the log.
        if self.inner.shutdown.is_cancelled() {
            tracing::debug!(%cluster, "spoke disconnected (drain)");
        } else {
            tracing::info!(%cluster, "spoke disconnected");
        }
        let live = self.inner.live.fetch_sub(1, Ordering::AcqRel) - 1;
        if live == 0 {
            self.inner.none_live.notify_waiters();
        }
        if self.inner.shutdown.is_cancelled() {
            if live == 0 {
                crate::drain::phase("streams_ended");
            }
            // Draining: the replica clears its connection state in one
            // statement once every stream has ended, instead of thousands of
            // updates competing with the drain (fleetgate-bench storm).
            return;
        }
        let fanout = inner.fanout.clone();
        inner
            .reports
            .disconnected(&cluster, || fanout.subscribers(&cluster) > 0);
    }
}

/// A connected spoke's stream state. What the spoke sends is handled in `super::inbound`.
pub(super) struct Session {
    pub(super) inner: Arc<Inner>,
    pub(super) cluster: String,
    /// The cluster token (`None`: a JWT, see `end_of_life`).
    token: Option<String>,
    /// The cluster's credential hash this stream signed in with: its token's, or for a
    /// JWT the one read with the registration it was verified against. A snapshot
    /// carrying another one ends the stream (a rotated token, a changed registration).
    credential_hash: Vec<u8>,
    inbound: Streaming<pb::SpokeMessage>,
    subscription: Subscription,
    /// What the spoke holds: the content last sent, or the current one if its
    /// Hello revision was current; `None`: unknown.
    held: Option<Arc<Snapshot>>,
    /// The revision the spoke holds (sent in keepalives).
    held_revision: u64,
    /// The spoke's snapshot says to enforce local gates (from its Hello).
    held_local_gates: bool,
    /// Whether the last snapshot this stream sent was over its budget (`None`: none sent
    /// yet); the hub records only a change, and the first one of a stream.
    over_budget: Option<bool>,
    /// A report whose last part has not arrived yet (`None` between reports: boxed and
    /// only while a report is being received, it is ~200 B an idle stream does not hold).
    pub(super) parts: Option<Box<ReportParts>>,
    /// The stream's one timer: the next keepalive or `end_of_life`, whichever is sooner.
    timer: Pin<Box<Sleep>>,
    /// The stream's maximum age, or its JWT's expiry if sooner.
    end_of_life: Instant,
    /// Why the stream ends at `end_of_life`.
    end_reason: &'static str,
}

impl Session {
    /// Checks the Hello against the token's cluster, subscribes to the
    /// cluster and records the connection.
    pub(super) async fn open(
        inner: Arc<Inner>,
        cluster: String,
        credential: Credential,
        inbound: Streaming<pb::SpokeMessage>,
        hello: pb::Hello,
    ) -> Result<Self, Status> {
        if hello.cluster != cluster {
            return Err(Status::permission_denied(format!(
                "hello.cluster: this token belongs to cluster '{cluster}', not '{}'",
                hello.cluster
            )));
        }
        let (token, credential_hash, jwt_left) = match credential {
            Credential::Token(t) => {
                let hash = hash_token(&t);
                (Some(t), hash, None)
            }
            Credential::Jwt {
                expires,
                registration,
            } => {
                let left = (expires - inner.service.now()).to_std().unwrap_or_default();
                (None, registration, Some(left))
            }
        };
        let rx = inner.fanout.subscribe(&cluster).await.map_err(to_status)?;
        inner.live.fetch_add(1, Ordering::AcqRel);
        let version = SpokeVersionLabels::of(&hello.spoke_version);
        let by_version = inner
            .metrics
            .spokes_by_version
            .get_or_create(&version)
            .clone();
        by_version.inc();
        let skew = version.skew;
        let subscription = Subscription {
            inner: inner.clone(),
            cluster: cluster.clone(),
            by_version,
            rx: Some(rx),
        };
        inner.metrics.spokes_connected.inc();
        // The spoke's own text: stored with U+0000 replaced, never refused.
        let spoke_version = fleetgate_policy::text::replace_str(&hello.spoke_version);
        inner.reports.connected(&cluster, &spoke_version);
        tracing::info!(%cluster, spoke_version = %hello.spoke_version, spoke_commit = %hello.spoke_commit, %skew, revision = hello.revision, "spoke connected");
        if skew == "unsupported" {
            tracing::warn!(%cluster, spoke_version = %hello.spoke_version, hub_version = fleetgate_api_types::version::VERSION,
                "spoke outside the supported version skew: upgrade it (docs/hub-operations.md, Upgrades and version skew)");
        }
        let age = inner
            .cfg
            .max_stream_age
            .mul_f64(rand::random_range(0.9..1.1));
        let now = Instant::now();
        // No stream outlives the JWT it was opened with: the spoke reconnects with its
        // fresh one (it normally does so shortly before this).
        let (life, end_reason) = match jwt_left {
            Some(left) if left < age => (left, "credential expired"),
            _ => (age, "max stream age reached"),
        };
        let end_of_life = now + life;
        Ok(Self {
            timer: Box::pin(tokio::time::sleep_until(
                (now + inner.cfg.keepalive).min(end_of_life),
            )),
            end_of_life,
            end_reason,
            inner,
            cluster,
            token,
            credential_hash,
            inbound,
            subscription,
            held: None,
            held_revision: hello.revision,
            held_local_gates: hello.local_gates_enforced,
            over_budget: None,
            parts: None,
        })
    }

    /// The snapshot to send right after the Hello: none if the spoke's
    /// revision is the current one and it holds this hub's `--local-gates`
    /// (or nothing was read yet).
    pub(super) fn initial(&mut self) -> Result<Option<pb::HubMessage>, Status> {
        let Some(rx) = self.subscription.rx.as_mut() else {
            return Ok(None);
        };
        let initial = rx.borrow_and_update().into_inner();
        match initial {
            Desired::Snapshot(s) => {
                // Changed between the sign-in and the subscription.
                self.check_hash(&s)?;
                let stale = s.revision != self.held_revision
                    || self.held_local_gates != self.inner.cfg.local_gates_enforced;
                let msg = stale.then(|| self.send(&s));
                self.held_revision = s.revision;
                self.held = Some(s);
                Ok(msg)
            }
            Desired::Gone => Err(Status::unauthenticated("cluster deleted")),
            Desired::Pending => Ok(None),
        }
    }

    /// The next thing to do, if any: the replica drains, the stream's timer fired, the
    /// cluster's state changed, or the spoke sent something (in this order). Nothing
    /// waits on the drain itself: the replica wakes every stream waiting on its cluster
    /// when it drains (`super::SpokeApi::new`), and the drain is checked after the
    /// stream's waker is registered with its cluster, so that wake-up is never missed.
    pub(super) fn poll_step(&mut self, cx: &mut std::task::Context<'_>) -> Poll<Step> {
        let Some(rx) = self.subscription.rx.as_mut() else {
            return Poll::Ready(Step::Stop("unsubscribed"));
        };
        let changed = rx.poll_changed(cx);
        if self.inner.shutdown.is_cancelled() {
            return Poll::Ready(Step::Stop("draining"));
        }
        if self.timer.as_mut().poll(cx).is_ready() {
            return Poll::Ready(self.timer_fired());
        }
        if let Poll::Ready(changed) = changed {
            return Poll::Ready(match changed {
                Ok(()) => Step::Changed(rx.borrow_and_update().into_inner()),
                Err(_) => Step::Stop("index closed"),
            });
        }
        match Pin::new(&mut self.inbound).poll_next(cx) {
            Poll::Ready(msg) => Poll::Ready(Step::Inbound(Box::new(msg.transpose()))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// The stream's timer fired: its end of life, or a keepalive (the next one a full
    /// interval after this one was sent, as a tokio `Interval` with
    /// `MissedTickBehavior::Delay` keeps it).
    fn timer_fired(&mut self) -> Step {
        let now = Instant::now();
        if now >= self.end_of_life {
            return Step::Stop(self.end_reason);
        }
        let next = (now + self.inner.cfg.keepalive).min(self.end_of_life);
        self.timer.as_mut().reset(next);
        Step::Keepalive
    }

    /// Whether the credential must be re-checked in the database: the snapshot read
    /// carries the cluster's credential hash, so thousands of streams woken by one
    /// fleet-wide change do not each query the database.
    pub(super) fn hash_unknown(&self, desired: &Desired) -> bool {
        match desired {
            Desired::Snapshot(s) => s.token_hash.is_none(),
            // A deleted cluster ends the stream anyway (`changed`); a token is re-checked.
            Desired::Gone | Desired::Pending => self.token.is_some(),
        }
    }

    /// Ends the stream if the token no longer belongs to the cluster, or the cluster's
    /// registration changed since the JWT was verified.
    pub(super) async fn recheck_credential(&self) -> Result<(), Status> {
        let current = match &self.token {
            Some(token) => match self.inner.service.authenticate_spoke(token).await {
                Ok(c) if c.name == self.cluster => return Ok(()),
                Ok(_) | Err(Error::Unauthenticated(_)) => return Err(self.credential_changed()),
                Err(e) => Err(e),
            },
            None => {
                self.inner
                    .service
                    .spoke_credential_hash(&self.cluster)
                    .await
            }
        };
        match current {
            Ok(Some(hash)) if hashes_equal(&hash, &self.credential_hash) => Ok(()),
            Ok(_) => Err(self.credential_changed()),
            Err(e) => {
                tracing::warn!(cluster = %self.cluster, error = %e, "re-checking the spoke's credential failed");
                Ok(())
            }
        }
    }

    /// Ends the stream if the snapshot carries another credential hash than the one the
    /// stream signed in with.
    fn check_hash(&self, s: &Snapshot) -> Result<(), Status> {
        match s.token_hash.as_deref() {
            Some(hash) if !hashes_equal(hash, &self.credential_hash) => {
                Err(self.credential_changed())
            }
            _ => Ok(()),
        }
    }

    /// Why the stream ends when its credential no longer holds.
    fn credential_changed(&self) -> Status {
        if self.token.is_some() {
            Status::unauthenticated("spoke token revoked or rotated")
        } else {
            Status::unauthenticated(
                "the cluster's identity registration changed: reconnect to be verified against it",
            )
        }
    }

    /// Something about the cluster changed: a rotated token, a changed registration
    /// or a deleted cluster ends the stream; new content is sent.
    pub(super) fn changed(&mut self, desired: Desired) -> Result<Option<pb::HubMessage>, Status> {
        match desired {
            Desired::Snapshot(s) => {
                self.check_hash(&s)?;
                if self.held.as_ref().is_some_and(|h| h.same_content(&s)) {
                    return Ok(None);
                }
                let msg = self.send(&s);
                self.held_revision = s.revision;
                self.held = Some(s);
                Ok(Some(msg))
            }
            Desired::Gone => Err(Status::unauthenticated("cluster deleted")),
            Desired::Pending => Ok(None),
        }
    }

    fn send(&mut self, s: &Snapshot) -> pb::HubMessage {
        use fleetgate_policy::budgets::SNAPSHOT_MAX_BYTES;
        self.inner.metrics.snapshots_sent.inc();
        let now = self.inner.service.now();
        let mut snapshot = snapshot_to_proto(s, now, self.inner.cfg.local_gates_enforced);
        let size = crate::grpc::convert::close_if_over_budget(&mut snapshot);
        if let Some(size) = size {
            self.inner.metrics.snapshots_over_budget.inc();
            tracing::error!(cluster = %s.cluster, revision = s.revision, size, budget = SNAPSHOT_MAX_BYTES, "snapshot over its budget: the cluster is held closed until its gates fit");
        }
        // Visible on the cluster (REST, gRPC, CLI, dashboard): set while over, cleared by
        // the first snapshot within the budget.
        if size.is_some() || self.over_budget != Some(false) {
            self.over_budget = Some(size.is_some());
            let over = size.map(|size| fleetgate_api_types::SnapshotOverBudget {
                bytes: size as u64,
                budget: SNAPSHOT_MAX_BYTES as u64,
                revision: s.revision,
                since: now,
            });
            self.inner.reports.snapshot_over_budget(&self.cluster, over);
        }
        hub_msg(hub_message::Msg::Snapshot(snapshot))
    }

    /// A keepalive (it writes nothing: the replica's lease keeps the stream
    /// connected, see `crate::liveness`).
    pub(super) fn keepalive(&self) -> pb::HubMessage {
        hub_msg(hub_message::Msg::Keepalive(pb::Keepalive {
            hub_time: Some(fleetgate_proto::time::to_timestamp(
                self.inner.service.now(),
            )),
            revision: self.held_revision,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What every connected spoke's stream keeps for its whole life: the stream (one
    /// state: the boxed session, or the boxed future it awaits) and the session. The
    /// `async_stream` generator was 2,176 bytes (release) with the session inline, then
    /// 912 (debug) beside the boxed session.
    #[test]
    fn an_idle_stream_is_small() {
        let stream = std::mem::size_of::<super::super::stream::SpokeStream>();
        let session = std::mem::size_of::<Session>();
        eprintln!("spoke stream {stream} B, session {session} B");
        assert!(stream <= 24, "a spoke stream is {stream} bytes");
        assert!(session <= 448, "a spoke session is {session} bytes");
    }
}
