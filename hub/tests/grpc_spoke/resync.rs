//! Listener loss and resync: a change written while the replica's LISTEN connection is
//! down (its notification lost) reaches the spoke by the resync after the reconnect, and
//! notifications flow again on the new connection.

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use serde_json::json;
use sqlx::Connection as _;

use crate::common::{Hub, business_hours};
use crate::grpc_support::{Grpc, TestSpoke, gate_names, within};
use crate::root;

/// Terminates the replica's LISTEN connection(s) on this test's database.
async fn kill_listeners(hub: &Hub) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity \
         where datname = current_database() and application_name like $1 || '/%') t",
    )
    .bind(fleetgate_hub::fanout::listener::LISTENER_APPLICATION_NAME)
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    n
}

async fn set_allow_connections(hub: &Hub, allow: bool) {
    let (db,): (String,) = sqlx::query_as("select current_database()")
        .fetch_one(&hub.pool)
        .await
        .unwrap();
    // PostgreSQL refuses this for the current database: run it from `postgres`.
    let opts = (*hub.pool.connect_options()).clone().database("postgres");
    let mut admin = sqlx::PgConnection::connect_with(&opts).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "alter database \"{db}\" with allow_connections {allow}"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
}

async fn listener_pids(hub: &Hub) -> Vec<i32> {
    sqlx::query_scalar(
        "select pid from pg_stat_activity where datname = current_database() \
         and application_name like $1 || '/%'",
    )
    .bind(fleetgate_hub::fanout::listener::LISTENER_APPLICATION_NAME)
    .fetch_all(&hub.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn changes_made_while_the_listener_is_down_arrive_after_resync() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    spoke.snapshot().await;
    let before = within("the listener to connect", async {
        loop {
            let pids = listener_pids(&hub).await;
            if !pids.is_empty() {
                return pids;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;

    // Keep the listener out while the change is written: new connections to
    // the database are refused (the pool's open connections keep working),
    // the listener is terminated, and its reconnect attempts fail. The
    // notification of the write is therefore lost; only the resync after the
    // reconnect can deliver the change.
    // The write goes through a service whose one connection is open already.
    let writer_pool = sqlx::postgres::PgPoolOptions::new()
        .max_connections(1)
        .min_connections(1)
        .connect_with((*hub.pool.connect_options()).clone())
        .await
        .unwrap();
    let writer = fleetgate_hub::Service::with_clock(writer_pool, Arc::new(hub.clock.clone()));
    let gate = fleetgate_policy::parse_gate(&business_hours("bh", "prod")).unwrap();
    writer.fleet_revision().await.unwrap();
    set_allow_connections(&hub, false).await;
    assert_eq!(kill_listeners(&hub).await, 1);
    within("the listener to be gone", async {
        while !listener_pids(&hub).await.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    writer.create_gate(&root(), gate, None).await.unwrap();
    assert!(listener_pids(&hub).await.is_empty());
    set_allow_connections(&hub, true).await;

    let s = spoke.snapshot().await;
    assert_eq!(gate_names(&s), vec!["bh"]);
    let after = within("the listener to reconnect", async {
        loop {
            let pids = listener_pids(&hub).await;
            if !pids.is_empty() && pids != before {
                return pids;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert_ne!(before, after);

    // Notifications flow again on the new connection.
    let r = hub
        .post_json(
            "/api/v1/gates/bh/close",
            &hub.operator,
            json!({"for": "2h", "reason": "freeze"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s2 = spoke.snapshot().await;
    assert_eq!(s2.overrides.len(), 1);
    assert_eq!(s2.overrides[0].state, "closed");
    grpc.stop().await;
}
