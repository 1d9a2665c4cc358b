//! Command-line and environment configuration of `fleetgate-hub`.

use std::net::SocketAddr;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

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

/// `fleetgate-hub serve`.
#[derive(Debug, Clone, Args)]
pub struct ServeConfig {
    /// PostgreSQL URL.
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// Address of the REST API, dashboard, health and metrics endpoints.
    #[arg(long, env = "FLEETGATE_HTTP_ADDR", default_value = "0.0.0.0:8080")]
    pub http_addr: SocketAddr,
    /// Address of the gRPC server (spoke streams and admin API).
    #[arg(long, env = "FLEETGATE_GRPC_ADDR", default_value = "0.0.0.0:9090")]
    pub grpc_addr: SocketAddr,
    /// Ensures an admin API token named `bootstrap-admin` with this secret
    /// (at least 16 characters) at start, for bootstrap and scripts.
    #[arg(long, env = "FLEETGATE_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Maximum database connections of this replica.
    #[arg(long, env = "FLEETGATE_DB_MAX_CONNECTIONS", default_value_t = 20)]
    pub db_max_connections: u32,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "FLEETGATE_HTTP_BODY_LIMIT", default_value_t = 1024 * 1024)]
    pub http_body_limit: usize,
    /// Per-request timeout of the REST API, in seconds.
    #[arg(long, env = "FLEETGATE_HTTP_TIMEOUT_SECS", default_value_t = 30)]
    pub http_timeout_secs: u64,
    /// gRPC settings (TLS, keepalive, replica id, ...).
    #[command(flatten)]
    pub grpc: crate::grpc::GrpcOptions,
}

impl ServeConfig {
    /// A config for `database_url` with every other setting at its default
    /// and ephemeral loopback ports (tests).
    pub fn for_tests(database_url: impl Into<String>) -> Self {
        Self {
            database_url: database_url.into(),
            http_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            grpc_addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            admin_token: None,
            db_max_connections: 10,
            http_body_limit: 1024 * 1024,
            http_timeout_secs: 30,
            grpc: crate::grpc::GrpcOptions::default(),
        }
    }

    /// The REST request timeout.
    pub fn http_timeout(&self) -> Duration {
        Duration::from_secs(self.http_timeout_secs)
    }
}
