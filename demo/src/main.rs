//! `fleetgate-demo` (also run as `fleetgate demo`): the whole system on one
//! machine — a throwaway PostgreSQL (unless DATABASE_URL is set), the hub, a
//! simulated fleet with a spoke per cluster, the example gates, and pushed
//! revisions so some changes are held. Ctrl-C (or SIGTERM) stops everything
//! and cleans up. Its own program, so the `fleetgate` CLI does not link the
//! hub, the spoke, the simulator or pgtemp.
#![forbid(unsafe_code)]

mod banner;
mod blockers;
mod calendar;
mod fleet;
mod hub;
mod nginx;
mod rollout;
mod system;
mod team;
mod wait;
mod warn;
mod webhook;

use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use fleetgate::error::{Error, Result};

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

fn main() -> ExitCode {
    let args = DemoArgs::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: starting the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", e.render());
            e.to_exit_code()
        }
    }
}

pub(crate) fn other(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("demo: {what}: {e}"))
}

/// `fga_` + 64 hex digits from the OS's random source.
pub(crate) fn random_token() -> Result<String> {
    let mut buf = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| other("random token", e))?;
    Ok(format!(
        "fga_{}",
        buf.iter().map(|b| format!("{b:02x}")).collect::<String>()
    ))
}

pub async fn run(args: &DemoArgs) -> Result<()> {
    let started = Instant::now();
    // The components log through tracing; warnings only unless RUST_LOG says
    // more. The 20 spokes' expected start-up and shutdown warnings ("no
    // snapshot yet", "hub connection lost") would bury the demo's output, so
    // only their errors show by default.
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn,fleetgate_spoke=error"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
    let shutdown = CancellationToken::new();
    tokio::spawn(cancel_on_signal(shutdown.clone()));

    // 1. PostgreSQL.
    let (database_url, _pg) = match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => {
            println!("• PostgreSQL: using DATABASE_URL");
            (url, None)
        }
        _ => {
            let pg = tokio::task::spawn_blocking(fleetgate_pgtemp::TempPostgres::start)
                .await
                .map_err(|e| other("PostgreSQL", e))?
                .map_err(|e| other("PostgreSQL", e))?;
            println!(
                "• PostgreSQL: throwaway server at {} (files in {})",
                pg.url,
                pg.dir().display()
            );
            (pg.url.clone(), Some(pg))
        }
    };
    let result = system::run(args, &database_url, &shutdown, started).await;
    // Stop whatever still runs; `_pg` is dropped (server stopped, files
    // removed) when this function returns.
    shutdown.cancel();
    result
}

async fn cancel_on_signal(token: CancellationToken) {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
    token.cancel();
}
