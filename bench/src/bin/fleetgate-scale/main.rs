//! `fleetgate-scale`: the paths added in the last rounds, measured at fleet scale (10,000
//! clusters) against a real hub process on a real PostgreSQL:
//!
//! - `scoped`: a team's fleet status (REST `GET /api/v1/status/clusters`, the dashboard's
//!   first page, gRPC `GetFleetStatus`) with its 100 clusters in a fleet of 100 and in a
//!   fleet of 10,000; the ratio is what the scope costs beyond the team's share.
//! - `webhooks`: a gate edge on every cluster reaching 10 real HTTP receivers, half of
//!   them with cluster selectors; and an edge on one cluster in the same fleet.
//! - `dashboard`: the dashboard's fleet page (`GET /api/v1/dashboard/fleet`, 100 rows) at
//!   10,000 clusters × 10 gates, as an admin and as a team.
//! - `snapshot`: the largest snapshot the budgets allow, built by the hub and sent to a
//!   spoke over gRPC.
//! - `inproc`: the in-process phases of `scoped` (the reader's fleet read, summary, page, and
//!   the live feed's unscoped fleet view) on an existing database (`--database-url`, e.g. one
//!   a `scoped` run or an operator seeded) as the holder of `--token`.
//!
//! Every figure is a distribution over rounds in one run, printed with the machine's load
//! average (the machine may be shared). `--baseline-hub PATH` runs an older hub build
//! beside this one on the same database (scoped, dashboard) or before it on a fleet of its
//! own (webhooks) and prints both. Run: `cargo run --release -p fleetgate-bench --bin
//! fleetgate-scale -- [scoped|webhooks|snapshot|all]`.
#![forbid(unsafe_code)]

mod common;
mod dashboard;
mod hub;
mod inproc;
mod scoped;
mod seed;
mod snapshot;
mod webhooks;

use clap::{Parser, ValueEnum};
use common::{Result, load};

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Phase {
    Scoped,
    Webhooks,
    Dashboard,
    Snapshot,
    Inproc,
    All,
}

/// The paths added in the last rounds, at fleet scale.
#[derive(Debug, Parser)]
#[command(name = "fleetgate-scale", about)]
struct Cli {
    /// Which measurement.
    #[arg(value_enum, default_value = "all")]
    phase: Phase,
    /// Clusters in the large fleet.
    #[arg(long, default_value_t = 10_000)]
    clusters: usize,
    /// Clusters per team (the scoped reader's share, and the small fleet).
    #[arg(long, default_value_t = 100)]
    team: usize,
    /// Measured rounds per figure.
    #[arg(long, default_value_t = 15)]
    rounds: usize,
    /// Another `fleetgate-hub` binary (e.g. the previous commit's) measured beside this
    /// build's, for a before/after in one run (scoped, dashboard, webhooks).
    #[arg(long)]
    baseline_hub: Option<std::path::PathBuf>,
    /// `inproc`: the database to read (migrated and seeded already).
    #[arg(long, env = "DATABASE_URL")]
    database_url: Option<String>,
    /// `inproc`: the reader's API token (stored in that database).
    #[arg(long)]
    token: Option<String>,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    if cli.phase == Phase::Inproc {
        let url = cli.database_url.ok_or("inproc needs --database-url")?;
        let pool = sqlx::postgres::PgPoolOptions::new()
            .max_connections(4)
            .connect(&url)
            .await?;
        let token = cli.token.as_deref().ok_or("inproc needs --token")?;
        println!("in process, load average {} at start", load());
        let p = inproc::measure(&pool, token, cli.rounds).await?;
        inproc::print(&format!("reader of --token, load {}", load()), &p);
        return Ok(());
    }
    let profile = if cfg!(debug_assertions) {
        "debug"
    } else {
        "release"
    };
    let bin = hub::hub_binary()?;
    println!(
        "fleetgate-scale ({profile} build), {} cores, load average {} at start",
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        load()
    );
    if matches!(cli.phase, Phase::Scoped | Phase::All) {
        let base = cli.baseline_hub.as_deref();
        scoped::run(&bin, base, cli.clusters, cli.team, cli.rounds).await?;
    }
    if matches!(cli.phase, Phase::Webhooks | Phase::All) {
        // With a baseline, its hub on a fleet of its own first (two replicas on one
        // database would share the deliveries), then this build's.
        if let Some(base) = &cli.baseline_hub {
            println!("webhooks, baseline build:");
            webhooks::run(base, cli.clusters, cli.rounds.min(7)).await?;
            println!("webhooks, this build:");
        }
        webhooks::run(&bin, cli.clusters, cli.rounds.min(7)).await?;
    }
    if matches!(cli.phase, Phase::Dashboard | Phase::All) {
        let base = cli.baseline_hub.as_deref();
        dashboard::run(&bin, base, cli.clusters, cli.rounds).await?;
    }
    if matches!(cli.phase, Phase::Snapshot | Phase::All) {
        snapshot::run(&bin, cli.rounds.min(7)).await?;
    }
    Ok(())
}
