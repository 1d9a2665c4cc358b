//! `fleetgate-demo` (also run as `fleetgate demo`): the whole system on one
//! machine — a throwaway PostgreSQL (unless DATABASE_URL is set), the hub, a
//! simulated fleet with a spoke per cluster, the example gates, and pushed
//! revisions so some changes are held. Ctrl-C (or SIGTERM) stops everything
//! and cleans up. Its own program, so the `fleetgate` CLI does not link the
//! hub, the spoke, the simulator or pgtemp.
#![forbid(unsafe_code)]

mod fleet;
mod nginx;
mod rollout;
mod wait;

use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;

use fleetgate_api_types::{ClusterWithToken, FleetSummary, RegisterCluster};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use fleetgate::args::Format;
use fleetgate::client::{Client, seg};
use fleetgate::config::Connection;
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

fn other(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("demo: {what}: {e}"))
}

/// `fga_` + 64 hex digits from the OS's random source.
fn random_token() -> Result<String> {
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
    let result = run_with_db(args, &database_url, &shutdown, started).await;
    // Stop whatever still runs; `_pg` is dropped (server stopped, files
    // removed) when this function returns.
    shutdown.cancel();
    result
}

async fn run_with_db(
    args: &DemoArgs,
    database_url: &str,
    shutdown: &CancellationToken,
    started: Instant,
) -> Result<()> {
    // 2. The hub (in-process), with a fresh admin token.
    let token = random_token()?;
    let mut hub_cfg = fleetgate_hub::config::ServeConfig::for_tests(database_url);
    hub_cfg.http_addr = args.http_addr;
    hub_cfg.grpc_addr = args.grpc_addr;
    hub_cfg.admin_token = Some(token.clone());
    let hub_stop = shutdown.child_token();
    let mut hub_task = tokio::spawn(fleetgate_hub::serve(hub_cfg, hub_stop.clone()));
    let hub_url = format!("http://{}", loopback(args.http_addr));
    let grpc_url = format!("http://{}", loopback(args.grpc_addr));
    let client = Client::new(Connection {
        hub: hub_url.clone(),
        token: Some(token.clone()),
        timeout: Duration::from_secs(30),
    })?;
    wait::wait_ready(&client, &hub_url, &mut hub_task).await?;
    println!("• hub: REST {hub_url}, gRPC {grpc_url}");

    // 3. The simulated fleet.
    let clusters = fleet::clusters(args.clusters);
    let sim = fleetgate_sim::Sim::start(fleetgate_sim::SimConfig {
        clusters: clusters.iter().map(|c| c.name.clone()).collect(),
        reconcile_interval: Some(args.reconcile_interval),
        ..fleetgate_sim::SimConfig::default()
    })
    .await
    .map_err(|e| other("simulator", e))?;
    sim.seed_fleet(args.objects_per_cluster)
        .await
        .map_err(|e| other("seeding the fleet", e))?;
    let kube_dir = tempfile::Builder::new()
        .prefix("fleetgate-demo-kube-")
        .tempdir()
        .map_err(|e| other("temp dir", e))?;
    for c in &clusters {
        for obj in fleet::extra_objects(c) {
            sim.create_object(&c.name, obj)
                .await
                .map_err(|e| other("seeding", e))?;
        }
        sim.write_kubeconfig(&c.name, &kube_dir.path().join(format!("{}.yaml", c.name)))
            .map_err(|e| other("kubeconfig", e))?;
    }
    // The nginx app (one Kustomization) applied once before the spokes start.
    let nginx_cluster = nginx::cluster(&clusters).map(|c| c.name.clone());
    if let Some(c) = &nginx_cluster {
        for obj in nginx::objects() {
            sim.create_object(c, obj)
                .await
                .map_err(|e| other("seeding", e))?;
        }
        nginx::push(&sim, c, 1, "nginx:1.25", "blue")
            .await
            .map_err(|e| other("push", e))?;
    }
    println!(
        "• simulator: {} clusters, kubeconfigs in {}",
        clusters.len(),
        kube_dir.path().display()
    );

    // 4. Gates first, then clusters with a spoke each.
    let examples = examples_dir();
    fleetgate::commands::gate::apply(
        &client,
        std::slice::from_ref(&examples),
        &None,
        false,
        Format::Table,
    )
    .await?;
    rollout::create(&client).await?;
    let mut spokes = Vec::new();
    for c in &clusters {
        let spoke_token = register(&client, c).await?;
        let kubeconfig = kube_dir.path().join(format!("{}.yaml", c.name));
        spokes.push(start_spoke(c, &grpc_url, &spoke_token, &kubeconfig, shutdown).await?);
    }
    println!("• spokes: {} started", spokes.len());

    // 5. Once every spoke has enforced and reported, push revisions: where
    // a gate is closed they are held.
    wait::wait_reported(&client, &clusters, shutdown).await?;
    for (i, c) in clusters.iter().enumerate() {
        sim.push_revision(
            &c.name,
            "GitRepository",
            "flux-system",
            "flux-system",
            &fleet::revision(&c.name, 1),
        )
        .await
        .map_err(|e| other("push", e))?;
        if i % 2 == 0 && c.labels.get("region").is_some_and(|r| r == "us") {
            sim.push_revision(
                &c.name,
                "GitRepository",
                "flux-system",
                "shop",
                &fleet::revision(&c.name, 2),
            )
            .await
            .map_err(|e| other("push", e))?;
        }
    }
    wait::wait_held(&client, shutdown).await?;
    let nginx = match &nginx_cluster {
        Some(c) => Some((c.clone(), nginx::hold(&client, &sim, c, shutdown).await?)),
        None => None,
    };
    if let Some((c, o)) = &nginx {
        let kc = kube_dir.path().join(format!("{c}.yaml"));
        println!(
            "• object holds: on {c} gate {} holds the nginx Deployment ({}); {}\n    \
             kubectl --kubeconfig {} -n nginx get deploy,cm -o wide",
            nginx::GATE,
            if o.held { "held" } else { "not held yet" },
            if o.waiting {
                "a new revision changed its ConfigMap at once, the new image waits"
            } else {
                "the Kustomization applied no newer revision (another gate holds it whole)"
            },
            kc.display(),
        );
    }
    // The rollout in progress: the canary wave released, the others waiting.
    let rolling = rollout::start(&client, shutdown).await?;
    println!(
        "• rollout: {}\n    fleetgate rollout status {}",
        rollout::describe(rolling.as_ref()),
        rollout::GATE
    );
    let held: FleetSummary = client.get("/status", &[]).await?;
    print_ready(
        &hub_url,
        &grpc_url,
        &token,
        kube_dir.path(),
        &clusters,
        &held,
        started,
    );

    tokio::select! {
        _ = shutdown.cancelled() => {}
        r = &mut hub_task => {
            eprintln!("error: the hub stopped: {:?}", r);
        }
    }
    println!("\nstopping: spokes, hub, simulator, PostgreSQL …");
    shutdown.cancel();
    for s in spokes {
        let _ = tokio::time::timeout(Duration::from_secs(10), s.stop()).await;
    }
    let _ = tokio::time::timeout(Duration::from_secs(15), hub_task).await;
    sim.shutdown().await;
    println!("stopped; temporary files removed.");
    Ok(())
}

