//! The `fleetgate-hub` binary as a process: `migrate` applies the schema
//! (idempotently), `serve` bootstraps the admin token from the environment,
//! serves, and exits cleanly on SIGTERM.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fleetgate_tests::{ChildGuard, bin_path, free_port, hub_serve, test_db, wait_readyz};

const ADMIN: &str = "fga_process-test-admin-secret-0";

#[tokio::test]
async fn migrate_is_idempotent() {
    let db = test_db().await;
    for _ in 0..2 {
        let out = Command::new(bin_path("fleetgate-hub"))
            .arg("migrate")
            .env("DATABASE_URL", &db.url)
            .output()
            .expect("run migrate");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
    let (rev,): (i64,) = sqlx::query_as("select revision from fleet_revision")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert_eq!(rev, 0);
}

#[tokio::test]
async fn serve_bootstraps_and_stops_on_sigterm() {
    let db = test_db().await;
    let http = free_port();
    let child = hub_serve(&db.url, http, free_port(), ADMIN)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hub");
    let mut guard = ChildGuard(child);
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let base = format!("http://127.0.0.1:{http}");
    wait_readyz(&client, &base, 200, &mut guard).await;
    // The bootstrap token from the environment works; a wrong one does not.
    let r = client
        .get(format!("{base}/api/v1/tokens"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let body: serde_json::Value = r.json().await.unwrap();
    assert_eq!(body["items"][0]["name"], "bootstrap-admin");
    assert_eq!(body["items"][0]["role"], "admin");
    let r = client
        .get(format!("{base}/api/v1/tokens"))
        .bearer_auth("fga_wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);

    guard.terminate();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(st) = guard.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            Instant::now() < deadline,
            "hub still running 30s after SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(status.success(), "exit status after SIGTERM: {status}");
}
