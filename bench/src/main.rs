//! `fleetgate-bench`: runs the scale benchmark and prints its table (or JSON).
//! Run it under `ulimit -n 20000` for 10,000 spokes.
#![forbid(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};
use fleetgate_bench::bins::Bins;
use fleetgate_bench::{BenchConfig, floor, swarm_process};

/// fleetgate scale benchmark: a real hub on a real PostgreSQL with thousands of
/// simulated spokes, against the physical floor.
#[derive(Debug, Parser)]
#[command(name = "fleetgate-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// Fleet sizes (simulated spokes), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,10000")]
    spokes: Vec<usize>,
    /// Short run: fewer flips, shorter measurement windows.
    #[arg(long)]
    quick: bool,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Gate flips per fleet size (default 10, quick 4).
    #[arg(long)]
    flips: Option<usize>,
    /// Another `fleetgate-hub` binary (e.g. built from the previous release):
    /// the status ingest is measured again with it in the same run (the hub is
    /// restarted with it and back), for a before/after ratio.
    #[arg(long)]
    baseline_hub: Option<PathBuf>,
    /// Skip the reconnect storm.
    #[arg(long)]
    no_storm: bool,
    /// Skip the second storm with spokes signing in with their clusters' JWTs
    /// (and its fleet's registration).
    #[arg(long)]
    no_jwt_storm: bool,
    /// What the JWT fleet's issuers sign with: rs256 (the service-account issuers of
    /// EKS, GKE, AKS and kubeadm clusters) or es256 (SPIRE's JWT-SVIDs).
    #[arg(long, value_enum, default_value_t = fleetgate_bench::jwt::JwtAlg::Rs256)]
    jwt_alg: fleetgate_bench::jwt::JwtAlg,
    /// Hub replicas on one PostgreSQL in the replicas phase (1 skips it).
    #[arg(long, default_value_t = 2)]
    replicas: usize,
    /// Skip the steady-state phase (idle fleet's database writes).
    #[arg(long)]
    no_steady: bool,
    /// Gates besides the bench gate over every bench cluster (its copies under other
    /// names; never flipped): every snapshot carries them, and every read of one reads them.
    #[arg(long, default_value_t = 0)]
    extra_gates: usize,
    /// Flux objects the real spoke governs (0 skips the spoke measurement).
    #[arg(long)]
    spoke_objects: Option<usize>,
    /// End to end: this many real fleetgate-spoke processes against one
    /// fleetgate-sim and the hub (0 skips; `--spokes 0` runs only this).
    #[arg(long, default_value_t = 0)]
    real_spokes: usize,
    /// Governed Flux objects (Kustomizations, HelmReleases) per real spoke.
    #[arg(long, default_value_t = 20)]
    objects_per_spoke: usize,
    /// Soak with the largest fleet for this long (e.g. 10m; `1m` for a quick
    /// check): a flip every 30 s, a report per spoke every 60 s.
    #[arg(long, value_parser = parse_duration)]
    soak: Option<Duration>,
}

/// A Go-style duration (`90s`, `10m`).
fn parse_duration(s: &str) -> Result<Duration, String> {
    fleetgate_policy::parse_duration(s)
        .map_err(|e| e.to_string())
        .and_then(|d| d.to_std().map_err(|e| e.to_string()))
}

#[derive(Debug, Subcommand)]
enum Command {
    /// The bare fan-out server (the floor); started by the benchmark itself.
    #[command(hide = true)]
    FloorServer {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long)]
        snapshot: PathBuf,
    },
    /// Simulated spokes in their own process; started by the benchmark itself.
    #[command(hide = true)]
    Swarm {
        /// One `cluster token` per line.
        #[arg(long)]
        creds: PathBuf,
        /// Hub gRPC addresses, dialled round-robin.
        #[arg(long, value_delimiter = ',', required = true)]
        addrs: Vec<SocketAddr>,
        /// Spokes making their first connection at once.
        #[arg(long, default_value_t = 64)]
        concurrency: usize,
    },
}

/// jemalloc, as in the hub: the swarm's 10,000 client streams spent about a
/// third of their CPU in glibc malloc/free during a reconnect storm (perf),
/// CPU the hub under measurement then did not get on a 2-core machine.
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> anyhow_free::Result {
    let cli = Cli::parse();
    match cli.command {
        Some(Command::FloorServer { addr, snapshot }) => {
            return floor::serve(addr, &snapshot).await.map_err(Into::into);
        }
        Some(Command::Swarm {
            creds,
            addrs,
            concurrency,
        }) => {
            return swarm_process::serve(&creds, &addrs, concurrency)
                .await
                .map_err(Into::into);
        }
        None => {}
    }
    let bins = Bins::locate(std::env::current_exe()?)?;
    let mut cfg = BenchConfig::new(cli.spokes, cli.quick, bins);
    if let Some(f) = cli.flips {
        cfg.flips = f.max(1);
    }
    if let Some(o) = cli.spoke_objects {
        cfg.spoke_objects = o;
    }
    cfg.extra_gates = cli.extra_gates;
    cfg.baseline_hub = cli.baseline_hub;
    cfg.storm = !cli.no_storm;
    cfg.jwt_storm = !cli.no_jwt_storm;
    cfg.jwt_alg = cli.jwt_alg;
    cfg.replicas = cli.replicas;
    cfg.real_spokes = cli.real_spokes;
    cfg.objects_per_spoke = cli.objects_per_spoke.max(1);
    cfg.soak = cli.soak.unwrap_or_default();
    if cli.no_steady {
        cfg.steady_window = std::time::Duration::ZERO;
    }
    let start = Instant::now();
    let progress = move |line: &str| eprintln!("[{:>6.1}s] {line}", start.elapsed().as_secs_f64());
    let report = fleetgate_bench::run(&cfg, &progress).await?;
    if cli.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).unwrap_or_default()
        );
    } else {
        print!("{}\n{}", report.table(), report.notes());
    }
    eprintln!("total {:.0} s", start.elapsed().as_secs_f64());
    Ok(())
}

/// `main`'s result without pulling in anyhow: print the error, exit 1.
mod anyhow_free {
    pub type Result = std::result::Result<(), Box<dyn std::error::Error>>;
}
