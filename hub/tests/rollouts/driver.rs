//! Who steps the rollout driver: two replicas stepping at once release each wave once, a
//! restarted hub on the same database continues mid-soak, and the replica's own driver
//! loop runs it, with its steps on the fleet feed and in the metrics.

use fleetgate_hub::ServiceDefaults;
use std::sync::Arc;
use std::time::Duration as StdDuration;

use chrono::{Duration, TimeZone, Utc};
use fleetgate_hub::clock::ManualClock;
use fleetgate_hub::config::{GrpcOptions, HttpOptions};
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{Service, db};
use futures::StreamExt as _;

use crate::rollout_support::{THREE_WAVES, fleet};

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
    let events = fleetgate_hub::fleet_feed::stream::events(
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
