//! What every spoke stream of a replica shares ([`Inner`]) and the streams' tunables
//! ([`StreamConfig`]). A leaf of `grpc/spoke/`: the service and its sessions import it.

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::fanout::Fanout;
use crate::metrics::GrpcMetrics;
use crate::options::GrpcOptions;
use crate::service::Service;
use crate::service::clusters::spoke_auth::SpokeAuth;
use crate::service::reports::Reports;

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

/// What every stream of the replica shares.
pub(super) struct Inner {
    pub(super) service: Service,
    pub(super) fanout: Fanout,
    pub(super) reports: Arc<Reports>,
    pub(super) cfg: StreamConfig,
    pub(super) shutdown: CancellationToken,
    pub(super) metrics: GrpcMetrics,
    /// Token checks of connecting spokes, batched.
    pub(super) auth: SpokeAuth,
    /// Streams subscribed now.
    pub(super) live: AtomicUsize,
    /// Woken when `live` drops to zero.
    pub(super) none_live: Notify,
}
