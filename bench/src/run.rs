//! One benchmark run, phase by phase: PostgreSQL and the hub process, the
//! NOTIFY floor, then per fleet size: registration, connect, RSS, idle CPU, the
//! bare fan-out floor connected alongside, flips of both in pairs; status ingest;
//! the reconnect storm; the real spoke.

use fleetgate_hub::ServiceDefaults;
use std::time::{Duration, Instant};

use fleetgate_hub::Service;
use prost::Message as _;

use crate::config::BenchConfig;
use crate::fleet::{self, Flipper};
use crate::floor;
use crate::hub_process::HubSpec;
use crate::probe::{CONNECT_BOUND, CONNECT_CONCURRENCY, fetch_snapshot, floor_connected};
use crate::report::{Registration, Report, SizeResult};
use crate::swarm::{Credential, Swarm};
use crate::{
    Error, Result, flips, ingest, proc_stats, replicas, spoke_process, steady, storm, swarm_process,
};

/// Bootstrap admin secret of the benchmark's private hub.
const ADMIN_TOKEN: &str = "fleetgate-bench-admin-secret";
/// File descriptors needed beyond one per spoke (PostgreSQL pools, processes).
const FD_HEADROOM: u64 = 512;

/// Runs the benchmark; `progress` receives one line per phase.
pub async fn run(cfg: &BenchConfig, progress: &dyn Fn(&str)) -> Result<Report> {
    let largest = cfg.spokes.last().copied().unwrap_or(0);
    // At most the largest fleet's hub spokes: the floor's spokes run in a process
    // of their own while the hub's are connected (`probe::floor_connected`).
    let need = largest as u64 + FD_HEADROOM;
    let limit = proc_stats::open_files_limit()?;
    if limit < need {
        return Err(Error::setup(format!(
            "open-files limit {limit} is too low for {largest} spokes: run under `ulimit -n {need}`"
        )));
    }
    let workdir = tempfile::Builder::new()
        .prefix("fleetgate-bench-")
        .tempdir()?;
    let mut report = Report {
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        ..Report::default()
    };

    progress("starting PostgreSQL and the hub");
    let db = fleetgate_tests::test_db().await;
    // FLEETGATE_BENCH_HUB_LOG keeps the hub's log (level: BENCH_HUB_LOG).
    let hub_log = std::env::var_os("FLEETGATE_BENCH_HUB_LOG")
        .map_or_else(|| workdir.path().join("hub.log"), std::path::PathBuf::from);
    let spec = HubSpec::new(&cfg.bins.hub, &db.url, ADMIN_TOKEN, hub_log);
    let mut hub = spec.start().await?;
    let pool = fleetgate_hub::db::connect(&db.url, 20).await?;
    let service = Service::new(pool.clone());
    let db_pid = postmaster_pid(&pool).await;

    // The fleet is registered size by size, so the 1,000-spoke numbers are
    // those of a 1,000-cluster fleet.
    let mut creds: Vec<Credential> = Vec::new();
    let mut registering = Duration::ZERO;
    let first = cfg.spokes.first().copied().unwrap_or(0);
    grow_fleet(&service, &mut creds, first, &mut registering, progress).await?;
    fleet::create_gate(&service, cfg.extra_gates).await?;

    progress("floor: PostgreSQL NOTIFY round-trips");
    report.notify_rtt = floor::notify_rtt(&db.url, cfg.notify_samples).await?;

    let snapshot_file = workdir.path().join("snapshot.pb");
    // No cluster with `--spokes 0` (only the end-to-end phase).
    if let Some(first) = creds.first() {
        let snapshot = fetch_snapshot(hub.grpc, first).await?;
        report.snapshot_bytes = snapshot.encoded_len();
        std::fs::write(&snapshot_file, snapshot.encode_to_vec())?;
    }

    tokio::time::sleep(Duration::from_secs(1)).await;
    let rss0 = proc_stats::rss_kib(hub.pid())?;
    let mut flipper = Flipper::new(hub.base_url(), ADMIN_TOKEN.into());
    let mut swarm = Swarm::new();
    let mut connected = 0;
    for (i, &n) in cfg.spokes.iter().enumerate() {
        grow_fleet(&service, &mut creds, n, &mut registering, progress).await?;
        progress(&format!("hub: connecting spokes {connected}..{n}"));
        let t = Instant::now();
        swarm
            .add(
                hub.grpc,
                &creds[connected..n],
                CONNECT_CONCURRENCY,
                CONNECT_BOUND,
            )
            .await?;
        let connect_seconds = t.elapsed().as_secs_f64();
        connected = n;
        tokio::time::sleep(Duration::from_secs(2)).await;
        let rss = proc_stats::rss_kib(hub.pid())?;
        progress(&format!("hub: idle CPU with {n} spokes"));
        let idle = proc_stats::cpu_millicores(hub.pid(), cfg.idle_window).await?;
        // The floor's server and spokes next to the hub's, both fleets connected,
        // and the flips in pairs, so that the hub's flips and the floor's meet the
        // same moments of the machine.
        progress(&format!(
            "floor: bare tonic fan-out to {n} streams (spokes in their own process)"
        ));
        let (mut floor_server, floor_swarm, floor_rss_per_spoke_kib) =
            floor_connected(cfg, &snapshot_file, n, workdir.path()).await?;
        progress(&format!(
            "hub and floor: {} flips each to {n} spokes, in pairs",
            cfg.flips
        ));
        let flipped = flips::interleaved(
            &swarm,
            &mut flipper,
            hub.pid(),
            db_pid,
            &floor_swarm,
            &mut floor_server,
            cfg.flips,
        )
        .await;
        floor_swarm.shutdown().await;
        floor_server.stop().await?;
        let flips::Interleaved {
            hub: hub_flips,
            floor,
            pairs,
        } = flipped?;
        let per_flip: Vec<String> = hub_flips
            .all_ms
            .iter()
            .map(|ms| format!("{ms:.0}"))
            .collect();
        progress(&format!(
            "hub: flip → all {n} spokes per flip (ms): {}",
            per_flip.join(" ")
        ));
        for (metric, measured) in pairs.rows(n) {
            progress(&format!("{metric}: {measured}"));
        }
        report.sizes.push(SizeResult {
            spokes: n,
            hub_flip: hub_flips.per_spoke,
            hub_flip_all: hub_flips.per_flip_all,
            hub_flip_all_ms: hub_flips.all_ms.clone(),
            floor_flip: floor.per_spoke,
            floor_flip_all: floor.per_flip_all,
            rest_call: hub_flips.trigger,
            flip_pairs: pairs,
            connect_seconds,
            hub_rss_kib: rss,
            hub_rss_per_spoke_kib: rss.saturating_sub(rss0) as f64 / n as f64,
            floor_rss_per_spoke_kib,
            hub_idle_millicores: idle,
        });
        // Ingest after the largest fleet's idle and flip measurements: the
        // reporting streams' larger buffers must not count as idle cost.
        if i + 1 == cfg.spokes.len() && cfg.ingest_spokes > 0 {
            let spokes = cfg.ingest_spokes.min(n);
            progress(&format!("hub: status ingest from {spokes} spokes"));
            let before = proc_stats::rss_kib(hub.pid())?;
            let mut ingest = ingest::run(
                &swarm,
                &pool,
                spokes,
                cfg.ingest_objects,
                cfg.ingest_duration,
                0,
            )
            .await?;
            tokio::time::sleep(Duration::from_secs(2)).await;
            let after = proc_stats::rss_kib(hub.pid())?;
            ingest.hub_rss_per_reporting_spoke_kib =
                after.saturating_sub(before) as f64 / spokes as f64;
            let rounds = ingest.rounds;
            report.ingest = Some(ingest);
            if let Some(bin) = &cfg.baseline_hub {
                // The same ingest through another hub build, in this run: the hub is
                // restarted with it (the spokes reconnect as in the storm), measured,
                // and restarted with the hub under test again.
                progress(&format!(
                    "hub: restarting with the baseline hub {} for its ingest",
                    bin.display()
                ));
                let baseline = HubSpec {
                    bin: bin.clone(),
                    ..spec.clone()
                };
                hub = storm::run(
                    &swarm,
                    &baseline,
                    hub,
                    &service,
                    &pool,
                    "b-",
                    "cluster token",
                )
                .await?
                .1;
                progress(&format!(
                    "hub (baseline): status ingest from {spokes} spokes"
                ));
                report.ingest_baseline = Some(
                    ingest::run(
                        &swarm,
                        &pool,
                        spokes,
                        cfg.ingest_objects,
                        cfg.ingest_duration,
                        rounds + 1,
                    )
                    .await?,
                );
                progress("hub: restarting with the hub under test");
                hub = storm::run(&swarm, &spec, hub, &service, &pool, "b-", "cluster token")
                    .await?
                    .1;
            }
        }
        if i + 1 == cfg.spokes.len() && !cfg.steady_window.is_zero() {
            progress(&format!(
                "hub: steady state, {n} spokes re-sending unchanged reports every {:?}",
                cfg.steady_interval
            ));
            let steady = steady::run(
                &swarm,
                &pool,
                cfg.ingest_objects,
                cfg.steady_interval,
                cfg.steady_window,
            )
            .await?;
            progress(&format!(
                "hub: steady state {:.0} rows/s {:?}",
                steady.rows_per_second, steady.per_table_rows_per_second
            ));
            report.steady = Some(steady);
        }
    }

    if !cfg.soak.is_zero() && !swarm.is_empty() {
        progress(&format!(
            "hub: soak for {:?} with {} spokes",
            cfg.soak,
            swarm.len()
        ));
        let soak = crate::soak::run(
            &swarm,
            &mut flipper,
            hub.pid(),
            &hub.base_url(),
            &pool,
            cfg,
            progress,
        )
        .await?;
        report.soak = Some(soak);
    }

    let n = swarm.len();
    swarm.shutdown().await;
    // The JWT storm's fleet: as many clusters again, each with an issuer of its own
    // (keys pinned), registered before either storm so both storms run against the
    // same database.
    let jwt_creds = if cfg.storm && cfg.jwt_storm && n > 0 {
        progress(&format!(
            "registering {n} clusters signing in with their own issuer's JWTs"
        ));
        let t = Instant::now();
        let creds =
            crate::jwt::register(&service, 0..n, &[("fleet", "bench")], cfg.jwt_alg).await?;
        registering += t.elapsed();
        progress("one spoke JWT verification with cached keys, timed (RS256, ES256)");
        report.jwt_verify = crate::jwt::verify_costs(cfg.jwt_verify_samples, cfg.jwt_alg).await?;
        creds
    } else {
        Vec::new()
    };
    report.registration = Registration {
        clusters: creds.len() + jwt_creds.len(),
        seconds: registering.as_secs_f64(),
        method: "hub service layer in-process, 16 concurrent one-transaction registrations \
                 (same code as POST /api/v1/clusters, minus HTTP)"
            .into(),
    };
    if cfg.storm && n > 0 && snapshot_file.exists() {
        progress(&format!(
            "floor: reconnect storm with {n} spokes on the bare fan-out server"
        ));
        report.storm_floor =
            Some(storm::floor(&cfg.bins.bench, &snapshot_file, n, workdir.path()).await?);
    }
    if (cfg.storm || cfg.replicas > 1) && n > 0 {
        // The storm and the replicas phase time restarts and readiness: the
        // spokes run in their own process so they do not starve this one.
        progress(&format!("hub: {n} spokes in their own process, connecting"));
        let ext = swarm_process::start(
            &cfg.bins.bench,
            &[hub.grpc],
            &creds[..n],
            CONNECT_CONCURRENCY,
            CONNECT_BOUND,
            workdir.path(),
        )
        .await?;
        let single = if cfg.replicas > 1 {
            progress(&format!(
                "hub: {} flips to {n} spokes (own process)",
                cfg.flips
            ));
            Some(flips::through_hub(&ext, &mut flipper, cfg.flips).await?)
        } else {
            None
        };
        if cfg.storm {
            progress(&format!("hub: reconnect storm with {n} spokes"));
            let (result, restarted) =
                storm::run(&ext, &spec, hub, &service, &pool, "b-", "cluster token").await?;
            report.storm = Some(result);
            hub = restarted;
        }
        ext.shutdown().await;
        if !jwt_creds.is_empty() {
            progress(&format!(
                "hub: {n} spokes signing in with JWTs in their own process, connecting"
            ));
            let ext = swarm_process::start(
                &cfg.bins.bench,
                &[hub.grpc],
                &jwt_creds,
                CONNECT_CONCURRENCY,
                CONNECT_BOUND,
                workdir.path(),
            )
            .await?;
            progress(&format!(
                "hub: reconnect storm with {n} spokes signing in with JWTs"
            ));
            let jwt_credential = format!("JWT, {}", cfg.jwt_alg.name());
            let (result, restarted) =
                storm::run(&ext, &spec, hub, &service, &pool, "j-", &jwt_credential).await?;
            report.storm_jwt = Some(result);
            hub = restarted;
            ext.shutdown().await;
        }
        if let Some(single) = single {
            let setup = replicas::Setup {
                bench: &cfg.bins.bench,
                spec: &spec,
                creds: &creds[..n],
                workdir: workdir.path(),
                concurrency: CONNECT_CONCURRENCY,
                connect_bound: CONNECT_BOUND,
                flips: cfg.flips,
                pool: &pool,
                prefix: "b-",
            };
            report.replicas = Some(
                replicas::run(&setup, &hub, cfg.replicas, &mut flipper, &single, progress).await?,
            );
        }
    }

    if cfg.spoke_objects > 0 {
        progress(&format!(
            "real spoke governing {} objects",
            cfg.spoke_objects
        ));
        report.spoke = Some(
            spoke_process::run(
                &cfg.bins.sim,
                &cfg.bins.spoke,
                cfg.spoke_objects,
                hub.grpc,
                &service,
                cfg.spoke_idle_window,
                workdir.path(),
            )
            .await?,
        );
    }
    if cfg.real_spokes > 0 {
        let e2e = crate::e2e::run(
            cfg,
            &hub,
            ADMIN_TOKEN,
            &service,
            &pool,
            workdir.path(),
            progress,
        )
        .await?;
        report.e2e = Some(e2e);
    }
    hub.stop().await?;
    pool.close().await;
    Ok(report)
}

/// Registers clusters until the fleet has `n`.
async fn grow_fleet(
    service: &Service,
    creds: &mut Vec<Credential>,
    n: usize,
    took: &mut Duration,
    progress: &dyn Fn(&str),
) -> Result<()> {
    if creds.len() >= n {
        return Ok(());
    }
    progress(&format!("registering clusters {}..{n}", creds.len()));
    let t = Instant::now();
    creds.extend(fleet::register(service, creds.len()..n, &[("fleet", "bench")]).await?);
    *took += t.elapsed();
    Ok(())
}

/// The database server's postmaster, when it runs on this machine (the `postmaster.pid`
/// of its data directory readable here, naming a `postgres` process): the flips count its
/// CPU as the hub's database work.
async fn postmaster_pid(pool: &sqlx::PgPool) -> Option<u32> {
    let dir: String = sqlx::query_scalar("show data_directory")
        .fetch_one(pool)
        .await
        .ok()?;
    let file = std::fs::read_to_string(std::path::Path::new(&dir).join("postmaster.pid")).ok()?;
    let pid: u32 = file.lines().next()?.trim().parse().ok()?;
    let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).ok()?;
    (comm.trim() == "postgres").then_some(pid)
}
