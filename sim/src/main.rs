//! `fleetgate-sim`: runs simulated clusters with seeded Flux objects until SIGINT/SIGTERM,
//! printing one `cluster URL kubeconfig` line per cluster.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use fleetgate_sim::{Sim, SimConfig};

#[derive(Debug, Parser)]
#[command(
    name = "fleetgate-sim",
    about = "Simulated Kubernetes clusters running Flux"
)]
struct Args {
    /// Number of clusters (named cluster-000, cluster-001, ...).
    #[arg(long, env = "FLEETGATE_SIM_CLUSTERS", default_value_t = 1)]
    clusters: usize,
    /// Flux objects seeded into each cluster.
    #[arg(long, env = "FLEETGATE_SIM_OBJECTS_PER_CLUSTER", default_value_t = 10)]
    objects_per_cluster: usize,
    /// Directory to write one kubeconfig per cluster into (`<cluster>.yaml`).
    #[arg(long, env = "FLEETGATE_SIM_KUBECONFIG_DIR")]
    kubeconfig_dir: Option<PathBuf>,
    /// First port; cluster i listens on base-port + i (default: any free port).
    #[arg(long, env = "FLEETGATE_SIM_BASE_PORT")]
    base_port: Option<u16>,
    /// Override every Flux object's spec.interval, e.g. "10s" (fast-forward).
    #[arg(long, env = "FLEETGATE_SIM_RECONCILE_INTERVAL")]
    reconcile_interval: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let reconcile_interval = match &args.reconcile_interval {
        Some(s) => Some(
            fleetgate_sim::flux::status::parse_duration(s)
                .with_context(|| format!("--reconcile-interval: invalid duration {s:?}"))?,
        ),
        None => None,
    };
    let config = SimConfig {
        reconcile_interval,
        base_port: args.base_port,
        ..SimConfig::with_clusters(args.clusters)
    };
    let sim = Sim::start(config).await?;
    sim.seed_fleet(args.objects_per_cluster).await?;
    if let Some(dir) = &args.kubeconfig_dir {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    for name in sim.clusters() {
        let url = sim.url(&name).unwrap_or_default();
        match &args.kubeconfig_dir {
            Some(dir) => {
                let path = dir.join(format!("{name}.yaml"));
                sim.write_kubeconfig(&name, &path)?;
                println!("{name} {url} {}", path.display());
            }
            None => println!("{name} {url}"),
        }
    }
    wait_for_signal().await?;
    tracing::info!("shutting down");
    tokio::time::timeout(Duration::from_secs(10), sim.shutdown())
        .await
        .ok();
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r?,
        _ = term.recv() => {}
    }
    Ok(())
}
