//! Rollout events on both watch surfaces, from one replica (real PostgreSQL, gRPC over a
//! socket, the SSE stream through the router): gRPC `WatchFleet` carries `RolloutChanged`
//! and `GET /api/v1/events` a `rollout` event when a rollout starts, is paused (gRPC
//! command), resumed (REST command), halts (a wave not healthy within `healthTimeout`), is
//! aborted and ends (the gate closes); the dashboard's grid and gate page mark the
//! clusters waiting for their wave (`rolloutWave`). Commands count in
//! `fleetgate_hub_rollout_events_total` whichever surface took them. The test drives the
//! rollout itself with the injected clock; the replica's own driver ticks once an hour.

mod common;
mod grpc_support;

use std::time::Duration as StdDuration;

use axum::http::{Method, StatusCode};
use chrono::{Duration, TimeZone, Utc};
use common::Hub;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::served::{Served, Sse, next_event};
use grpc_support::{Grpc, authed, within};
use serde_json::{Value, json};

const GATE: &str = r#"apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: waves}
spec:
  clusters: {selector: {matchLabels: {env: prod}}}
  default: closed
  windows: [{name: day, kind: allow, schedule: "0 13 * * *", duration: 4h}]
  rollout:
    soak: 10m
    healthTimeout: 30m
    waves:
      - {name: canary, clusters: {names: [c1]}}
      - {name: rest}
"#;

/// The next `RolloutChanged` on a `WatchFleet` stream (other events skipped).
async fn grpc_rollout(s: &mut tonic::Streaming<pb::FleetEvent>) -> (bool, pb::RolloutChanged) {
    next_event(s, "a RolloutChanged on WatchFleet", |e| match e.event {
        Some(Event::Rollout(r)) => Some((e.initial, r)),
        _ => None,
    })
    .await
}

/// One replica serving gRPC on a socket and the router (SSE), with a `WatchFleet` stream
/// and an SSE stream open; the test steps the rollout itself (the replica's driver ticks
/// once an hour, its first tick finding the gate closed).
struct Watched {
    served: Served,
    grpc_events: tonic::Streaming<pb::FleetEvent>,
    sse: Sse,
}

impl Watched {
    async fn start(hub: &Hub) -> Watched {
        let grpc = fleetgate_hub::config::GrpcOptions {
            rollout_tick: StdDuration::from_secs(3600),
            ..Grpc::opts()
        };
        let served = Served::start(Replica::new(
            hub.service.clone(),
            HttpOptions::default(),
            grpc,
        ))
        .await;
        let watch = pb::WatchFleetRequest {
            gates: vec!["waves".into()],
            ..Default::default()
        };
        let grpc_events = served.watch_with(watch, &hub.viewer).await;
        let sse = served.events(&hub.viewer).await;
        Watched {
            served,
            grpc_events,
            sse,
        }
    }

    /// The next rollout event on both surfaces (the same on each).
    async fn expect_any(&mut self) -> (pb::RolloutChanged, Value) {
        let (initial, g) = grpc_rollout(&mut self.grpc_events).await;
        assert!(!initial);
        let e = self.sse.next("rollout", |_| true).await;
        assert_eq!(e["action"], json!(g.action), "{e}");
        (g, e)
    }

    /// The next rollout event on both surfaces, which must be `action`.
    async fn expect(&mut self, action: &str) -> (pb::RolloutChanged, Value) {
        let (initial, g) = grpc_rollout(&mut self.grpc_events).await;
        assert!(!initial);
        assert_eq!(g.action, action, "{g:?}");
        let e = self.sse.next("rollout", |_| true).await;
        assert_eq!(e["action"], action, "{e}");
        assert_eq!(e["rolloutId"], json!(g.rollout_id));
        (g, e)
    }

    async fn grpc_command(
        &self,
        token: &str,
        command: &str,
    ) -> Result<pb::RolloutInfo, tonic::Status> {
        let req = pb::RolloutCommandRequest {
            gate: "waves".into(),
            command: command.into(),
        };
        within(
            "RolloutCommand",
            self.served.grpc.admin().rollout_command(authed(req, token)),
        )
        .await
        .map(tonic::Response::into_inner)
    }

    /// Reports from `clusters`' spokes: every app of gate `waves` healthy.
    async fn report_healthy(&self, clusters: &[&str]) {
        common::report_apps(&self.served.replica.reports, clusters, "waves", true).await;
    }

