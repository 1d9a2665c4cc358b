//! The APIs' own options: the HTTP side (`HttpOptions`) and the gRPC side with the replica's
//! settings (`GrpcOptions`, `LocalGates`). The binary's configuration flattens them into
//! `fleetgate-hub serve`; nothing here imports it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, ValueEnum};
use fleetgate_hub_core::options::parse_std_duration;

/// Defaults of the flags below.
pub mod defaults {
    /// `--http-body-limit`: 1 MiB.
    pub const HTTP_BODY_LIMIT: usize = 1024 * 1024;
    /// `--http-timeout-secs`.
    pub const HTTP_TIMEOUT_SECS: u64 = 30;
    /// `--spoke-keepalive`.
    pub const SPOKE_KEEPALIVE: &str = "15s";
    /// `--spoke-stream-max-age`.
    pub const SPOKE_STREAM_MAX_AGE: &str = "30m";
    /// `--report-flush-ms`.
    pub const REPORT_FLUSH_MS: u64 = 250;
    /// `--rollout-tick`.
    pub const ROLLOUT_TICK: &str = "1s";
    /// See `liveness::LEASE_EVERY`.
    pub const REPLICA_LEASE_EVERY: &str = "5s";
    /// `--local-gates`: today's behaviour, the hub's view stays complete.
    pub const LOCAL_GATES: super::LocalGates = super::LocalGates::Ignore;
}

/// What a hub-connected spoke does with Gate objects made in its cluster
/// (delivered from Git, not mirrored from the hub): `--local-gates`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LocalGates {
    /// Reported, shown read-only, not enforced (Ready=False, NotEnforced).
    Ignore,
    /// Enforced beside the hub's gates (a hub gate of the same name wins).
    Enforce,
}

/// HTTP flags of `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct HttpOptions {
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "FLEETGATE_HTTP_BODY_LIMIT", default_value_t = defaults::HTTP_BODY_LIMIT)]
    pub http_body_limit: usize,
    /// Per-request timeout of the REST API, in seconds.
    #[arg(long, env = "FLEETGATE_HTTP_TIMEOUT_SECS", default_value_t = defaults::HTTP_TIMEOUT_SECS)]
    pub http_timeout_secs: u64,
}

impl Default for HttpOptions {
    fn default() -> Self {
        Self {
            http_body_limit: defaults::HTTP_BODY_LIMIT,
            http_timeout_secs: defaults::HTTP_TIMEOUT_SECS,
        }
    }
}

impl HttpOptions {
    /// The REST request timeout.
    pub fn timeout(&self) -> Duration {
        Duration::from_secs(self.http_timeout_secs)
    }
}

/// gRPC flags of `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct GrpcOptions {
    /// PEM certificate chain for the gRPC listener; with --grpc-tls-key enables TLS.
    #[arg(long, env = "FLEETGATE_GRPC_TLS_CERT", requires = "grpc_tls_key")]
    pub grpc_tls_cert: Option<PathBuf>,
    /// PEM private key for --grpc-tls-cert.
    #[arg(long, env = "FLEETGATE_GRPC_TLS_KEY", requires = "grpc_tls_cert")]
    pub grpc_tls_key: Option<PathBuf>,
    /// PEM CA bundle: require client certificates signed by it (mTLS).
    #[arg(long, env = "FLEETGATE_GRPC_CLIENT_CA", requires = "grpc_tls_cert")]
    pub grpc_client_ca: Option<PathBuf>,
    /// This replica's id in `clusters.connected_replica` (default: hostname).
    #[arg(long, env = "FLEETGATE_REPLICA_ID")]
    pub replica_id: Option<String>,
    /// Interval of keepalive messages on spoke streams (Go-style duration).
    #[arg(long, env = "FLEETGATE_SPOKE_KEEPALIVE", default_value = defaults::SPOKE_KEEPALIVE, value_parser = parse_std_duration)]
    pub spoke_keepalive: Duration,
    /// Spoke streams end cleanly after this age ±10 % so spokes re-balance.
    #[arg(long, env = "FLEETGATE_SPOKE_STREAM_MAX_AGE", default_value = defaults::SPOKE_STREAM_MAX_AGE, value_parser = parse_std_duration)]
    pub spoke_stream_max_age: Duration,
    /// How long status reports are gathered before one batched write (ms).
    #[arg(long, env = "FLEETGATE_REPORT_FLUSH_MS", default_value_t = defaults::REPORT_FLUSH_MS)]
    pub report_flush_ms: u64,
    /// How often the rollout driver steps every rollout (releases, health, soak).
    #[arg(long, env = "FLEETGATE_ROLLOUT_TICK", default_value = defaults::ROLLOUT_TICK, value_parser = parse_std_duration)]
    pub rollout_tick: Duration,
    /// How often this replica renews its lease; its spokes count as connected
    /// until 6 intervals after the last renewal (a crashed replica's spokes
    /// then read as disconnected).
    #[arg(long, env = "FLEETGATE_REPLICA_LEASE_EVERY", default_value = defaults::REPLICA_LEASE_EVERY, value_parser = parse_std_duration)]
    pub replica_lease_every: Duration,
    /// Gate objects made in a hub-connected cluster: `ignore` (reported and
    /// shown, not enforced) or `enforce` (beside the hub's gates). Sent to
    /// spokes in their snapshots; set the same on every replica.
    #[arg(long, env = "FLEETGATE_LOCAL_GATES", value_enum, default_value_t = defaults::LOCAL_GATES)]
    pub local_gates: LocalGates,
    /// The audience spokes' own JWTs must carry (clusters registered with an issuer: the
    /// `audience` of the spoke's projected token or JWT-SVID).
    #[arg(long, env = "FLEETGATE_SPOKE_AUDIENCE", default_value = fleetgate_hub_core::identity::token::DEFAULT_AUDIENCE)]
    pub spoke_audience: String,
}

impl Default for GrpcOptions {
    fn default() -> Self {
        let duration = |s: &str| parse_std_duration(s).expect("valid default duration");
        Self {
            grpc_tls_cert: None,
            grpc_tls_key: None,
            grpc_client_ca: None,
            replica_id: None,
            spoke_keepalive: duration(defaults::SPOKE_KEEPALIVE),
            spoke_stream_max_age: duration(defaults::SPOKE_STREAM_MAX_AGE),
            report_flush_ms: defaults::REPORT_FLUSH_MS,
            rollout_tick: duration(defaults::ROLLOUT_TICK),
            replica_lease_every: duration(defaults::REPLICA_LEASE_EVERY),
            local_gates: defaults::LOCAL_GATES,
            spoke_audience: fleetgate_hub_core::identity::token::DEFAULT_AUDIENCE.into(),
        }
    }
}

impl GrpcOptions {
    /// The replica id: the flag, else the hostname, else a random id.
    pub fn replica(&self) -> String {
        self.replica_id
            .clone()
            .or_else(|| std::env::var("HOSTNAME").ok().filter(|h| !h.is_empty()))
            .or_else(|| {
                std::fs::read_to_string("/etc/hostname")
                    .ok()
                    .map(|h| h.trim().to_string())
                    .filter(|h| !h.is_empty())
            })
            .unwrap_or_else(|| format!("hub-{}", uuid::Uuid::new_v4().simple()))
    }
}
