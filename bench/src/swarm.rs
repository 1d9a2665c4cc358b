//! Simulated spokes: N real gRPC streams over loopback, one HTTP/2 connection
//! and one bearer token each, in this process. They speak the spoke protocol
//! (Hello with the held revision, then reports on demand), record when each
//! snapshot arrived, and reconnect on the real spoke's schedule
//! ([`fleetgate_spoke::hub::reconnect`]).
//! With several hub addresses each spoke dials them round-robin (spoke `i`
//! starts at address `i`), as a load balancer in front of replicas would
//! spread them. [`crate::swarm_process`] runs a swarm in a process of its own
//! and mirrors its slots here.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use fleetgate_proto::v1::{self as pb, spoke_message};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::{Error, Result};

mod slot;
mod spoke;

pub(crate) use slot::count_failure;
pub use slot::{CLUSTER_METADATA, Credential, Event, Failure, Failures, Slot};
use spoke::SimSpoke;

/// A set of simulated spokes against one gRPC address.
pub struct Swarm {
    pub slots: Arc<Vec<Arc<Slot>>>,
    epoch: Instant,
    /// Snapshots received by all spokes together.
    total: Arc<AtomicU64>,
    /// Failed attempts by why (`Failure::label`).
    pub failures: Failures,
    cancel: CancellationToken,
    tasks: JoinSet<()>,
    /// Where spokes report what they observe (a swarm in its own process).
    events: Option<mpsc::UnboundedSender<Event>>,
}

impl Swarm {
    /// An empty swarm; `add` connects spokes.
    pub fn new() -> Self {
        Self {
            slots: Arc::new(Vec::new()),
            epoch: Instant::now(),
            total: Arc::new(AtomicU64::new(0)),
            failures: Failures::default(),
            cancel: CancellationToken::new(),
            tasks: JoinSet::new(),
            events: None,
        }
    }

    /// An empty swarm whose spokes send every [`Event`] to `events`.
    pub fn with_events(events: mpsc::UnboundedSender<Event>) -> Self {
        Self {
            events: Some(events),
            ..Self::new()
        }
    }

