//! Rollout waves at hub level, with real PostgreSQL and the injected clock (no waiting):
//! waves release in order with soak, a failed wave halts (onFailure halt vs close),
//! pause/resume/abort/release-next, approval, two replicas stepping one rollout release
//! each wave once, a restarted hub continues mid-soak, a freeze mid-rollout closes every
//! cluster at once, late joiners and the cluster-scoped open override's bypass. A freeze
//! made in a cluster fences that cluster's opening when it ends, as the hub's own does.

mod common;
mod grpc_support;
mod rollout_support;

use std::sync::Arc;
use std::time::Duration as StdDuration;

use axum::http::{Method, StatusCode};
use chrono::{Duration, TimeZone, Utc};
use fleetgate_hub::clock::ManualClock;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{Service, db};
use futures::StreamExt as _;
use rollout_support::{THREE_WAVES, fleet};
use serde_json::json;

#[tokio::test]
async fn waves_release_in_order_with_soak() {
    let f = fleet("", THREE_WAVES).await;
    assert!(f.step().await.is_empty(), "closed gate: no rollout");
    let r = f.hub.get("/api/v1/gates/waves/rollout").await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    f.at(13, 0);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    let opening = Utc.with_ymd_and_hms(2026, 11, 25, 13, 0, 0).unwrap();
    assert_eq!(f.release("c1").await, Some((0, opening)));
    assert_eq!(f.released().await, ["c1"]);
    let s = f.status().await;
    assert_eq!(s["state"], "running");
    assert_eq!(s["waves"][0]["state"], "released");
    assert_eq!(s["waves"][1]["clusters"][0]["name"], "c2");
    assert_eq!(s["waves"][1]["clusters"][1]["name"], "c3");
    assert_eq!(s["waves"][2]["clusters"].as_array().unwrap().len(), 3);
    // Every surface shows what the spokes enforce: c1 open, c2 waiting for its wave.
    assert_eq!(
        f.gate_state("c1").await,
        ("open".into(), "allow window 'day' until 17:00 UTC".into())
    );
    assert_eq!(
        f.gate_state("c2").await,
        ("closed".into(), "waiting for rollout wave 2".into())
    );

    // A report from before the release never passes the wave: c1 is still progressing.
    f.advance(1);
    assert!(f.step().await.is_empty());
    f.report(&["c1"], false).await;
    assert!(f.step().await.is_empty());
    assert_eq!(
        f.status().await["waves"][0]["clusters"][0]["health"],
        "progressing"
    );

    f.report(&["c1"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    let s = f.status().await;
    assert_eq!(s["waves"][0]["state"], "soaking");
    assert_eq!(s["soakUntil"], "2026-11-25T13:11:00Z");
    f.advance(9);
    assert!(f.step().await.is_empty(), "soak not over");
    assert_eq!(f.released().await, ["c1"]);
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.release"]);
    assert_eq!(f.released().await, ["c1", "c2", "c3"]);
    assert_eq!(f.release("c2").await, Some((1, opening)));

    f.report(&["c2", "c3"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.release"]);
    f.report(&["c4", "c5", "c6"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.complete"]);
    assert_eq!(f.status().await["state"], "completed");
    assert_eq!(f.released().await.len(), 6);
    assert_eq!(f.audit("rollout.release").await, 3);

    // The window closes: the rollout ends, every release leaves the snapshots at once.
    f.at(17, 0);
    assert_eq!(f.step().await, ["rollout.end"]);
    assert!(f.released().await.is_empty());
    // The next day's opening starts from the first wave again.
    f.hub
        .clock
        .set(Utc.with_ymd_and_hms(2026, 11, 26, 13, 0, 0).unwrap());
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn a_failed_wave_halts_and_resume_continues() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    // c1's spoke is disconnected: unknown, never healthy; failed after healthTimeout.
    f.advance(29);
    assert!(f.step().await.is_empty());
    assert_eq!(
        f.status().await["waves"][0]["clusters"][0]["health"],
        "unknown"
    );
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let s = f.status().await;
    assert_eq!(s["state"], "halted");
    assert!(s["detail"].as_str().unwrap().contains("c1"), "{s}");
    assert_eq!(s["waves"][0]["state"], "failed");
    assert_eq!(
        f.gate_state("c2").await.1,
        "waiting for rollout wave 2 (rollout halted)"
    );
    // Halt: the failed canary stays open, the other waves stay closed.
    assert_eq!(f.released().await, ["c1"]);
    f.advance(60);
    assert!(f.step().await.is_empty());
    assert_eq!(f.released().await, ["c1"]);
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.text);

    // Resume judges the wave afresh; a good report passes it.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "running");
    f.report(&["c1"], true).await;
    assert_eq!(f.step().await, ["rollout.healthy"]);
    assert_eq!(f.audit("rollout.resume").await, 1);
    assert_eq!(f.audit("rollout.halt").await, 1);
}

#[tokio::test]
async fn on_failure_close_recloses_the_failed_wave() {
    let f = fleet("    onFailure: close\n", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.advance(30);
    assert_eq!(f.step().await, ["rollout.halt"]);
    assert!(
        f.released().await.is_empty(),
        "the failed wave is closed again"
    );
    // Resume releases it again.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn pause_abort_release_next_and_approval() {
    let waves =
        "      - {name: canary, clusters: {names: [c1]}}\n      - {name: rest, approval: true}\n";
    let f = fleet("", waves).await;
    f.at(13, 0);
    f.step().await;
    // A viewer may not, an operator may.
    let r = f
        .hub
        .call(
            Method::POST,
            "/api/v1/gates/waves/rollout/pause",
            Some(&f.hub.viewer),
            None,
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = f.command("pause").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "paused");
    assert_eq!(f.command("pause").await.status, StatusCode::CONFLICT);
    assert_eq!(f.command("bogus").await.status, StatusCode::NOT_FOUND);

    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(15);
    assert!(
        f.step().await.is_empty(),
        "paused: no release after the soak"
    );
    assert_eq!(f.released().await, ["c1"]);
    assert_eq!(f.command("resume").await.status, StatusCode::OK);
    // Soaked, but the last wave waits for approval.
    f.step().await;
    let s = f.status().await;
    assert_eq!(s["waitingForApproval"], true, "{s}");
    assert_eq!(s["waves"][1]["state"], "waiting-approval");
    assert_eq!(f.released().await, ["c1"]);
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await.len(), 6);
    assert_eq!(f.audit("rollout.release-next").await, 1);

    let r = f.command("abort").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(r.body["state"], "aborted");
    assert_eq!(f.command("resume").await.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn release_next_ends_the_soak() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    assert_eq!(
        f.command("release-next").await.status,
        StatusCode::CONFLICT,
        "not healthy yet"
    );
    f.report(&["c1"], true).await;
    f.step().await;
    let r = f.command("release-next").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(f.released().await, ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn two_replicas_release_each_wave_once() {
    let f = fleet("", "      - {count: 1}\n      - {count: 1}\n      - {}\n").await;
    let other = Service::with_clock(f.hub.pool.clone(), Arc::new(f.hub.clock.clone()));
    f.at(13, 0);
    for _ in 0..5 {
        let (a, b) = tokio::join!(f.hub.service.step_rollouts(), other.step_rollouts());
        a.unwrap();
        b.unwrap();
    }
    assert_eq!(f.audit("rollout.start").await, 1);
    assert_eq!(f.audit("rollout.release").await, 1);
    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(10);
    for _ in 0..5 {
        let (a, b) = tokio::join!(f.hub.service.step_rollouts(), other.step_rollouts());
        a.unwrap();
        b.unwrap();
    }
    assert_eq!(f.audit("rollout.release").await, 2);
    assert_eq!(f.audit("rollout.healthy").await, 1);
}

#[tokio::test]
async fn a_restarted_hub_continues_mid_soak() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(5);
    // A new hub process on the same database, with its own clock at the same instant.
    let clock = ManualClock::new(Utc.with_ymd_and_hms(2026, 11, 25, 13, 5, 0).unwrap());
    let pool = db::connect(&f.hub.url, 4).await.unwrap();
    let restarted = Service::with_clock(pool, Arc::new(clock.clone()));
    assert!(
        restarted.step_rollouts().await.unwrap().is_empty(),
        "still soaking"
    );
    clock.advance(Duration::minutes(5));
    let events = restarted.step_rollouts().await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].action, "rollout.release");
    assert_eq!(f.released().await, ["c1", "c2", "c3"]);
}

#[tokio::test]
async fn a_freeze_mid_rollout_closes_everything_at_once() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.report(&["c1"], true).await;
    f.step().await;
    f.advance(10);
    f.step().await;
    assert_eq!(f.released().await.len(), 3);
    let r = f
        .hub
        .post_json(
            "/api/v1/gates/waves/close",
            &f.hub.operator,
            json!({"for": "1h", "reason": "freeze"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(f.step().await, ["rollout.end"]);
    assert!(f.released().await.is_empty());
    assert_eq!(f.status().await["state"], "ended");
    // The freeze expires inside the window: a new opening, a new rollout from wave 1.
    f.advance(60);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    assert_eq!(f.released().await, ["c1"]);
}

#[tokio::test]
async fn late_joiners_and_bypass() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    // c7 comes into scope while wave 2 has not started: it joins wave 2.
    f.hub.register("c7", json!({"env": "prod"})).await;
    assert_eq!(f.step().await, ["rollout.join"]);
    let s = f.status().await;
    let wave2: Vec<&str> = s["waves"][1]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert!(wave2.contains(&"c7"), "{s}");
    // A cluster-scoped open override opens c6 ahead of its wave (audited).
    let r = f
        .hub
        .post_json(
            "/api/v1/gates/waves/open",
            &f.hub.operator,
            json!({"for": "1h", "reason": "hotfix", "clusters": {"names": ["c6"]}}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    assert_eq!(f.step().await, ["rollout.bypass"]);
    assert_eq!(f.released().await, ["c1", "c6"]);
    assert_eq!(f.audit("rollout.bypass").await, 1);
}

#[tokio::test]
async fn the_replica_runs_the_driver() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    let grpc = GrpcOptions {
        rollout_tick: StdDuration::from_millis(20),
        ..GrpcOptions::default()
    };
    let replica = Replica::new(f.hub.service.clone(), HttpOptions::default(), grpc);
    // Watchers learn of the driver's steps from the fleet feed (subscribed before it runs).
    let viewer = fleetgate_hub::Actor::new("test", fleetgate_hub::Role::Viewer);
    let (first, updates) = replica.fleet.subscribe(&viewer).await.unwrap();
    assert!(first.rollouts.is_empty());
    let events = fleetgate_hub::fleet_feed::events::events(
        replica.service.clone(),
        updates,
        tokio_util::sync::CancellationToken::new(),
        fleetgate_hub::service::access::Credential::Bearer(f.hub.viewer.clone()),
        Default::default(),
        first,
    );
    let mut events = Box::pin(events);
    let stop = tokio_util::sync::CancellationToken::new();
    let run = tokio::spawn({
        let (replica, stop) = (replica.clone(), stop.clone());
        async move {
            replica
                .run(async move {
                    stop.cancelled().await;
                    Ok(())
                })
                .await
        }
    });
    let started = async {
        loop {
            let e = events.next().await.expect("stream").expect("event");
            if let fleetgate_hub::fleet_feed::events::FleetChange::Rollout(r) = e.change {
                return r;
            }
        }
    };
    let got = tokio::time::timeout(StdDuration::from_secs(20), started)
        .await
        .expect("an event in time");
    assert_eq!(got.action.as_str(), "started");
    stop.cancel();
    let _ = run.await;
    assert!(
        replica.metrics.encode().unwrap().contains(
            "fleetgate_hub_rollout_events_total{gate=\"waves\",action=\"rollout.start\"} 1"
        )
    );
}

#[tokio::test]
async fn failure_grace_is_a_validated_rollout_setting() {
    let f = fleet("    failureGrace: 5m\n", THREE_WAVES).await;
    // Too long for the health timeout: refused naming the field, nothing changed.
    let before = f.hub.audit_count().await;
    let bad =
        rollout_support::gate("    failureGrace: 30m\n", THREE_WAVES).replace("waves}", "waves2}");
    let r = f.hub.create_gate_yaml(&bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", r.text);
    assert_eq!(r.body["error"]["field"], "spec.rollout.failureGrace");
    assert_eq!(
        r.body["error"]["message"],
        "must be shorter than healthTimeout (30m), got '30m'"
    );
    assert_eq!(f.hub.audit_count().await, before);
    // The stored gate keeps it, and the rollout runs with it.
    let r = f.hub.get("/api/v1/gates/waves").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    assert_eq!(
        r.body["manifest"]["spec"]["rollout"]["failureGrace"], "5m",
        "{}",
        r.text
    );
}

#[tokio::test]
async fn the_cluster_status_names_its_place_in_the_rollout() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    let rollout_of = |c: &'static str| {
        let hub = &f.hub;
        async move {
            let r = hub.get(&format!("/api/v1/clusters/{c}/status")).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            r.body["gates"][0]["rollout"].clone()
        }
    };
    let c2 = rollout_of("c2").await;
    assert_eq!(c2["wave"], 2, "{c2}");
    assert_eq!(c2["waveName"], "early");
    assert_eq!(c2["health"], "closed");
    assert!(c2["releasedAt"].is_null());
    // Released; its spoke has not connected yet: unknown, never healthy.
    let c1 = rollout_of("c1").await;
    assert_eq!(
        (c1["wave"].clone(), c1["health"].clone()),
        (json!(1), json!("unknown"))
    );
    assert_eq!(c1["releasedAt"], "2026-11-25T13:00:00Z");
    f.report(&["c1"], true).await;
    f.step().await;
    assert_eq!(rollout_of("c1").await["health"], "healthy");
    // The window closes: the rollout ends, no place is shown.
    f.at(17, 0);
    f.step().await;
    assert!(rollout_of("c1").await.is_null());
}

#[tokio::test]
async fn wave_members_are_listed_in_release_order() {
    // sortLabel `order` reverses the names: c6 is released first, c1 last.
    let f = fleet(
        "    sortLabel: order\n",
        "      - {name: canary, count: 1}\n      - {name: rest}\n",
    )
    .await;
    for i in 1..=6 {
        let r = f
            .hub
            .call(
                Method::PUT,
                &format!("/api/v1/clusters/c{i}/labels"),
                Some(common::ADMIN),
                Some((
                    "application/json",
                    json!({"labels": {"env": "prod", "order": (7 - i).to_string()}}).to_string(),
                )),
            )
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    }
    f.at(13, 0);
    assert_eq!(f.step().await, ["rollout.start", "rollout.release"]);
    let s = f.status().await;
    let names = |w: usize| -> Vec<String> {
        s["waves"][w]["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(0), ["c6"]);
    assert_eq!(names(1), ["c5", "c4", "c3", "c2", "c1"], "{s}");
}

#[tokio::test]
async fn a_halted_rollout_has_no_health_deadline() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    assert!(f.status().await["healthDeadline"].is_string());
    f.advance(30);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let s = f.status().await;
    assert_eq!(s["state"], "halted");
    assert!(s["healthDeadline"].is_null(), "{s}");
}

/// Issue 32 item 6: the cluster whose wave failed stands out on every fleet surface — the
/// fleet status (REST), the dashboard grid's cell, the cluster status and gRPC's fleet
/// status — with the failing object and its Ready message, until an operator resumes.
#[tokio::test]
async fn a_failed_canary_is_marked_on_every_fleet_surface_until_resumed() {
    let f = fleet("", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    let why = "health check failed after 30s: Deployment/apps/web not ready";
    f.report_failing("c1", why).await;
    assert!(f.step().await.is_empty(), "failing, within failureGrace");
    f.advance(1);
    assert_eq!(f.step().await, ["rollout.halt"]);
    let detail = format!("Kustomization flux-system/apps: Ready=False: {why}");

    let fleet = f.hub.get("/api/v1/status/clusters").await;
    assert_eq!(fleet.status, StatusCode::OK, "{}", fleet.text);
    let brief = |name: &str| {
        fleet.body["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["cluster"]["name"] == name)
            .unwrap()["gates"][0]
            .clone()
    };
    let c1 = brief("c1");
    assert_eq!(c1["state"], "open", "a halt keeps the canary open: {c1}");
    let failure = &c1["rolloutFailure"];
    assert_eq!(failure["detail"], detail.as_str(), "{c1}");
    assert_eq!(failure["state"], "halted");
    assert_eq!(
        (failure["wave"].clone(), failure["waveName"].clone()),
        (json!(1), json!("canary"))
    );
    assert_eq!(failure["failedAt"], "2026-11-25T13:01:00Z");
    assert!(
        brief("c2").get("rolloutFailure").is_none(),
        "{}",
        brief("c2")
    );
    assert_eq!(fleet.body["summary"]["clusters"]["rolloutFailed"], 1);
    let listed = &fleet.body["summary"]["rolloutFailures"];
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(
        (listed[0]["cluster"].clone(), listed[0]["gate"].clone()),
        (json!("c1"), json!("waves"))
    );

    let grid = f.hub.get("/api/v1/dashboard/fleet").await;
    assert_eq!(grid.status, StatusCode::OK, "{}", grid.text);
    let cell = |name: &str| {
        grid.body["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["name"] == name)
            .unwrap()["cells"][0]
            .clone()
    };
    assert_eq!(cell("c1")["rolloutFailure"]["detail"], detail.as_str());
    assert!(cell("c2").get("rolloutFailure").is_none());

    let status = f.hub.get("/api/v1/clusters/c1/status").await;
    assert_eq!(
        status.body["gates"][0]["rolloutFailure"]["detail"],
        detail.as_str()
    );

    // gRPC carries the same.
    let grpc = grpc_support::Grpc::start(f.hub.service.clone(), grpc_support::Grpc::opts()).await;
    let summary = grpc
        .admin()
        .get_fleet_status(grpc_support::authed(
            fleetgate_proto::v1::GetFleetStatusRequest {},
            &f.hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(summary.clusters.unwrap().rollout_failed, 1);
    let failure = &summary.rollout_failures[0];
    assert_eq!(
        (failure.cluster.as_str(), failure.gate.as_str()),
        ("c1", "waves")
    );
    assert_eq!((failure.wave, failure.state.as_str()), (1, "halted"));
    assert_eq!(failure.detail, detail);

    // Resume judges the wave afresh: the mark goes.
    let r = f.command("resume").await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let fleet = f.hub.get("/api/v1/status/clusters").await;
    assert_eq!(
        fleet.body["summary"]["clusters"]["rolloutFailed"], 0,
        "{}",
        fleet.text
    );
    assert!(
        fleet.body["clusters"][0]["gates"][0]
            .get("rolloutFailure")
            .is_none()
    );
}

/// A failure `maxFailures` tolerates does not halt the rollout, but the cluster is marked.
#[tokio::test]
async fn a_tolerated_failure_is_marked_while_the_rollout_goes_on() {
    let f = fleet("    maxFailures: 1\n    failureGrace: 1m\n", THREE_WAVES).await;
    f.at(13, 0);
    f.step().await;
    f.report_failing("c1", "boom").await;
    f.step().await;
    f.advance(1);
    assert_eq!(
        f.step().await,
        ["rollout.healthy"],
        "a tolerated failure settles the wave"
    );
    f.advance(10);
    assert_eq!(f.step().await, ["rollout.release"]);
    let fleet = f.hub.get("/api/v1/status/clusters").await;
    let c1 = &fleet.body["clusters"][0];
    assert_eq!(c1["cluster"]["name"], "c1");
    let failure = &c1["gates"][0]["rolloutFailure"];
    assert_eq!(failure["state"], "running", "{c1}");
    assert_eq!(
        failure["detail"],
        "Kustomization flux-system/apps: Ready=False: boom"
    );
}

#[tokio::test]
async fn a_freeze_ended_in_a_cluster_fences_its_opening() {
    use fleetgate_hub::clock::Clock as _;
    use fleetgate_hub::service::freezes::LocalFreeze;
    let f = fleet("", THREE_WAVES).await;
    f.complete().await;
    let (_, opening) = f.release("c6").await.unwrap();
    let frozen_at = f.hub.clock.now();
    f.hub
        .service
        .record_local_freeze(
            "c6",
            Some(LocalFreeze {
                requested_at: frozen_at,
                expires_at: None,
                reason: "INC-9".into(),
                requested_by: "bob".into(),
            }),
        )
        .await
        .unwrap();
    assert_eq!(f.gate_state("c6").await.0, "closed");
    f.advance(5);
    let ended_at = f.hub.clock.now();
    f.hub.service.record_local_freeze("c6", None).await.unwrap();
    // c6's snapshot now fences the opening at the freeze's end: the release it holds is for
    // the earlier opening, so its spoke keeps the gate closed until a release for this one.
    let s = f.hub.service.cluster_snapshot("c6").await.unwrap();
    let g = s.gates.iter().find(|g| g.name == "waves").unwrap();
    assert_eq!(g.opening_fence, Some(ended_at));
    assert!(opening < ended_at);
    // Other clusters are not fenced by c6's freeze.
    let s = f.hub.service.cluster_snapshot("c5").await.unwrap();
    let g = s.gates.iter().find(|g| g.name == "waves").unwrap();
    assert_eq!(g.opening_fence, None);
}
