//! Two real `fleetgate-hub serve` processes on one database: a change written
//! through replica A reaches a spoke connected to replica B (LISTEN/NOTIFY),
//! also when B's listener was killed while the change was written (resync),
//! and SIGTERM on B ends its spoke streams cleanly so the spoke reconnects to
//! A without a redundant snapshot.

mod grpc_support;

use std::process::{Command, Stdio};
use std::time::Duration;

use fleetgate_proto::v1 as pb;
use fleetgate_tests::{ChildGuard, bin_path, free_port, test_db};
use grpc_support::{TestSpoke, authed, connect, gate_names, within};
use sqlx::{Connection as _, PgConnection};
use tonic::transport::Channel;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::{HealthCheckRequest, health_client::HealthClient};

const ADMIN: &str = "fga_replicas-test-admin-0123456789";

struct Replica {
    child: ChildGuard,
    grpc: Channel,
    http: u16,
}

impl Replica {
    /// One metric's value from the replica's `/metrics`.
    async fn metric(&self, name: &str) -> Option<f64> {
        let text = reqwest::get(format!("http://127.0.0.1:{}/metrics", self.http))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
    }
}

fn gate_yaml(name: &str) -> String {
    format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata:\n  name: {name}\nspec:\n  clusters:\n    selector:\n      matchLabels:\n        env: prod\n  default: closed\n"
    )
}

async fn start(db_url: &str, replica: &str) -> Replica {
    let (http, grpc) = (free_port(), free_port());
    let child = Command::new(bin_path("fleetgate-hub"))
        .args([
            "serve",
            "--database-url",
            db_url,
            "--http-addr",
            &format!("127.0.0.1:{http}"),
            "--grpc-addr",
            &format!("127.0.0.1:{grpc}"),
            "--replica-id",
            replica,
            "--spoke-keepalive",
            "1s",
        ])
        .env("FLEETGATE_ADMIN_TOKEN", ADMIN)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("starting fleetgate-hub");
    let child = ChildGuard(child);
    let grpc = connect(&format!("http://127.0.0.1:{grpc}")).await;
    // Ready when gRPC health says SERVING (migrations and listener are up).
    within(&format!("replica {replica} to serve"), async {
        loop {
            let mut health = HealthClient::new(grpc.clone());
            let r = health
                .check(HealthCheckRequest {
                    service: String::new(),
                })
                .await;
            if r.is_ok_and(|r| r.into_inner().status() == ServingStatus::Serving) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    Replica { child, grpc, http }
}

async fn listener_count(conn: &mut PgConnection, replica: &str) -> i64 {
    let (n,): (i64,) = sqlx::query_as(
        "select count(*) from pg_stat_activity where datname = current_database() \
         and application_name = $1",
    )
    .bind(format!("fleetgate-hub-listener/{replica}"))
    .fetch_one(conn)
    .await
    .unwrap();
    n
}

async fn set_allow_connections(admin_url: &str, db: &str, allow: bool) {
    let mut admin = sqlx::PgConnection::connect(admin_url).await.unwrap();
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "alter database \"{db}\" with allow_connections {allow}"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
}

#[tokio::test]
async fn changes_through_replica_a_reach_a_spoke_on_replica_b() {
    let db = test_db().await;
    let a = start(&db.url, "hub-a").await;
    let b = start(&db.url, "hub-b").await;
    let mut admin_a = fleetgate_proto::AdminServiceClient::new(a.grpc.clone());

    let reg = admin_a
        .register_cluster(authed(
            pb::RegisterClusterRequest {
                name: "edge-1".into(),
                labels: [("env".to_string(), "prod".to_string())].into(),
                reason: String::new(),
                ..Default::default()
            },
            ADMIN,
        ))
        .await
        .unwrap()
        .into_inner();
    let mut spoke = TestSpoke::connect(b.grpc.clone(), &reg.token, "edge-1", 0)
        .await
        .unwrap();
    let s0 = spoke.snapshot().await;
    assert!(s0.gates.is_empty());
    assert_eq!(
        b.metric("fleetgate_hub_grpc_spokes_connected").await,
        Some(1.0)
    );
    assert_eq!(
        a.metric("fleetgate_hub_grpc_spokes_connected").await,
        Some(0.0)
    );

    // Written through A, delivered by B.
    admin_a
        .create_gate(authed(
            pb::CreateGateRequest {
                manifest: gate_yaml("freeze"),
                reason: "replica test".into(),
            },
            ADMIN,
        ))
        .await
        .unwrap();
    let s1 = spoke.snapshot().await;
    assert_eq!(gate_names(&s1), vec!["freeze"]);
    assert!(s1.revision > s0.revision);
    assert_eq!(
        b.metric("fleetgate_hub_grpc_snapshots_sent_total").await,
        Some(2.0)
    );

    // B's listener is killed and kept out while A writes: B learns of the
    // change only by its resync after reconnecting.
    // One connection opened now: new ones are refused below.
    let mut conn = PgConnection::connect(&db.url).await.unwrap();
    assert_eq!(listener_count(&mut conn, "hub-b").await, 1);
    set_allow_connections(&db.admin_url, &db.name, false).await;
    let (killed,): (i64,) = sqlx::query_as(
        "select count(*) from (select pg_terminate_backend(pid) from pg_stat_activity \
         where datname = current_database() and application_name = 'fleetgate-hub-listener/hub-b') t",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(killed, 1);
    within("B's listener to be gone", async {
        while listener_count(&mut conn, "hub-b").await > 0 {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let o = admin_a
        .create_override(authed(
            pb::CreateOverrideRequest {
                gate: "freeze".into(),
                state: "open".into(),
                r#for: "1h".into(),
                reason: "hotfix".into(),
                ..Default::default()
            },
            ADMIN,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listener_count(&mut conn, "hub-b").await, 0);
    set_allow_connections(&db.admin_url, &db.name, true).await;
    let s2 = spoke.snapshot().await;
    assert_eq!(s2.overrides.len(), 1);
    assert_eq!(s2.overrides[0].id, o.id);

    // SIGTERM on B: the stream ends cleanly, B exits 0, and the spoke
    // reconnects to A holding the current revision: no snapshot is resent.
    b.child.terminate();
    spoke.clean_end("B's stream to end").await;
    let mut b = b;
    let status = within("B to exit", async {
        loop {
            if let Some(st) = b.child.0.try_wait().unwrap() {
                return st;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(status.success(), "{status:?}");
    let mut again = TestSpoke::connect(a.grpc.clone(), &reg.token, "edge-1", s2.revision)
        .await
        .unwrap();
    assert_eq!(again.expect_keepalive().await.revision, s2.revision);
    drop(a);
}
