//! The benchmark still works: a tiny run (20 spokes, every phase) against a
//! real hub process, PostgreSQL, floor server, simulator and spoke. It asserts
//! that every phase produced measurements, never how fast they were.

use std::path::PathBuf;
use std::time::Duration;

use fleetgate_bench::BenchConfig;
use fleetgate_bench::bins::Bins;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiny_run_measures_every_phase() {
    let bins = Bins::locate(PathBuf::from(env!("CARGO_BIN_EXE_fleetgate-bench"))).unwrap();
    let mut cfg = BenchConfig::new(vec![20, 10], true, bins);
    cfg.flips = 2;
    cfg.idle_window = Duration::from_millis(500);
    cfg.notify_samples = 5;
    cfg.ingest_spokes = 5;
    cfg.ingest_objects = 10;
    cfg.ingest_duration = Duration::from_millis(100);
    cfg.steady_interval = Duration::from_secs(1);
    cfg.steady_window = Duration::from_secs(2);
    cfg.spoke_objects = 20;
    cfg.spoke_idle_window = Duration::from_millis(500);
    cfg.soak = Duration::from_secs(4);
    cfg.soak_report_every = Duration::from_secs(2);
    cfg.soak_flip_every = Duration::from_secs(1);
    cfg.soak_settle_window = Duration::from_secs(2);
    cfg.real_spokes = 2;
    cfg.objects_per_spoke = 3;
    let report = tokio::time::timeout(
        Duration::from_secs(600),
        fleetgate_bench::run(&cfg, &|l| eprintln!("{l}")),
    )
    .await
    .expect("the tiny run finishes within 10 minutes")
    .expect("the tiny run succeeds");

    // 20 clusters with tokens, and as many again signing in with their own issuer's JWTs.
    assert_eq!(report.registration.clusters, 40);
    assert_eq!(report.notify_rtt.samples, 5);
    assert!(report.snapshot_bytes > 0);
    let sizes: Vec<usize> = report.sizes.iter().map(|s| s.spokes).collect();
    assert_eq!(sizes, vec![10, 20], "sizes run ascending");
    for s in &report.sizes {
        assert_eq!(
            s.hub_flip.samples,
            2 * s.spokes,
            "every spoke saw every hub flip"
        );
        assert_eq!(
            s.floor_flip.samples,
            2 * s.spokes,
            "every spoke saw every floor flip"
        );
        assert_eq!(s.hub_flip_all.samples, 2);
        assert!(s.hub_rss_kib > 0);
    }
    let storm = report.storm.clone().expect("storm measured");
    assert_eq!(
        storm.resync.samples, 20,
        "every spoke re-synced after the restart"
    );
    assert!(storm.max_attempts >= 1);
    assert!(storm.server_cpu_seconds > 0.0, "the new hub's CPU is read");
    let floor = report
        .storm_floor
        .clone()
        .expect("the storm's floor measured");
    assert_eq!(
        floor.resync.samples, 20,
        "every spoke re-synced after the floor server's restart"
    );
    assert!(floor.hub_stop_seconds > 0.0 && floor.hub_down_seconds >= floor.hub_stop_seconds);
    let storm_jwt = report.storm_jwt.clone().expect("JWT storm measured");
    assert_eq!(
        storm_jwt.resync.samples, 20,
        "every JWT spoke re-synced after the restart"
    );
    assert_eq!(storm_jwt.credential, "JWT, RS256", "RS256 by default");
    let algs: Vec<&str> = report
        .jwt_verify
        .iter()
        .map(|v| v.algorithm.as_str())
        .collect();
    assert_eq!(
        algs,
        ["RS256", "ES256"],
        "one verification timed per algorithm"
    );
    for verify in &report.jwt_verify {
        assert!(verify.samples > 0 && verify.p50_us > 0.0);
    }
    let replicas = report.replicas.clone().expect("replicas measured");
    let rolling = replicas.rolling.expect("rolling restart measured");
    let handover = &rolling.handover;
    assert!(handover.moved > 0, "replica 1 held spokes");
    assert_eq!(
        handover.moved as u64, rolling.streams_before[1],
        "the moved spokes are those replica 1 held"
    );
    assert_eq!(
        handover.resync_all.samples, 20,
        "every spoke held the change after the rolling restart"
    );
    assert_eq!(
        handover.moved_first_dial_elsewhere, handover.moved,
        "a spoke the drained replica ended dials the other replica next"
    );
    assert_eq!(handover.on_replica, vec![20, 0]);
    assert_eq!(rolling.streams_after, vec![20, 0]);
    assert!(rolling.survivor_cpu_seconds >= 0.0 && rolling.drained_exit_seconds > 0.0);
    assert!(
        rolling.drain_phases.iter().any(|(p, _)| p == "done"),
        "the drained replica's drain phases are read"
    );
    let ingest = report.ingest.clone().expect("ingest measured");
    assert!(ingest.rounds >= 2 && ingest.objects_per_second > 0.0);
    assert_eq!(ingest.durable.samples, ingest.rounds * 5);
    let steady = report.steady.clone().expect("steady state measured");
    assert_eq!(steady.spokes, 20);
    assert_eq!(steady.reports_not_sent, 0);
    // Re-sent unchanged reports write no object row (the hub compares the
    // content hash), and stamps are far younger than STAMP_EVERY.
    assert!(
        !steady
            .per_table_rows_per_second
            .contains_key("object_status"),
        "{steady:?}"
    );
    let spoke = report.spoke.clone().expect("spoke measured");
    assert!(spoke.reported_objects > 0 && spoke.rss_kib > 0);
    let soak = report.soak.clone().expect("soak measured");
    assert_eq!(soak.counts.rounds.len(), 2, "{soak:?}");
    assert_eq!(soak.counts.reports_sent, 40, "{soak:?}");
    assert!(soak.no_report_lost(), "{soak:?}");
    assert!(soak.no_stream_dropped(), "{soak:?}");
    assert!(soak.counts.flips.samples >= 1 && !soak.counts.rss.is_empty());
    // The warm-up stored every spoke's initial 100 objects before the clock.
    assert_eq!(soak.counts.warmup.reports, 20, "{soak:?}");
    assert_eq!(soak.counts.warmup.object_rows, 20 * 100, "{soak:?}");
    let e2e = report.e2e.clone().expect("end to end measured");
    for series in [&e2e.close, &e2e.open, &e2e.direct_close, &e2e.direct_open] {
        // Every object of every flip was seen changed by the bench's watches.
        assert_eq!(series.per_object.samples, 2 * 3, "{e2e:?}");
        assert_eq!(series.last.samples, 1, "{e2e:?}");
    }
    assert!(e2e.fanout_floor.samples == 2 && e2e.spoke_rss_max_kib > 0);
    let table = report.table();
    assert!(table.contains("reconnect storm, 20 spokes"), "{table}");
    assert!(table.contains("e2e, 2 real spokes × 3 objects"), "{table}");
    assert!(table.contains("soak 4 s, 20 spokes"), "{table}");
}
