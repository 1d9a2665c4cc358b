//! The system the demo runs once PostgreSQL is there: the hub, the simulated
//! fleet, the example gates, a spoke per cluster, and pushed revisions that
//! closed gates hold; then it waits for Ctrl-C and stops it all.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fleetgate_api_types::{ClusterStatus, FleetSummary};
use tokio_util::sync::CancellationToken;

use crate::args::DemoArgs;
use crate::error::other;
use crate::{banner, fleet, hub, nginx, rollout, wait};
use fleetgate::args::Format;
use fleetgate::client::Client;
use fleetgate::config::Connection;
use fleetgate::error::Result;

/// Runs the demo on `database_url` until `shutdown`, then stops what it
/// started (the caller removes PostgreSQL).
pub(crate) async fn run(
    args: &DemoArgs,
    database_url: &str,
    shutdown: &CancellationToken,
    started: Instant,
) -> Result<()> {
    // 2. The hub (in-process, as `fleetgate-hub serve` runs it), with a fresh
    // admin token.
    let token = random_token()?;
    let mut hub_cfg = fleetgate_hub::config::ServeConfig::new(database_url);
    hub_cfg.http_addr = args.http_addr;
    hub_cfg.grpc_addr = args.grpc_addr;
    hub_cfg.admin_token = Some(token.clone());
    // The maintenance calendar's feed, served by the demo on loopback (no call leaves the
    // machine): the hub may fetch plain http from a private address, with the feed's secret.
    let served = crate::calendar::serve(shutdown).await?;
    hub_cfg.calendar.calendar_allow_private = true;
    hub_cfg.calendar.calendar_allow_http = true;
    hub_cfg.calendar.calendar_secrets_dir = Some(served.secrets.path().to_path_buf());
    hub_cfg.calendar.calendar_tick = Duration::from_secs(1);
    // The rollout driver steps every 250 ms (default 1 s), so the canary is released and
    // soaking a moment after the demo opens the gate.
    hub_cfg.grpc.rollout_tick = Duration::from_millis(250);
    // The webhook receiver the demo runs itself, on loopback over plain http: the hub
    // refuses both unless told (`--webhook-allow-private --webhook-allow-http`).
    let receiver = crate::webhook::serve(shutdown).await?;
    hub_cfg.notify.webhook_allow_private = true;
    hub_cfg.notify.webhook_allow_http = true;
    if let Some(at) = args.at {
        hub_cfg.clock = Some(std::sync::Arc::new(fleetgate_hub::clock::ManualClock::new(
            at,
        )));
        println!("• clock: standing at {} (--at)", at.to_rfc3339());
    }
    let hub_stop = shutdown.child_token();
    let mut hub_task = tokio::spawn(fleetgate_hub::serve(hub_cfg, hub_stop.clone()));
    let hub_url = format!("http://{}", hub::loopback(args.http_addr));
    let grpc_url = format!("http://{}", hub::loopback(args.grpc_addr));
    let client = Client::new(Connection {
        hub: hub_url.clone(),
        token: Some(token.clone()),
        timeout: Duration::from_secs(30),
    })?;
    // 3. The simulated fleet, set up while the hub starts (it needs no hub).
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
    // The nginx app (one Kustomization) applied once before the spokes start: on the first
    // staging cluster (nginx-window holds it) and the first dev cluster (the warn gate).
    let nginx_cluster = nginx::cluster(&clusters).map(|c| c.name.clone());
    let warn_cluster = nginx::warn_cluster(&clusters).map(|c| c.name.clone());
    for c in nginx_cluster.iter().chain(&warn_cluster) {
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

    hub::wait_ready(&client, &hub_url, &mut hub_task).await?;
    println!(
        "• hub: REST {hub_url}, gRPC {grpc_url}; started with --webhook-allow-private \
         --webhook-allow-http so it may post to the demo's webhook receiver on loopback"
    );
    // Subscribed before anything happens, so every event of the demo is delivered.
    crate::webhook::subscribe(&client, &receiver).await?;

    // 4. Gates first, then clusters with a spoke each.
    let examples = examples_dir();
    let manifests = crate::calendar::manifests(&examples, &served.url, kube_dir.path())?;
    fleetgate::commands::gate::apply(&client, &manifests, &None, false, Format::Table).await?;
    rollout::create(&client).await?;
    let (team_token, team_role) = crate::team::setup(&client, &examples).await?;
    // Registered and started side by side.
    let spokes = futures::future::try_join_all(clusters.iter().map(|c| async {
        let spoke_token = hub::register(&client, c).await?;
        let kubeconfig = kube_dir.path().join(format!("{}.yaml", c.name));
        start_spoke(c, &grpc_url, &spoke_token, &kubeconfig, args.at, shutdown).await
    }))
    .await?;
    println!("• spokes: {} started", spokes.len());
    // The payments team asks to open sre-approval on its cluster: a pending request, for
    // the demo's admin (a second person) to approve.
    let team_client = crate::team::client(&hub_url, &team_token)?;
    let request = crate::team::request_opening(&team_client).await?;

    // 5. Once every spoke has enforced and reported, the stories run side by side (each on
    // its own clusters and objects): the fleet's pushed revisions, held where a gate is
    // closed, then the rollout releasing its canary; the nginx hold on the first staging
    // cluster; the warn gate's would-hold report on the first dev cluster.
    wait::wait_reported(&client, &clusters, shutdown).await?;
    let fleet_story = async {
        push_fleet(&sim, &clusters).await?;
        wait::wait_held(&client, &clusters, shutdown).await?;
        // The rollout in progress: the canary wave released, the others waiting.
        rollout::start(&client, shutdown).await
    };
    let nginx_story = async {
        match &nginx_cluster {
            Some(c) => Ok(Some((
                c.clone(),
                nginx::hold(&client, &sim, c, shutdown).await?,
            ))),
            None => Ok(None),
        }
    };
    let warn_story = async {
        match &warn_cluster {
            Some(c) => Ok(Some(crate::warn::wait(&client, c, shutdown).await?)),
            None => Ok(None),
        }
    };
    let (rolling, nginx, warn) = tokio::try_join!(fleet_story, nginx_story, warn_story)?;
    if let Some((c, o)) = &nginx {
        let kc = kube_dir.path().join(format!("{c}.yaml"));
        println!(
            "• object holds: {}\n    kubectl --kubeconfig {} -n nginx get deploy,cm -o wide",
            o.describe(c),
            kc.display(),
        );
    }
    println!(
        "• rollout: {}\n    fleetgate rollout status {}",
        rollout::describe(&rolling),
        rollout::GATE
    );
    // Warn mode: what nginx-window-dev would hold on the first dev cluster.
    if let Some(w) = &warn {
        println!("• warn mode: {}", w.describe());
    }
    println!(
        "• approvals: {} asked to open {} on {} (request {request}); it waits for a second \
         person: you (Approvals page, or fleetgate override approve)",
        crate::team::TOKEN_NAME,
        crate::team::APPROVAL_GATE,
        crate::team::APPROVAL_CLUSTER,
    );
    // The calendars: the holiday gate on the first (prod) cluster, the feed as fetched.
    let maintenance = crate::calendar::wait_fetched(&client, Duration::from_secs(5)).await?;
    if let Some(first) = clusters.first() {
        let st: ClusterStatus = client
            .get(&format!("/clusters/{}/status", first.name), &[])
            .await?;
        println!(
            "• calendars: {}\n    fleetgate gate get {}",
            crate::calendar::describe(&st, &maintenance),
            crate::calendar::MAINTENANCE_GATE
        );
    }
    let (team_clusters, team_gates) = crate::team::sees(&team_client).await?;
    let deliveries =
        crate::webhook::wait_delivered(&client, &receiver, Duration::from_secs(5)).await?;
    println!(
        "• webhooks: {}",
        crate::webhook::describe(&receiver, &deliveries)
    );
    let held: FleetSummary = client.get("/status", &[]).await?;
    banner::print_ready(&banner::Ready {
        hub: &hub_url,
        grpc: &grpc_url,
        token: &token,
        kube_dir: kube_dir.path(),
        clusters: &clusters,
        summary: &held,
        started,
        nginx_cluster: nginx_cluster.as_deref(),
        warn_cluster: warn_cluster.as_deref(),
        request: &request,
        team: crate::team::Team {
            token: team_token,
            clusters: team_clusters,
            gates: team_gates,
            role: team_role,
        },
    });
    receiver.go_live();

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

/// Pushes a revision of every cluster's `flux-system` source, and of the `shop` source on
/// every other `us` cluster (the release train's).
async fn push_fleet(sim: &fleetgate_sim::Sim, clusters: &[fleet::DemoCluster]) -> Result<()> {
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
    Ok(())
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

/// A spoke for `c`, in process, talking to the hub at `grpc_url` and to the
/// cluster through `kubeconfig`.
async fn start_spoke(
    c: &fleet::DemoCluster,
    grpc_url: &str,
    token: &str,
    kubeconfig: &Path,
    at: Option<chrono::DateTime<chrono::Utc>>,
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
    let config = fleetgate_spoke::Config {
        clock: at.map_or_else(fleetgate_spoke::clock::Clock::default, |at| {
            fleetgate_spoke::clock::Clock::manual(at)
        }),
        ..config
    };
    let kube = fleetgate_spoke::kube_client(&config)
        .await
        .map_err(|e| other("spoke kube client", e))?;
    fleetgate_spoke::Spoke::start(kube, config, shutdown.child_token())
        .await
        .map_err(|e| other(&format!("spoke {}", c.name), e))
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
