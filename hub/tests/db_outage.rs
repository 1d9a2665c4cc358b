//! A PostgreSQL outage under a running `fleetgate-hub serve` process (its own
//! throwaway server, stopped and started again during the test): `/readyz`
//! answers 503 before a readiness probe would give up, API calls answer 503
//! `unavailable` with `Retry-After` (gRPC UNAVAILABLE) instead of waiting out
//! the pool and answering 500, and the hub recovers by itself: once `/readyz`
//! answers 200 again its change listener is back, so a write reaches the
//! spokes at once.

use std::process::Stdio;
use std::time::Duration;

use fleetgate_pgtemp::TempPostgres;
use fleetgate_proto::AdminServiceClient;
use fleetgate_proto::v1 as pb;
use fleetgate_tests::{ChildGuard, free_port, hub_serve, wait_readyz};
use serde_json::{Value, json};
use sqlx::Connection;
use tonic::Code;

const ADMIN: &str = "fga_outage-test-admin-secret-0";

/// What a readiness probe allows (deploy/hub: `timeoutSeconds: 2`); every
/// outage answer must come before it.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs `f` on the blocking pool (pgtemp waits with std sleeps).
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    tokio::task::spawn_blocking(f).await.unwrap()
}

async fn close_gate(client: &reqwest::Client, base: &str) -> reqwest::Response {
    client
        .post(format!("{base}/api/v1/gates/g/close"))
        .bearer_auth(ADMIN)
        .json(&json!({"for": "1h", "reason": "outage test"}))
        .send()
        .await
        .expect("the write answers before the probe timeout")
}

/// A 503 `unavailable` with a `Retry-After` of whole seconds.
async fn assert_unavailable(r: reqwest::Response, what: &str) {
    assert_eq!(r.status(), 503, "{what}");
    let retry: u64 = r
        .headers()
        .get("retry-after")
        .unwrap_or_else(|| panic!("{what}: Retry-After"))
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry >= 1, "{what}: Retry-After {retry}");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], "unavailable", "{what}: {body}");
}

async fn metrics(client: &reqwest::Client, base: &str) -> String {
    let r = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    r.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_answers_503_fast_and_recovers_unaided() {
    let pg = blocking(|| TempPostgres::start().unwrap_or_else(|e| panic!("{e}"))).await;
    let mut admin = sqlx::PgConnection::connect(&pg.url).await.unwrap();
    sqlx::query("create database fleetgate")
        .execute(&mut admin)
        .await
        .unwrap();
    admin.close().await.unwrap();
    let url = format!("{}/fleetgate", pg.base_url);

    let (http, grpc) = (free_port(), free_port());
    let child = hub_serve(&url, http, grpc, ADMIN)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn hub");
    let mut hub = ChildGuard(child);
    let base = format!("http://127.0.0.1:{http}");
    let client = reqwest::Client::builder()
        .timeout(PROBE_TIMEOUT)
        .build()
        .unwrap();
    wait_readyz(&client, &base, 200, &mut hub).await;
    let gate = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
        "spec": {"clusters": {"names": ["c1"]}, "default": "open"}
    });
    let r = client
        .post(format!("{base}/api/v1/gates"))
        .bearer_auth(ADMIN)
        .json(&gate)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let mut admin_api = AdminServiceClient::new(
        tonic::transport::Endpoint::from_shared(format!("http://127.0.0.1:{grpc}"))
            .unwrap()
            .connect_lazy(),
    );

    let mut pg = blocking(move || {
        let mut pg = pg;
        pg.stop();
        pg
    })
    .await;

    // The first readiness check after the stop, before the hub may know.
    let r = client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .expect("/readyz answers before the probe timeout");
    assert_eq!(r.status(), 503);
    assert_unavailable(close_gate(&client, &base).await, "write").await;
    let r = client
        .get(format!("{base}/api/v1/gates"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .expect("the read answers before the probe timeout");
    assert_unavailable(r, "read").await;
    let mut req = tonic::Request::new(pb::ListGatesRequest::default());
    req.metadata_mut()
        .insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    req.set_timeout(PROBE_TIMEOUT);
    let err = admin_api.list_gates(req).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    // Process endpoints that need no database keep answering.
    let r = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert!(
        metrics(&client, &base)
            .await
            .contains("fleetgate_hub_database_up 0")
    );

    pg = blocking(move || {
        pg.restart().unwrap_or_else(|e| panic!("{e}"));
        pg
    })
    .await;
    wait_readyz(&client, &base, 200, &mut hub).await;
    // Ready again means changes flow again: the change listener has listened
    // anew by then (it lagged up to 6 s behind /readyz in sqlx's connect backoff).
    let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
    let listening: i64 = sqlx::query_scalar(
        "select count(*) from pg_stat_activity where application_name like 'fleetgate-hub-listener/%'",
    )
    .fetch_one(&mut admin)
    .await
    .unwrap();
    assert_eq!(
        listening, 1,
        "the change listener is back when /readyz turns 200"
    );
    admin.close().await.unwrap();
    let notified = |m: &str| {
        m.lines()
            .find_map(|l| l.strip_prefix("fleetgate_hub_grpc_change_notifications_total "))
            .and_then(|v| v.trim().parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    let before = notified(&metrics(&client, &base).await);
    let r = close_gate(&client, &base).await;
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    // Its notification reaches the listener (bounded: a hang fails fast).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while notified(&metrics(&client, &base).await) <= before {
        assert!(
            std::time::Instant::now() < deadline,
            "the write's notification never reached the listener"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let r = client
        .get(format!("{base}/api/v1/overrides?gate=g"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["items"].as_array().map(Vec::len), Some(1), "{body}");
    assert!(
        metrics(&client, &base)
            .await
            .contains("fleetgate_hub_database_up 1")
    );
    assert!(hub.0.try_wait().unwrap().is_none(), "hub still running");
    drop(hub);
    blocking(move || drop(pg)).await;
}
