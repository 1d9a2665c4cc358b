//! `fleetgate-demo` (also run as `fleetgate demo`): the whole system on one
//! machine — a throwaway PostgreSQL (unless DATABASE_URL is set), the hub, a
//! simulated fleet with a spoke per cluster, the example gates, and pushed
//! revisions so some changes are held. Ctrl-C (or SIGTERM) stops everything
//! and cleans up. Its own program, so the `fleetgate` CLI does not link the
//! hub, the spoke, the simulator or pgtemp.
#![forbid(unsafe_code)]

mod args;
mod banner;
mod blockers;
mod calendar;
mod error;
mod fleet;
mod hub;
mod nginx;
mod rollout;
mod system;
mod team;
mod wait;
mod warn;
mod webhook;

use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use tokio_util::sync::CancellationToken;

use fleetgate::error::Result;

use crate::args::DemoArgs;
use crate::error::other;

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