    /// A rollout command over REST; its status.
    async fn rest_command(&self, token: &str, command: &str) -> StatusCode {
        let uri = format!("/api/v1/gates/waves/rollout/{command}");
        self.served.call(Method::POST, &uri, token).await.0
    }

    async fn stop(self) {
        drop((self.grpc_events, self.sse));
        self.served.stop().await;
    }
}

/// A hub with clusters c1, c2, c3 (env=prod) and the rollout gate `waves` over them.
async fn waves_hub() -> Hub {
    let hub = Hub::new().await;
    for c in ["c1", "c2", "c3"] {
        hub.register(c, json!({"env": "prod"})).await;
    }
    let r = hub.create_gate_yaml(GATE).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    hub
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rollout_steps_reach_watch_fleet_and_sse_and_commands_are_counted() {
    let hub = waves_hub().await;
    let at = |h, m| Utc.with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap();

    let mut w = Watched::start(&hub).await;
    let metrics = w.served.replica.metrics.clone();

    // The window opens: the rollout starts and releases the canary.
    hub.clock.set(at(13, 0));
    hub.service.step_rollouts().await.unwrap();
    let (started, _) = w.expect("started").await;
    assert_eq!(
        (started.gate.as_str(), started.state.as_str()),
        ("waves", "running")
    );
    assert_eq!((started.wave, started.waves), (1, 2));
    assert_eq!((started.released, started.clusters), (1, 3));

    // The grid and the gate page show c2 and c3 waiting for wave 2, c1 released.
    let grid = w
        .served
        .get_json("/api/v1/dashboard/fleet", &hub.viewer)
        .await;
    let waits: Vec<Value> = grid["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cells"][0]["rolloutWave"].clone())
        .collect();
    assert_eq!(waits, [Value::Null, json!(2), json!(2)], "{grid}");
    let page = w
        .served
        .get_json("/api/v1/dashboard/gates/waves", &hub.viewer)
        .await;
    assert_eq!(page["clusters"][1]["rolloutWave"], 2, "{page}");
    assert_eq!(page["clusters"][1]["reason"], "waiting for rollout wave 2");

    // Paused over gRPC: an event, and counted (gRPC commands were not counted before).
    let info = w.grpc_command(&hub.operator, "pause").await.unwrap();
    assert_eq!(info.state, "paused");
    w.expect("paused").await;
    // A viewer may not: refused, not counted.
    let denied = w.grpc_command(&hub.viewer, "resume").await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied);

    // Resumed over REST.
    assert_eq!(
        w.rest_command(&hub.operator, "resume").await,
        StatusCode::OK
    );
    w.expect("resumed").await;

    // No spoke ever reports c1 healthy: past healthTimeout the wave fails and halts.
    hub.clock.set(at(13, 31));
    hub.service.step_rollouts().await.unwrap();
    let (halted, e) = w.expect("halted").await;
    assert_eq!(halted.state, "halted");
    assert!(halted.detail.contains("c1"), "{halted:?}");
    assert_eq!(e["detail"], json!(halted.detail));

    let info = w.grpc_command(&hub.operator, "abort").await.unwrap();
    assert_eq!(info.state, "aborted");
    w.expect("aborted").await;

    // The window closes: the rollout is over.
    hub.clock.set(at(17, 1));
    hub.service.step_rollouts().await.unwrap();
    let (ended, _) = w.expect("ended").await;
    assert_eq!(ended.state, "ended");

    // A new watcher sees no live rollout (an ended one is not part of the state).
    let mut late = w.served.watch(&hub.viewer).await;
    hub.clock
        .advance(Duration::days(1) - Duration::hours(4) - Duration::minutes(1));
    hub.service.step_rollouts().await.unwrap();
    let (initial, next) = grpc_rollout(&mut late).await;
    assert!(!initial, "the ended rollout showed as current: {next:?}");
    assert_eq!(next.action, "started");
    assert_ne!(next.rollout_id, started.rollout_id);

    let text = metrics.encode().unwrap();
    for action in ["pause", "resume", "abort"] {
        let line = format!(
            "fleetgate_hub_rollout_events_total{{gate=\"waves\",action=\"rollout.{action}\"}} 1"
        );
        assert!(text.contains(&line), "{line} missing in:\n{text}");
    }
    drop(late);
    w.stop().await;
}

