//! Writes, spoke keepalives, connects and status reports at once on a real
//! PostgreSQL (spokes over a real gRPC socket, REST through the router):
//! PostgreSQL detects no deadlock (`pg_stat_database.deadlocks` unchanged)
//! and no request answers 5xx. Before connection bookkeeping moved to
//! `cluster_connections`, a batch of reports stamping `clusters` rows in its
//! own order deadlocked with a write stamping `desired_revision` in name
//! order, and the write answered 500.

mod common;
mod grpc_support;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::http::Method;
use common::Hub;
use fleetgate_hub::grpc::GrpcOptions;
use grpc_support::{Grpc, TestSpoke, kustomization, within};
use serde_json::json;
use sqlx::Connection;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

const CLUSTERS: usize = 16;
const WRITERS: usize = 12;
const READERS: usize = 4;
/// Requests per writer and per reader.
const ROUNDS: usize = 20;

/// Deadlocks PostgreSQL detected in the database at `url` so far. Backends
/// flush their counters when they exit, so read this after closing the
/// connections whose deadlocks should count.
async fn deadlocks(url: &str) -> i64 {
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    sqlx::query_scalar("select deadlocks from pg_stat_database where datname = current_database()")
        .fetch_one(&mut conn)
        .await
        .unwrap()
}

/// A spoke reporting as fast as it can (objects changing every report),
/// reading what the hub sends between reports, until `stop`.
async fn busy_spoke(mut spoke: TestSpoke, stop: CancellationToken) -> usize {
    let mut reports = 0;
    loop {
        tokio::select! {
            () = stop.cancelled() => return reports,
            msg = spoke.next() => {
                msg.expect("stream stays up").expect("stream stays open");
            }
            // Pacing between reports, not synchronisation.
            () = tokio::time::sleep(Duration::from_millis(2)) => {}
        }
        let held = reports % 2 == 0;
        let objects = (0..3)
            .map(|i| kustomization("apps", &format!("app-{i}"), held && i == 0, &["g"]))
            .collect();
        spoke.report(reports as u64, objects).await;
        reports += 1;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_keepalives_and_reports_never_deadlock() {
    let hub = Hub::new().await;
    let names: Vec<String> = (0..CLUSTERS).map(|i| format!("c{i:02}")).collect();
    let mut tokens = Vec::new();
    for n in &names {
        tokens.push(hub.register(n, json!({"env": "prod"})).await);
    }
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    hub.simple_gate("g", &refs, "open").await;
    let before = deadlocks(&hub.url).await;

    let grpc = Grpc::start(
        hub.service.clone(),
        GrpcOptions {
            // A liveness stamp for every cluster with nearly every flush.
            spoke_keepalive: Duration::from_millis(20),
            report_flush_ms: 5,
            ..Grpc::opts()
        },
    )
    .await;
    let stop = CancellationToken::new();
    let mut spokes = JoinSet::new();
    for (name, token) in names.iter().zip(&tokens) {
        let mut spoke = TestSpoke::connect(grpc.channel.clone(), token, name, 0)
            .await
            .unwrap();
        spoke.snapshot().await;
        spokes.spawn(busy_spoke(spoke, stop.clone()));
    }

    let hub = std::sync::Arc::new(hub);
    // Requests answered so far, by every client: the progress the wait below watches.
    let answered_so_far = std::sync::Arc::new(AtomicUsize::new(0));
    let mut clients = JoinSet::new();
    for w in 0..WRITERS {
        let hub = hub.clone();
        let names = names.clone();
        let progress = answered_so_far.clone();
        clients.spawn(async move {
            let mut statuses = Vec::new();
            for round in 0..ROUNDS {
                let r = match (w + round) % 4 {
                    // Every cluster of the gate: the fleet-wide stamp.
                    0 | 1 => {
                        hub.post_json(
                            "/api/v1/gates/g/close",
                            &hub.operator,
                            json!({"for": "1h", "reason": format!("writer {w} round {round}")}),
                        )
                        .await
                    }
                    // One cluster locked alone, then stamped.
                    2 => {
                        let name = &names[(w * 7 + round) % names.len()];
                        hub.call(
                            Method::PUT,
                            &format!("/api/v1/clusters/{name}/labels"),
                            Some(&hub.admin),
                            Some((
                                "application/json",
                                json!({"labels": {"env": "prod", "round": round.to_string()}})
                                    .to_string(),
                            )),
                        )
                        .await
                    }
                    // A subset of the clusters.
                    _ => {
                        let picked: Vec<&String> = names.iter().skip(w % 3).step_by(3).collect();
                        hub.post_json(
                            "/api/v1/gates/g/open",
                            &hub.operator,
                            json!({"for": "5m", "reason": "partial", "clusters": {"names": picked}}),
                        )
                        .await
                    }
                };
                progress.fetch_add(1, Ordering::Relaxed);
                statuses.push((format!("writer {w} round {round}"), r.status, r.text));
            }
            statuses
        });
    }
    for reader in 0..READERS {
        let hub = hub.clone();
        let progress = answered_so_far.clone();
        clients.spawn(async move {
            let mut statuses = Vec::new();
            for round in 0..ROUNDS {
                let uri = [
                    "/api/v1/status",
                    "/api/v1/clusters",
                    "/api/v1/status/clusters",
                ][round % 3];
                let r = hub.get(uri).await;
                progress.fetch_add(1, Ordering::Relaxed);
                statuses.push((format!("reader {reader} {uri}"), r.status, r.text));
            }
            statuses
        });
    }
    let mut answered = 0;
    let mut failed = Vec::new();
    // Bounded by progress, not by the total: a request stuck on a lock (a
    // deadlock PostgreSQL does not break) stops every answer and fails after
    // WAIT; a machine busy with other builds only makes the answers slower.
    // (An absolute bound on all 320 requests timed out at load 8-10.)
    let mut seen = 0;
    loop {
        let statuses = match tokio::time::timeout(grpc_support::WAIT, clients.join_next()).await {
            Ok(Some(statuses)) => statuses,
            Ok(None) => break,
            Err(_) => {
                let now = answered_so_far.load(Ordering::Relaxed);
                assert!(
                    now > seen,
                    "no request answered for {:?} ({now} answered): stalled",
                    grpc_support::WAIT
                );
                seen = now;
                continue;
            }
        };
        for (what, status, text) in statuses.unwrap() {
            answered += 1;
            if status.is_server_error() {
                failed.push(format!("{what}: {status} {text}"));
            } else {
                assert!(
                    status.is_success(),
                    "{what}: {status} {text} (only 2xx expected)"
                );
            }
        }
    }
    assert_eq!(answered, (WRITERS + READERS) * ROUNDS);

    stop.cancel();
    let mut reports = 0;
    while let Some(n) = within("the spokes", spokes.join_next()).await {
        reports += n.unwrap();
    }
    assert!(
        reports > CLUSTERS,
        "the spokes reported ({reports} reports)"
    );
    grpc.stop().await;
    // Every backend of the hub exits, flushing its deadlock counter.
    hub.pool.close().await;
    let after = deadlocks(&hub.url).await;

    assert!(failed.is_empty(), "5xx answers: {failed:#?}");
    assert_eq!(after - before, 0, "PostgreSQL detected deadlocks");
    // The spokes' reports made it through.
    let mut conn = sqlx::PgConnection::connect(&hub.url).await.unwrap();
    let (reported,): (i64,) = sqlx::query_as("select count(distinct cluster) from object_status")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    assert_eq!(reported, CLUSTERS as i64);
}
