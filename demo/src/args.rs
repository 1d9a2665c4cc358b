//! The demo's command line.

use clap::Parser;

use fleetgate::error::Result;

/// fleetgate-demo — the whole fleetgate system on one machine: PostgreSQL,
/// hub, simulated fleet with a spoke per cluster, the example gates. Ctrl-C
/// stops and cleans up.
#[derive(Debug, Parser)]
#[command(name = "fleetgate-demo", version, about)]
pub struct DemoArgs {
    /// Number of simulated clusters.
    #[arg(long, default_value_t = 20)]
    pub clusters: usize,
    /// Flux objects per cluster (sources, Kustomizations, HelmReleases).
    #[arg(long, default_value_t = 12)]
    pub objects_per_cluster: usize,
    /// Hub REST + dashboard address.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub http_addr: std::net::SocketAddr,
    /// Hub gRPC address.
    #[arg(long, default_value = "127.0.0.1:9090")]
    pub grpc_addr: std::net::SocketAddr,
    /// Simulated Flux reconcile interval (fast-forward).
    #[arg(long, default_value = "30s", value_parser = parse_std_duration)]
    pub reconcile_interval: std::time::Duration,
    /// Run as if it were this instant (RFC 3339, e.g. 2026-11-29T12:00:00Z):
    /// the hub's and the spokes' clocks stand still there, so you can see what
    /// the gates do on another day of the week.
    #[arg(long)]
    pub at: Option<chrono::DateTime<chrono::Utc>>,
}

fn parse_std_duration(s: &str) -> Result<std::time::Duration, String> {
    fleetgate_policy::parse_duration(s)
        .map_err(|e| e.message)?
        .to_std()
        .map_err(|e| e.to_string())
}
