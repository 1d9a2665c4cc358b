//! `fleetgate-sim`: runs simulated clusters with seeded Flux objects until SIGINT/SIGTERM,
//! printing one `cluster URL kubeconfig` line per cluster.
#![forbid(unsafe_code)]

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use fleetgate_sim::{RbacConfig, RbacUser, Sim, SimConfig};

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
    /// Serve HTTPS with the embedded test certificate (implied by the RBAC options:
    /// kubectl sends bearer tokens only over TLS).
    #[arg(long, env = "FLEETGATE_SIM_TLS")]
    tls: bool,
    /// Enable RBAC with Roles/ClusterRoles/bindings from this YAML file (repeatable; e.g.
    /// the spoke's rendered manifests — kinds the simulator does not serve are skipped).
    #[arg(long = "rbac-manifest", value_name = "FILE")]
    rbac_manifests: Vec<PathBuf>,
    /// Accept TOKEN as ServiceAccount NAMESPACE/NAME (repeatable; enables RBAC).
    #[arg(long = "service-account-token", value_name = "TOKEN=NAMESPACE/NAME")]
    service_account_tokens: Vec<String>,
}

/// RBAC settings from the command line, if any were given.
fn rbac_config(args: &Args) -> anyhow::Result<Option<RbacConfig>> {
    if args.rbac_manifests.is_empty() && args.service_account_tokens.is_empty() {
        return Ok(None);
    }
    let mut cfg = RbacConfig::default();
    for path in &args.rbac_manifests {
        let yaml = std::fs::read_to_string(path)
            .with_context(|| format!("--rbac-manifest: reading {}", path.display()))?;
        cfg.manifests.push(yaml);
    }
    for spec in &args.service_account_tokens {
        let parsed = spec
            .split_once('=')
            .and_then(|(token, sa)| Some((token, sa.split_once('/')?)));
        let Some((token, (ns, name))) =
            parsed.filter(|(t, (n, m))| !t.is_empty() && !n.is_empty() && !m.is_empty())
        else {
            anyhow::bail!("--service-account-token: expected TOKEN=NAMESPACE/NAME, got {spec:?}");
        };
        cfg.tokens
            .insert(token.to_string(), RbacUser::service_account(ns, name));
    }
    Ok(Some(cfg))
}

/// jemalloc, as in the hub: glibc malloc/free was a large share of the
/// simulator's CPU while 200 spokes patched and watched their objects
/// (perf, fleetgate-bench --real-spokes).
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

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
    let rbac = rbac_config(&args)?;
    let config = SimConfig {
        reconcile_interval,
        rbac: rbac.clone(),
        tls: args.tls || rbac.is_some(),
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
