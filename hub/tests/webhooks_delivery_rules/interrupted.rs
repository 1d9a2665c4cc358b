//! An attempt cut off by a dead replica: it claimed the delivery (counted an attempt) and
//! never recorded an answer. The replica that takes the delivery over once the lease ran out
//! records that attempt as interrupted, so the count and the attempt log agree.

use super::*;
use fleetgate_hub::clock::Clock as _;

#[tokio::test]
async fn an_attempt_cut_off_by_a_dead_replica_is_recorded_as_interrupted() {
    let hub = Hub::new().await;
    let (r, router) = replica_with(&hub, "r1", &notify_support::opts());
    let (url, mut rx) = receiver(0).await;
    let secret = subscribe(&router, common::ADMIN, json!({"name": "ops", "url": url})).await;
    enqueue_numbered(&hub, 0).await;

    // Replica "dead" claims it (the attempt counted, the lease taken) and dies before
    // sending or recording anything.
    let started = hub.clock.now();
    let mut conn = hub.pool.acquire().await.unwrap();
    let claimed = fleetgate_hub::db::webhooks::claim(&mut conn, "dead", 30.0, 64, started)
        .await
        .unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(tick(&hub, &r).await, 0, "leased by the dead replica");
    // Its lease runs out (the database's clock: moved back instead of waited for).
    sqlx::query("update webhook_deliveries set lease_until = now() - interval '1 second'")
        .execute(&mut *conn)
        .await
        .unwrap();
    drop(conn);

    // r1 takes it over, sends it and records both attempts.
    hub.clock.set(started + chrono::Duration::seconds(40));
    assert_eq!(tick(&hub, &r).await, 1);
    let (h, _, raw) = next(&mut rx).await;
    verify(&secret, &h, &raw);
    let d = newest(&router, "ops").await;
    assert_eq!(d["state"], "delivered", "{d}");
    assert_eq!(d["attempts"], 2, "{d}");
    let log = d["attemptLog"].as_array().unwrap();
    assert_eq!(log.len(), 2, "one entry per counted attempt: {d}");
    assert_eq!(
        (&log[0]["attempt"], &log[0]["replica"], &log[0]["status"]),
        (&json!(1), &json!("dead"), &Value::Null),
        "{d}"
    );
    assert_eq!(instant(&log[0]["at"]), started, "when it started: {d}");
    let error = log[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.starts_with(
            "interrupted: replica dead recorded no answer before its lease expired at "
        ),
        "{d}"
    );
    assert_eq!(
        (&log[1]["attempt"], &log[1]["replica"], &log[1]["status"]),
        (&json!(2), &json!("r1"), &json!(204)),
        "{d}"
    );
}
