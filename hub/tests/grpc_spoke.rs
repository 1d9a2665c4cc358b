//! The spoke stream over a real socket on a real database: snapshots follow
//! REST writes, isolation between clusters, no redundant snapshot on
//! reconnect, the auth matrix, token rotation and cluster deletion while
//! connected, report ingestion visible through REST, listener loss + resync.

mod common;
mod grpc_support;

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use common::{Hub, business_hours};
use fleetgate_hub::{Actor, Role};
use fleetgate_proto::v1 as pb;
use grpc_support::{Grpc, TestSpoke, gate_names, kustomization, within};
use serde_json::{Value, json};
use sqlx::Connection as _;
use tonic::Code;

fn root() -> Actor {
    Actor::new("bootstrap-admin", Role::Admin)
}

/// Polls the REST status of `cluster` until `done` holds (bounded).
async fn status_until(hub: &Hub, cluster: &str, done: impl Fn(&Value) -> bool) -> Value {
    within("REST status to reflect the report", async {
        loop {
            let r = hub.get(&format!("/api/v1/clusters/{cluster}/status")).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            if done(&r.body) {
                return r.body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

#[tokio::test]
async fn a_report_in_parts_is_applied_whole_and_an_unfinished_one_never() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let rev = spoke.snapshot().await.revision;

    // Three parts: stored together, with the last part's clock offset.
    spoke
        .report_part(rev, vec![kustomization("apps", "a", false, &[])], 1, true)
        .await;
    spoke
        .report_part(rev, vec![kustomization("apps", "b", false, &[])], 2, true)
        .await;
    spoke
        .report_part(rev, vec![kustomization("apps", "c", false, &[])], 3, false)
        .await;
    let body = status_until(&hub, "c1", |b| b["cluster"]["clockOffsetMs"] == 3).await;
    let mut names: Vec<String> = body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["a", "b", "c"], "{body}");

    // A first part, then the stream ends: once the hub has handled the end
    // (the cluster reads as disconnected) the unfinished report was dropped.
    spoke
        .report_part(rev, vec![kustomization("apps", "x", false, &[])], 99, true)
        .await;
    spoke.close();
    let body = status_until(&hub, "c1", |b| b["cluster"]["connected"] == false).await;
    assert_eq!(body["cluster"]["clockOffsetMs"], 3, "{body}");
    assert_eq!(body["objects"].as_array().unwrap().len(), 3, "{body}");

    // Parts together beyond the limit: INVALID_ARGUMENT naming the field.
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", rev)
        .await
        .unwrap();
    let max = fleetgate_proto::report_parts::MAX_REPORT_OBJECTS;
    let tiny = |i: usize| pb::ObjectStatus {
        kind: "Kustomization".into(),
        namespace: "a".into(),
        name: format!("k{i}"),
        ..Default::default()
    };
    // Two parts of max/2 (each well under the 4 MiB message limit), then one more.
    spoke
        .report_part(rev, (0..max / 2).map(tiny).collect(), 5, true)
        .await;
    spoke
        .report_part(rev, (max / 2..max).map(tiny).collect(), 5, true)
        .await;
    spoke
        .report_part(
            rev,
            vec![kustomization("apps", "one-more", false, &[])],
            5,
            false,
        )
        .await;
    let err = spoke.error().await;
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert!(err.message().contains("report.objects"), "{err:?}");
    assert!(err.message().contains("100000"), "{err:?}");
    let body = hub.get("/api/v1/clusters/c1/status").await.body;
    assert_eq!(body["objects"].as_array().unwrap().len(), 3, "{body}");
    grpc.stop().await;
}

#[tokio::test]
async fn gate_change_via_rest_reaches_connected_spoke_and_only_its_cluster() {
    let hub = Hub::new().await;
    let t1 = hub.register("prod-1", json!({"env": "prod"})).await;
    let _t2 = hub.register("dev-1", json!({"env": "dev"})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &t1, "prod-1", 0)
        .await
        .unwrap();
    let s0 = spoke.snapshot().await;
    assert_eq!(s0.cluster, "prod-1");
    assert!(s0.gates.is_empty());
    assert!(s0.hub_time.is_some());

    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s1 = spoke.snapshot().await;
    assert_eq!(gate_names(&s1), vec!["bh"]);
    assert!(s1.revision > s0.revision);
    let gate = fleetgate_policy::parse_gate_json(
        serde_json::from_str(&s1.gates[0].manifest_json).unwrap(),
    )
    .unwrap();
    assert_eq!(gate.name(), "bh");
    assert_eq!(s1.gates[0].version, 1);

    // A gate for the dev clusters changes nothing for prod-1: the next
    // snapshot prod-1 gets is the one for the override below.
    let r = hub
        .create_gate_yaml(&business_hours("dev-hours", "dev"))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = hub
        .post_json(
            "/api/v1/gates/bh/open",
            &hub.operator,
            json!({"for": "1h", "reason": "hotfix INC-42"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let s2 = spoke.snapshot().await;
    assert_eq!(gate_names(&s2), vec!["bh"]);
    assert_eq!(s2.overrides.len(), 1);
    assert_eq!(s2.overrides[0].state, "open");
    assert_eq!(s2.overrides[0].reason, "hotfix INC-42");
    assert_eq!(s2.overrides[0].actor, "ops");
    assert!(s2.revision > s1.revision);
    grpc.stop().await;
}

#[tokio::test]
async fn reconnect_with_current_revision_gets_no_redundant_snapshot() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    drop(spoke);

    // Holding the current revision: the first message is a keepalive.
    let mut again = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    let k = again.expect_keepalive().await;
    assert_eq!(k.revision, s.revision);

    // Holding an older revision: the snapshot comes first.
    let mut old = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision - 1)
        .await
        .unwrap();
    match old.next().await {
        Ok(Some(pb::HubMessage {
            msg: Some(pb::hub_message::Msg::Snapshot(s2)),
        })) => assert_eq!(s2.revision, s.revision),
        other => panic!("expected a snapshot first, got {other:?}"),
    }
    grpc.stop().await;
}

#[tokio::test]
async fn spoke_auth_matrix() {
    let hub = Hub::new().await;
    let t1 = hub.register("c1", json!({})).await;
    let _t2 = hub.register("c2", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let ch = || grpc.channel.clone();

    // Missing / unknown / API tokens: refused before the stream starts.
    let mut client = grpc.spoke_client();
    let (_tx, rx) = tokio::sync::mpsc::channel::<pb::SpokeMessage>(1);
    let err = client
        .connect(tokio_stream::wrappers::ReceiverStream::new(rx))
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    for bad in ["fgs_not-a-real-token", hub.admin.as_str()] {
        let err = TestSpoke::connect(ch(), bad, "c1", 0).await.err().unwrap();
        assert_eq!(err.code(), Code::Unauthenticated, "{bad}: {err:?}");
    }

    // c1's token naming c2: permission denied, and no snapshot of c2 leaks.
    let mut s = TestSpoke::connect(ch(), &t1, "c2", 0).await.unwrap();
    let err = s.next().await.unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied, "{err:?}");
    assert!(err.message().contains("c1"), "{err:?}");

    // The first message must be a Hello.
    let (tx, rx) = tokio::sync::mpsc::channel(1);
    tx.send(pb::SpokeMessage {
        msg: Some(pb::spoke_message::Msg::Report(pb::StatusReport::default())),
    })
    .await
    .unwrap();
    let mut stream = client
        .connect(grpc_support::authed(
            tokio_stream::wrappers::ReceiverStream::new(rx),
            &t1,
        ))
        .await
        .unwrap()
        .into_inner();
    let err = within("hello error", stream.message()).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument);
    assert!(err.message().starts_with("hello:"), "{err:?}");
    grpc.stop().await;
}

#[tokio::test]
async fn rotated_token_and_deleted_cluster_end_the_stream() {
    let hub = Hub::new().await;
    let t1 = hub.register("c1", json!({})).await;
    let t2 = hub.register("c2", json!({})).await;
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut s1 = TestSpoke::connect(grpc.channel.clone(), &t1, "c1", 0)
        .await
        .unwrap();
    s1.snapshot().await;
    let rotated = hub
        .service
        .rotate_cluster_token(&root(), "c1", Some("leaked"))
        .await
        .unwrap();
    let err = s1.error().await;
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    let err = TestSpoke::connect(grpc.channel.clone(), &t1, "c1", 0)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), Code::Unauthenticated);
    let mut fresh = TestSpoke::connect(grpc.channel.clone(), &rotated.token, "c1", 0)
        .await
        .unwrap();
    assert_eq!(fresh.snapshot().await.cluster, "c1");

    let mut s2 = TestSpoke::connect(grpc.channel.clone(), &t2, "c2", 0)
        .await
        .unwrap();
    s2.snapshot().await;
    hub.service
        .delete_cluster(&root(), "c2", None)
        .await
        .unwrap();
    let err = s2.error().await;
    assert_eq!(err.code(), Code::Unauthenticated, "{err:?}");
    grpc.stop().await;
}

#[tokio::test]
async fn reports_are_visible_through_rest_and_replace_the_object_set() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({"env": "prod"})).await;
    let r = hub.create_gate_yaml(&business_hours("bh", "prod")).await;
    assert_eq!(r.status, StatusCode::CREATED);
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;

    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    // web's newest revision failed its health check: Flux's Ready condition travels along.
    let failing = pb::ObjectStatus {
        ready: "False".into(),
        ready_reason: "HealthCheckFailed".into(),
        ready_message: "health check failed after 5m: Deployment/apps/web not ready".into(),
        stalled: true,
        generation: 3,
        observed_generation: 2,
        last_attempted_revision: "main@sha1:bbb".into(),
        ..kustomization("apps", "web", true, &["bh"])
    };
    spoke
        .report(
            s.revision,
            vec![failing, kustomization("apps", "api", false, &["bh"])],
        )
        .await;
    // (REST reads the cluster row and its objects in separate statements, so
    // wait until both show the report.)
    let body = status_until(&hub, "c1", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 2) && b["cluster"]["clockOffsetMs"] == 42
    })
    .await;
    assert_eq!(body["counts"]["held"], 1, "{body}");
    assert_eq!(body["cluster"]["connected"], true, "{body}");
    assert_eq!(body["cluster"]["spokeVersion"], "test-0.1.0", "{body}");
    assert_eq!(body["cluster"]["clockOffsetMs"], 42, "{body}");
    assert_eq!(
        body["cluster"]["connectedReplica"], "test-replica",
        "{body}"
    );
    let web = body["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["name"] == "web")
        .unwrap();
    assert_eq!(web["suspendedBy"], json!(["bh"]));
    assert_eq!(web["newestSourceRevision"], "main@sha1:bbb");
    assert_eq!(
        (&web["ready"], &web["readyReason"], &web["stalled"]),
        (&json!("False"), &json!("HealthCheckFailed"), &json!(true)),
        "{web}"
    );
    assert_eq!(
        web["readyMessage"],
        "health check failed after 5m: Deployment/apps/web not ready"
    );
    assert_eq!(
        (&web["generation"], &web["observedGeneration"]),
        (&json!(3), &json!(2))
    );
    assert_eq!(web["lastAttemptedRevision"], "main@sha1:bbb");
    assert_eq!(web["reportRevision"], s.revision);
    // The same through AdminService.
    let st = grpc
        .admin()
        .get_cluster_status(grpc_support::authed(
            pb::GetClusterStatusRequest { name: "c1".into() },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    let web = st.objects.iter().find(|o| o.name == "web").unwrap();
    assert_eq!(
        (web.ready.as_str(), web.ready_reason.as_str(), web.stalled),
        ("False", "HealthCheckFailed", true)
    );
    assert!(web.ready_message.contains("Deployment/apps/web not ready"));
    assert_eq!((web.generation, web.observed_generation), (3, 2));
    assert_eq!(web.last_attempted_revision, "main@sha1:bbb");
    assert_eq!(web.report_revision, s.revision);
    let api = st.objects.iter().find(|o| o.name == "api").unwrap();
    assert_eq!((api.ready.as_str(), api.stalled), ("True", false));

    // A report is the full set: the object missing from it is gone.
    spoke
        .report(
            s.revision,
            vec![kustomization("apps", "api", false, &["bh"])],
        )
        .await;
    let body = status_until(&hub, "c1", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    assert_eq!(body["counts"]["held"], 0, "{body}");
    // Reports never bump the fleet revision (they are not desired state).
    assert_eq!(hub.revision().await as u64, s.revision);

    // One object the hub cannot store is left out and listed with its field;
    // the rest of the report is stored and the stream stays open.
    let mut bad = kustomization("apps", "x", false, &[]);
    bad.kind = "Deployment".into();
    let mut odd = kustomization("apps", "api", false, &["bh"]);
    odd.ready = "False".into();
    odd.ready_message = "kustomize build failed: bad byte \u{0} here".into();
    spoke.report(s.revision, vec![odd, bad]).await;
    let body = status_until(&hub, "c1", |b| b["reportProblems"]["total"] == 2).await;
    let problems = &body["reportProblems"]["items"];
    assert_eq!(
        problems[0]["field"], "report.objects[0].ready_message",
        "{body}"
    );
    assert_eq!(problems[0]["action"], "replaced", "{body}");
    assert_eq!(problems[1]["field"], "report.objects[1].kind", "{body}");
    assert_eq!(problems[1]["action"], "dropped", "{body}");
    assert_eq!(body["objects"].as_array().unwrap().len(), 1);
    assert_eq!(
        body["objects"][0]["readyMessage"],
        "kustomize build failed: bad byte \u{FFFD} here"
    );
    assert_eq!(body["cluster"]["connected"], true, "{body}");
    grpc.stop().await;
}

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

#[tokio::test]
async fn drain_ends_every_stream_cleanly_and_writes_the_reports_it_received() {
    let hub = Hub::new().await;
    // Reports are written only by the drain: the batcher's period is longer
    // than the test.
    let opts = fleetgate_hub::grpc::GrpcOptions {
        report_flush_ms: 600_000,
        ..Grpc::opts()
    };
    let grpc = Grpc::start(hub.service.clone(), opts).await;
    let names = ["c1", "c2", "c3"];
    let mut spokes = Vec::new();
    for name in names {
        let token = hub.register(name, json!({})).await;
        let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, name, 0)
            .await
            .unwrap();
        let s = spoke.snapshot().await;
        spoke
            .report(s.revision, vec![kustomization("apps", name, false, &[])])
            .await;
        spokes.push(spoke);
    }
    within("the hub to receive every report", async {
        while grpc.metrics.reports_received.get() < names.len() as u64 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    for name in names {
        let r = hub.get(&format!("/api/v1/clusters/{name}/status")).await;
        let objects = r.body["objects"].as_array();
        assert!(
            objects.is_none_or(Vec::is_empty),
            "written before the drain: {}",
            r.text
        );
    }
    grpc.shutdown.cancel();
    for spoke in &mut spokes {
        spoke.clean_end("the stream to end").await;
    }
    grpc.stop().await;
    // Every report received before the drain is stored, and no cluster reads
    // as connected to the stopped replica.
    for name in names {
        let r = hub.get(&format!("/api/v1/clusters/{name}/status")).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
        assert_eq!(r.body["objects"][0]["name"], name, "{}", r.text);
        assert_eq!(r.body["cluster"]["connected"], false, "{}", r.text);
    }
}

#[tokio::test]
async fn streams_end_cleanly_at_their_age_limit_and_resume_without_a_snapshot() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let opts = fleetgate_hub::grpc::GrpcOptions {
        // Well above the 300 ms keepalive, so the resumed stream's keepalive
        // comes before its own age limit.
        spoke_stream_max_age: Duration::from_secs(1),
        ..Grpc::opts()
    };
    let grpc = Grpc::start(hub.service.clone(), opts).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    spoke.clean_end("the stream to reach its age limit").await;
    // The spoke reconnects holding the current revision: no snapshot resent.
    let mut again = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    assert_eq!(again.expect_keepalive().await.revision, s.revision);
    grpc.stop().await;
}
