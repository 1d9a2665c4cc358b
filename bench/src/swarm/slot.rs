//! What the simulated spokes share with the swarm: their credentials, each
//! spoke's slot (what it observed, read by the benchmark), the events a swarm
//! in its own process sends, and why an attempt failed.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use fleetgate_proto::v1 as pb;
use tokio::sync::mpsc;

/// The metadata a spoke signing in with a JWT names its cluster in (the
/// hub's `fleetgate-cluster`).
pub const CLUSTER_METADATA: &str = "fleetgate-cluster";

/// What a spoke observed, as it happens (for a swarm in its own process).
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// Spoke `i` starts connection attempt `attempt` (1 = first since a
    /// message) at `at` (wall clock), dialling the swarm's address `addr`
    /// (its index).
    Attempt {
        i: usize,
        attempt: u32,
        addr: usize,
        at: std::time::SystemTime,
    },
    /// Spoke `i`'s connection (TCP and HTTP/2 handshake) is up at `at`.
    Connected { i: usize, at: std::time::SystemTime },
    /// The hub answered spoke `i`'s stream with its response headers at `at`:
    /// it authenticated the spoke (its handler returned).
    Accepted { i: usize, at: std::time::SystemTime },
    /// Spoke `i` received a snapshot with `revision` at `at` (wall clock).
    Snapshot {
        i: usize,
        revision: u64,
        at: std::time::SystemTime,
    },
    /// Spoke `i`'s attempt failed (no message arrived on it), and why; `addr`:
    /// the address it dialled (its index), when the swarm dials several.
    Failed {
        i: usize,
        why: Failure,
        addr: Option<usize>,
    },
    /// Spoke `i`'s stream ended (closed by the hub or broken) at `at`.
    Ended { i: usize, at: std::time::SystemTime },
}

/// Why an attempt failed: what tells the reconnect schedule's share of a storm from
/// the server's (refused while it was down, or turned away or dropped once up).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The connect was refused: nothing listening.
    Refused,
    /// The TCP or HTTP/2 connect failed otherwise (timed out).
    Connect,
    /// The server answered the stream with this error status.
    Status(tonic::Code),
    /// The stream ended with status OK before any message.
    EndedEmpty,
    /// The stream broke (error, reset) before any message.
    BrokeEmpty,
}

impl Failure {
    /// One word, for the report and the swarm process's output.
    pub fn label(self) -> String {
        match self {
            Failure::Refused => "refused".into(),
            Failure::Connect => "connect".into(),
            Failure::Status(code) => format!("status-{code:?}"),
            Failure::EndedEmpty => "ended-empty".into(),
            Failure::BrokeEmpty => "broke-empty".into(),
        }
    }

    /// [`Failure::label`], and `@` and the index of the address dialled when the
    /// swarm dials several (`refused@1`: refused by the second replica).
    pub fn label_at(self, addr: Option<usize>) -> String {
        match addr {
            Some(a) => format!("{}@{a}", self.label()),
            None => self.label(),
        }
    }
}

/// Failed attempts by [`Failure::label_at`], over a swarm's life.
pub type Failures = Arc<Mutex<std::collections::BTreeMap<String, u64>>>;

/// Counts one failed attempt.
pub(crate) fn count_failure(failures: &Failures, label: String) {
    *failures
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(label)
        .or_insert(0) += 1;
}

/// One simulated spoke's identity: a cluster token, or a JWT of the
/// cluster's own issuer; either goes with the `fleetgate-cluster` metadata
/// naming the cluster, as the real spoke sends it.
#[derive(Debug, Clone)]
pub struct Credential {
    pub cluster: String,
    pub token: String,
}

/// What one simulated spoke observed (read by the scenarios).
#[derive(Debug, Default)]
pub struct Slot {
    /// Revision of the newest snapshot held.
    pub revision: AtomicU64,
    /// Snapshots received so far.
    pub snapshots: AtomicU64,
    /// When the newest snapshot arrived, µs since the swarm's epoch.
    pub received_us: AtomicU64,
    /// Connection attempts since the last successful message.
    pub attempts: AtomicU32,
    /// Most attempts any single reconnect needed.
    pub max_attempts: AtomicU32,
    /// The address (its index in the swarm's) the latest attempt dialled.
    pub addr: AtomicU32,
    /// 1 + the address index the first attempt since [`Slot::clear_first_addr`]
    /// dialled (0: no attempt since).
    pub first_addr: AtomicU32,
    /// The latest attempt's phases, µs since the swarm's epoch: dialled
    /// (attempt began), connected (TCP and HTTP/2 up), accepted (the hub's
    /// response headers: authenticated). After a re-sync they are those of
    /// the attempt that got the snapshot.
    pub dialled_us: AtomicU64,
    pub connected_us: AtomicU64,
    pub accepted_us: AtomicU64,
    /// Streams opened (Hello sent) so far.
    pub sessions: AtomicU64,
    /// Streams that ended while the swarm was running (dropped or closed by the hub).
    pub ends: AtomicU64,
    /// When the latest of them ended, µs since the swarm's epoch.
    pub ended_us: AtomicU64,
    /// Sender into the current stream (reports).
    pub(super) outbound: Mutex<Option<mpsc::Sender<pb::SpokeMessage>>>,
}

impl Slot {
    /// Connection attempt `attempt` begins, dialling address `addr` (its index).
    pub(crate) fn attempt(&self, attempt: u32, addr: usize) {
        let addr = u32::try_from(addr).unwrap_or(u32::MAX - 1);
        self.attempts.store(attempt, Ordering::Release);
        self.max_attempts.fetch_max(attempt, Ordering::AcqRel);
        self.addr.store(addr, Ordering::Release);
        let _ = self
            .first_addr
            .compare_exchange(0, addr + 1, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Forgets the first address dialled (the next attempt's becomes it).
    pub fn clear_first_addr(&self) {
        self.first_addr.store(0, Ordering::Release);
    }

    /// The address index the first attempt since [`Slot::clear_first_addr`] dialled.
    pub fn first_addr(&self) -> Option<u32> {
        self.first_addr.load(Ordering::Acquire).checked_sub(1)
    }

    /// A snapshot with `revision` arrived at `at_us` (µs since the swarm's epoch).
    pub(crate) fn snapshot(&self, revision: u64, at_us: u64, total: &AtomicU64) {
        self.received_us.store(at_us, Ordering::Release);
        self.revision.store(revision, Ordering::Release);
        self.snapshots.fetch_add(1, Ordering::AcqRel);
        total.fetch_add(1, Ordering::AcqRel);
    }
}