/// A rollout that goes well: the canary turns healthy and soaks, the next wave is
/// released, halts, resumes after good reports and completes — each step an event on
/// both surfaces.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn healthy_released_and_completed_reach_watchers() {
    let hub = waves_hub().await;
    let at = |h, m| Utc.with_ymd_and_hms(2026, 11, 25, h, m, 0).unwrap();
    let mut w = Watched::start(&hub).await;
    let step = || async { hub.service.step_rollouts().await.unwrap() };

    hub.clock.set(at(13, 0));
    step().await;
    w.expect("started").await;
    w.report_healthy(&["c1"]).await;
    step().await;
    let (healthy, _) = w.expect("healthy").await;
    assert_eq!((healthy.wave, healthy.released), (1, 1));

    // After the 10 min soak, wave 2 (c2, c3) is released.
    hub.clock.set(at(13, 11));
    w.report_healthy(&["c1"]).await;
    step().await;
    let (released, e) = w.expect("released").await;
    assert_eq!((released.wave, released.released), (2, 3));
    assert_eq!(e["released"], 3);

    // c2 and c3 never report: halted; good reports, then an operator resumes.
    hub.clock.set(at(13, 42));
    step().await;
    let (halted, _) = w.expect("halted").await;
    assert!(
        halted.detail.contains("c2") && halted.detail.contains("c3"),
        "{halted:?}"
    );
    w.report_healthy(&["c1", "c2", "c3"]).await;
    w.grpc_command(&hub.operator, "resume").await.unwrap();
    let (resumed, _) = w.expect("resumed").await;
    assert_eq!(resumed.state, "running");
    // Judged afresh from the resume (healthy at once: the same event or a `healthy` one),
    // then complete after the soak.
    hub.clock.set(at(13, 53));
    w.report_healthy(&["c1", "c2", "c3"]).await;
    step().await;
    loop {
        let (g, _) = w.expect_any().await;
        if g.action == "completed" {
            assert_eq!((g.state.as_str(), g.released), ("completed", 3));
            break;
        }
        assert_eq!(g.action, "healthy", "{g:?}");
    }
    w.stop().await;
}

/// REST and gRPC previews of a rollout gate estimate each opening's waves (the opening,
/// then one soak per wave), the same as `fleetgate gate preview -f`.
#[tokio::test]
async fn previews_estimate_wave_release_times() {
    let hub = Hub::new().await;
    let r = hub.create_gate_yaml(GATE).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let r = hub
        .get("/api/v1/gates/waves/preview?from=2026-11-25T00:00:00Z&to=2026-11-26T00:00:00Z")
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.text);
    let est = &r.body["rollouts"][0];
    assert_eq!(est["openingAt"], "2026-11-25T13:00:00Z", "{}", r.body);
    assert_eq!(est["closesAt"], "2026-11-25T17:00:00Z");
    assert_eq!(
        est["waves"][0]["estimatedReleaseAt"],
        "2026-11-25T13:00:00Z"
    );
    assert_eq!(
        est["waves"][1]["estimatedReleaseAt"],
        "2026-11-25T13:10:00Z"
    );
    assert_eq!(est["waves"][1]["name"], "rest");

    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let at = |h| {
        fleetgate_proto::time::to_timestamp(Utc.with_ymd_and_hms(2026, 11, 25, h, 0, 0).unwrap())
    };
    let req = pb::PreviewGateRequest {
        name: "waves".into(),
        from: Some(at(0)),
        to: Some(at(23)),
        ..Default::default()
    };
    let p = within(
        "PreviewGate",
        grpc.admin().preview_gate(authed(req, &hub.viewer)),
    )
    .await
    .unwrap()
    .into_inner();
    assert_eq!(p.rollouts.len(), 1);
    let waves = &p.rollouts[0].waves;
    assert_eq!(waves.len(), 2);
    assert_eq!((waves[1].wave, waves[1].name.as_str()), (2, "rest"));
    assert_eq!(
        waves[1].estimated_release_at,
        Some(fleetgate_proto::time::to_timestamp(
            Utc.with_ymd_and_hms(2026, 11, 25, 13, 10, 0).unwrap()
        ))
    );
    assert!(!waves[1].after_close);
    grpc.stop().await;
}