fn loopback(addr: SocketAddr) -> SocketAddr {
    if addr.ip().is_unspecified() {
        SocketAddr::from(([127, 0, 0, 1], addr.port()))
    } else {
        addr
    }
}

/// `examples/` of the source tree (the demo runs from a checkout).
fn examples_dir() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    if here.is_dir() {
        here
    } else {
        PathBuf::from("examples")
    }
}

/// Registers the cluster (or, on a reused database, rotates its token).
async fn register(client: &Client, c: &fleet::DemoCluster) -> Result<String> {
    let body = RegisterCluster {
        name: c.name.clone(),
        labels: c.labels.clone(),
    };
    let v: ClusterWithToken = match client.post("/clusters", &[], &body).await {
        Ok(v) => v,
        Err(Error::Api { status: 409, .. }) => {
            client
                .post(
                    &format!("/clusters/{}/rotate-token", seg(&c.name)),
                    &[],
                    &json!({}),
                )
                .await?
        }
        Err(e) => return Err(e),
    };
    Ok(v.token)
}

async fn start_spoke(
    c: &fleet::DemoCluster,
    grpc_url: &str,
    token: &str,
    kubeconfig: &Path,
    shutdown: &CancellationToken,
) -> Result<fleetgate_spoke::Spoke> {
    let kc = kubeconfig.display().to_string();
    let config = <fleetgate_spoke::Config as clap::Parser>::try_parse_from([
        "fleetgate-spoke",
        "--cluster",
        &c.name,
        "--hub-url",
        grpc_url,
        "--token",
        token,
        "--kubeconfig",
        &kc,
        "--namespace",
        "fleetgate-system",
        "--http-addr",
        "127.0.0.1:0",
        // The kinds examples/hold-objects.yaml holds (deploy/spoke/components/hold-objects).
        "--held-kinds",
        "apps/v1/Deployment,v1/Service",
    ])
    .map_err(|e| other("spoke config", e))?;
    let kube = fleetgate_spoke::kube_client(&config)
        .await
        .map_err(|e| other("spoke kube client", e))?;
    fleetgate_spoke::Spoke::start(kube, config, shutdown.child_token())
        .await
        .map_err(|e| other(&format!("spoke {}", c.name), e))
}

fn print_ready(
    hub: &str,
    grpc: &str,
    token: &str,
    kube_dir: &Path,
    clusters: &[fleet::DemoCluster],
    summary: &FleetSummary,
    started: Instant,
) {
    let first = clusters
        .first()
        .map(|c| c.name.as_str())
        .unwrap_or("prod-eu-1");
    println!(
        "\nfleetgate demo is running (ready in {:.1} s)\n\
         \n  dashboard    {hub}/\
         \n  admin token  {token}\
         \n  REST API     {hub}/api/v1   (OpenAPI: {hub}/api/v1/openapi.json)\
         \n  gRPC         {grpc}\
         \n  fleet        {} clusters, {} may change now, {} closed; {} objects held by a gate\
         \n\nTry:\
         \n  export FLEETGATE_HUB={hub} FLEETGATE_TOKEN={token}\
         \n  fleetgate status\
         \n  fleetgate gate preview business-hours\
         \n  fleetgate rollout status {}\
         \n  fleetgate gate open sre-approval --for 1h --reason \"demo\" --cluster {first}\
         \n  kubectl --kubeconfig {}/{first}.yaml get kustomizations -A\
         \n\nCtrl-C stops everything and removes the temporary files.",
        started.elapsed().as_secs_f64(),
        summary.clusters.total,
        summary.clusters.open,
        summary.clusters.closed,
        summary.objects.held,
        rollout::GATE,
        kube_dir.display(),
    );
    // One line for scripts and the smoke test.
    println!(
        "demo ready: hub={hub} token={token} held={} held_objects={}",
        summary.objects.held, summary.objects.held_objects
    );
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