    /// Number of spokes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether the swarm has no spokes.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The instant `t` as µs since the epoch (the clock of `Slot::received_us`).
    pub fn micros(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.epoch).as_micros()).unwrap_or(u64::MAX)
    }

    /// `Slot::received_us` as a duration after `t`.
    pub fn since(&self, t: Instant, received_us: u64) -> Duration {
        Duration::from_micros(received_us.saturating_sub(self.micros(t)))
    }

    /// Snapshots received by all spokes together.
    pub fn total_snapshots(&self) -> u64 {
        self.total.load(Ordering::Acquire)
    }

    /// Starts spokes for `creds` against `addr`, `concurrency` connecting at a
    /// time, and waits (≤ `bound`) until each holds a first snapshot.
    pub async fn add(
        &mut self,
        addr: SocketAddr,
        creds: &[Credential],
        concurrency: usize,
        bound: Duration,
    ) -> Result<()> {
        self.add_spread(&[addr], creds, concurrency, bound).await
    }

    /// [`Swarm::add`] dialling `addrs` round-robin.
    pub async fn add_spread(
        &mut self,
        addrs: &[SocketAddr],
        creds: &[Credential],
        concurrency: usize,
        bound: Duration,
    ) -> Result<()> {
        if addrs.is_empty() {
            return Err(Error::setup("a swarm needs at least one hub address"));
        }
        let first_new = self.len();
        self.start_spread(addrs, creds, concurrency);
        self.wait_first_snapshots(first_new, bound).await
    }

    /// Starts spokes for `creds` dialling `addrs` round-robin, without waiting.
    pub fn start_spread(&mut self, addrs: &[SocketAddr], creds: &[Credential], concurrency: usize) {
        let addrs: Arc<[SocketAddr]> = addrs.into();
        let first_new = self.len();
        let new = self.push_slots(creds.len());
        let gate = Arc::new(tokio::sync::Semaphore::new(concurrency.max(1)));
        for (k, (cred, slot)) in creds.iter().cloned().zip(new).enumerate() {
            let spoke = SimSpoke {
                index: first_new + k,
                addrs: addrs.clone(),
                cred,
                slot,
                epoch: self.epoch,
                total: self.total.clone(),
                failures: self.failures.clone(),
                cancel: self.cancel.clone(),
                connect_gate: Some(gate.clone()),
                events: self.events.clone(),
            };
            self.tasks.spawn(spoke.run());
        }
    }

    /// Appends `n` fresh slots; returns them.
    pub(crate) fn push_slots(&mut self, n: usize) -> Vec<Arc<Slot>> {
        let mut slots: Vec<Arc<Slot>> = self.slots.iter().cloned().collect();
        let new: Vec<Arc<Slot>> = (0..n).map(|_| Arc::new(Slot::default())).collect();
        slots.extend(new.iter().cloned());
        self.slots = Arc::new(slots);
        new
    }

    /// The counter of all snapshots received, and the token that stops the swarm.
    pub(crate) fn handles(&self) -> (Arc<AtomicU64>, CancellationToken) {
        (self.total.clone(), self.cancel.clone())
    }

    /// Runs `task` until the swarm shuts down (it should watch the cancel token).
    pub(crate) fn spawn(&mut self, task: impl std::future::Future<Output = ()> + Send + 'static) {
        self.tasks.spawn(task);
    }

    /// Waits (≤ `bound`) until every slot from `first_new` on holds a snapshot.
    pub(crate) async fn wait_first_snapshots(
        &self,
        first_new: usize,
        bound: Duration,
    ) -> Result<()> {
        let deadline = Instant::now() + bound;
        loop {
            let missing = self.slots[first_new..]
                .iter()
                .filter(|s| s.snapshots.load(Ordering::Acquire) == 0)
                .count();
            if missing == 0 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!(
                    "{missing} of {} spokes without a first snapshot after {bound:?}",
                    self.len() - first_new
                )));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Per-spoke snapshot counts now (a baseline for [`Swarm::wait_all_past`]).
    pub fn snapshot_counts(&self) -> Vec<u64> {
        self.slots
            .iter()
            .map(|s| s.snapshots.load(Ordering::Acquire))
            .collect()
    }

    /// Waits (≤ `bound`) until every spoke received a snapshot after `base`
    /// (from [`Swarm::snapshot_counts`]); returns each spoke's arrival time.
    pub async fn wait_all_past(&self, base: &[u64], bound: Duration) -> Result<Vec<u64>> {
        let base_total: u64 = base.iter().sum();
        let n = base.len() as u64;
        let deadline = Instant::now() + bound;
        loop {
            // Cheap check first; the per-slot scan only when it can succeed.
            if self.total_snapshots() >= base_total + n {
                let done = self
                    .slots
                    .iter()
                    .zip(base)
                    .all(|(s, b)| s.snapshots.load(Ordering::Acquire) > *b);
                if done {
                    return Ok(self
                        .slots
                        .iter()
                        .map(|s| s.received_us.load(Ordering::Acquire))
                        .collect());
                }
            }
            if Instant::now() > deadline {
                let missing = self
                    .slots
                    .iter()
                    .zip(base)
                    .filter(|(s, b)| s.snapshots.load(Ordering::Acquire) <= **b)
                    .count();
                return Err(Error::Timeout(format!(
                    "{missing} of {n} spokes did not receive the new snapshot within {bound:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    /// Waits (≤ `bound`) until every spoke holds `revision` or newer; returns
    /// each spoke's arrival time of it.
    pub async fn wait_all_at(&self, revision: u64, bound: Duration) -> Result<Vec<u64>> {
        let deadline = Instant::now() + bound;
        loop {
            let missing = self
                .slots
                .iter()
                .filter(|s| s.revision.load(Ordering::Acquire) < revision)
                .count();
            if missing == 0 {
                return Ok(self
                    .slots
                    .iter()
                    .map(|s| s.received_us.load(Ordering::Acquire))
                    .collect());
            }
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!(
                    "{missing} of {} spokes not at revision {revision} within {bound:?}",
                    self.len()
                )));
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }

    /// Sends `report` on spoke `i`'s current stream; false if it has none or
    /// its queue is full.
    pub fn report(&self, i: usize, report: pb::StatusReport) -> bool {
        let Some(slot) = self.slots.get(i) else {
            return false;
        };
        let tx = slot.outbound.lock().unwrap_or_else(|e| e.into_inner());
        tx.as_ref().is_some_and(|tx| {
            tx.try_send(pb::SpokeMessage {
                msg: Some(spoke_message::Msg::Report(report)),
            })
            .is_ok()
        })
    }

    /// Ends every stream and waits for the tasks.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        while self.tasks.join_next().await.is_some() {}
    }
}

impl Default for Swarm {
    fn default() -> Self {
        Self::new()
    }
}
