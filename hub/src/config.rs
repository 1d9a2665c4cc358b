//! Command-line and environment configuration of `fleetgate-hub`.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

pub use fleetgate_hub_api::options::{GrpcOptions, HttpOptions, LocalGates};
pub use fleetgate_hub_core::options::parse_std_duration;

/// fleetgate hub: gate policies in PostgreSQL, REST API and gRPC to spokes.
#[derive(Debug, Parser)]
#[command(name = "fleetgate-hub", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// What to do.
// Parsed once at start: the size difference between variants is irrelevant.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Apply migrations, then serve REST (and gRPC) until SIGTERM/SIGINT.
    Serve(ServeConfig),
    /// Apply pending database migrations and exit.
    Migrate(MigrateConfig),
}

/// `fleetgate-hub migrate`.
#[derive(Debug, Clone, Args)]
pub struct MigrateConfig {
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
}

/// The defaults of the hub's settings: the binary's own below, the APIs' re-exported from
/// the options they own (`fleetgate_hub_api::options::defaults`); the flags and the
/// `Default` impls read them.
pub mod defaults {
    /// `--http-addr`.
    pub const HTTP_ADDR: &str = "0.0.0.0:8080";
    /// `--grpc-addr`.
    pub const GRPC_ADDR: &str = "0.0.0.0:9090";
    /// `--db-max-connections`.
    pub const DB_MAX_CONNECTIONS: u32 = 20;
    /// `--listen-backlog`: as many as the kernel allows (it caps the value at
    /// `net.core.somaxconn`, 4096 on current Linux).
    pub const LISTEN_BACKLOG: u32 = 65_535;
    // The APIs' own defaults, kept under this path for callers.
    pub use fleetgate_hub_api::options::defaults::*;
}

/// `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// Address of the REST API, dashboard, health and metrics endpoints.
    #[arg(long, env = "FLEETGATE_HTTP_ADDR", default_value = defaults::HTTP_ADDR)]
    pub http_addr: SocketAddr,
    /// Address of the gRPC server (spoke streams and admin API).
    #[arg(long, env = "FLEETGATE_GRPC_ADDR", default_value = defaults::GRPC_ADDR)]
    pub grpc_addr: SocketAddr,
    /// Ensures an admin API token named `bootstrap-admin` with this secret
    /// (at least 16 characters) at start, for bootstrap and scripts.
    #[arg(long, env = "FLEETGATE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Identity settings file (YAML): the OpenID provider people sign in
    /// with, trusted JWT issuers, role mapping. See docs/identity.md.
    #[arg(long, env = "FLEETGATE_IDENTITY_CONFIG")]
    pub identity_config: Option<PathBuf>,
    /// Maximum database connections of this replica.
    #[arg(long, env = "FLEETGATE_DB_MAX_CONNECTIONS", default_value_t = defaults::DB_MAX_CONNECTIONS)]
    pub db_max_connections: u32,
    /// Listen backlog of the HTTP and gRPC ports (connections the kernel
    /// queues before the hub accepts them; capped at `net.core.somaxconn`).
    #[arg(long, env = "FLEETGATE_LISTEN_BACKLOG", default_value_t = defaults::LISTEN_BACKLOG)]
    pub listen_backlog: u32,
    /// HTTP settings (body limit, timeout).
    #[command(flatten)]
    pub http: HttpOptions,
    /// gRPC settings (TLS, keepalive, replica id, ...).
    #[command(flatten)]
    pub grpc: GrpcOptions,
    /// Outbound calls (webhooks, feeds, identity providers): `--egress-*`.
    #[command(flatten)]
    pub egress: crate::egress::EgressOptions,
    /// Notifications and webhooks: `--webhook-*`, `--notify-*`, `--public-url`.
    #[command(flatten)]
    pub notify: crate::notify::NotifyOptions,
    /// Calendar feeds: `--calendar-*`.
    #[command(flatten)]
    pub calendar: crate::calendar_sync::CalendarOptions,
    /// Allow admission webhooks (change-ticket checks) on loopback and private
    /// addresses, e.g. an adapter running beside the hub. Link-local stays refused.
    #[arg(long, env = "FLEETGATE_ADMISSION_ALLOW_PRIVATE")]
    pub admission_allow_private: bool,
    /// Where "now" comes from: the system clock unless a program running the
    /// hub in-process injects one (the demo's `--at`, tests).
    #[arg(skip)]
    pub clock: Option<std::sync::Arc<dyn crate::clock::Clock>>,
}

impl ServeConfig {
    /// What `fleetgate-hub serve --database-url <database_url>` runs with:
    /// every other setting at its default ([`defaults`]), for programs that
    /// run a hub in-process (the demo).
    pub fn new(database_url: impl Into<String>) -> Self {
        let addr = |s: &str| s.parse().expect("valid default address");
        Self {
            database_url: database_url.into(),
            http_addr: addr(defaults::HTTP_ADDR),
            grpc_addr: addr(defaults::GRPC_ADDR),
            admin_token: None,
            identity_config: None,
            db_max_connections: defaults::DB_MAX_CONNECTIONS,
            listen_backlog: defaults::LISTEN_BACKLOG,
            http: HttpOptions::default(),
            grpc: GrpcOptions::default(),
            egress: crate::egress::EgressOptions::default(),
            notify: crate::notify::NotifyOptions::default(),
            calendar: crate::calendar_sync::CalendarOptions::default(),
            admission_allow_private: false,
            clock: None,
        }
    }
}
