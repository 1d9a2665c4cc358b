//! Crash safety: the real `fleetgate-hub serve` process takes concurrent
//! writes and is SIGKILLed mid-flight. Every write that got a 2xx must be in
//! the database afterwards, with its audit row (commit before response).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fleetgate_tests::{ChildGuard, free_port, hub_serve, test_db, wait_readyz};
use serde_json::json;
use tokio::sync::watch;

const ADMIN: &str = "fga_crash-test-admin-secret-000";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_sigkill() {
    let db = test_db().await;
    let http = free_port();
    let grpc = free_port();
    let log = tempfile::NamedTempFile::new().unwrap();
    let child = hub_serve(&db.url, http, grpc, ADMIN)
        .stderr(log.reopen().unwrap())
        .spawn()
        .expect("spawn hub");
    let mut guard = ChildGuard(child);
    let base = format!("http://127.0.0.1:{http}");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    wait_readyz(&client, &base, 200, &mut guard).await;
    let started = Instant::now();

    // Writers: clusters and gates, acknowledged names collected.
    let acked = Arc::new(Mutex::new(BTreeSet::<(String, String)>::new()));
    let (count_tx, mut count_rx) = watch::channel(0usize);
    let count_tx = Arc::new(count_tx);
    let mut writers = Vec::new();
    for w in 0..8 {
        let client = client.clone();
        let base = base.clone();
        let acked = acked.clone();
        let count_tx = count_tx.clone();
        writers.push(tokio::spawn(async move {
            for i in 0.. {
                let (kind, name, url, body) = if w % 2 == 0 {
                    let name = format!("c-{w}-{i}");
                    let body = json!({"name": name, "labels": {"writer": w.to_string()}});
                    ("cluster", name, format!("{base}/api/v1/clusters"), body)
                } else {
                    let name = format!("g-{w}-{i}");
                    let body = json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate",
                        "metadata": {"name": name},
                        "spec": {"clusters": {"names": ["c-0-0"]}, "default": "closed"}});
                    ("gate", name, format!("{base}/api/v1/gates"), body)
                };
                let sent = client.post(url).bearer_auth(ADMIN).json(&body).send().await;
                match sent {
                    Ok(r) if r.status().is_success() => {
                        acked.lock().unwrap().insert((kind.to_string(), name));
                        count_tx.send_modify(|n| *n += 1);
                    }
                    Ok(r) => panic!("unexpected {} for {name}", r.status()),
                    // The hub is gone: stop.
                    Err(_) => return,
                }
            }
        }));
    }

    // Kill the hub once it has acknowledged a good number of writes, while
    // the writers are still sending.
    tokio::time::timeout(Duration::from_secs(120), count_rx.wait_for(|n| *n >= 200))
        .await
        .expect("200 writes within 120s")
        .unwrap();
    let elapsed = started.elapsed();
    guard.0.kill().expect("SIGKILL");
    let _ = guard.0.wait();
    for w in writers {
        tokio::time::timeout(Duration::from_secs(60), w)
            .await
            .expect("writer ends after the kill")
            .expect("writer task");
    }

    let acked = acked.lock().unwrap().clone();
    assert!(acked.len() >= 200);
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let clusters: BTreeSet<String> = sqlx::query_scalar("select name from clusters")
        .fetch_all(&pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let gates: BTreeSet<String> = sqlx::query_scalar("select name from gates")
        .fetch_all(&pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let audited: BTreeSet<(String, String)> =
        sqlx::query_as::<_, (String, String)>("select target_kind, target_name from audit_log")
            .fetch_all(&pool)
            .await
            .unwrap()
            .into_iter()
            .collect();
    for (kind, name) in &acked {
        let stored = if kind == "cluster" {
            clusters.contains(name)
        } else {
            gates.contains(name)
        };
        assert!(stored, "acknowledged {kind} {name} missing after the crash");
        assert!(
            audited.contains(&(kind.clone(), name.clone())),
            "acknowledged {kind} {name} has no audit row"
        );
    }
    // Nothing half-written: every stored object has its audit row.
    for c in &clusters {
        assert!(
            audited.contains(&("cluster".to_string(), c.clone())),
            "{c} unaudited"
        );
    }
    for g in &gates {
        assert!(
            audited.contains(&("gate".to_string(), g.clone())),
            "{g} unaudited"
        );
    }
    // A figure, not an assertion: acknowledged writes per second through
    // the real process (8 concurrent writers, debug or release build).
    println!(
        "acknowledged {} writes before the kill ({:.0} writes/s); {} clusters and {} gates stored",
        acked.len(),
        200.0 / elapsed.as_secs_f64(),
        clusters.len(),
        gates.len()
    );
}
