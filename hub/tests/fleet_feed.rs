//! One fleet-view read per change however many watchers: gRPC `WatchFleet`
//! streams and dashboard event streams on one replica share its fleet feed.
//! A gate change reaches every watcher while the feed reads the fleet about
//! once (not once per watcher); the reader stops when the last one leaves.

mod common;
mod grpc_support;

use axum::http::StatusCode;
use common::Hub;
use fleetgate_proto::v1::fleet_event::Event;
use grpc_support::served::{Served, next_event};
use grpc_support::within;
use serde_json::json;

const GRPC_WATCHERS: usize = 6;
const SSE_WATCHERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_share_one_fleet_read_per_change() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    hub.simple_gate("g", &["a"], "closed").await;

    // One replica: HTTP app and gRPC server on the same fan-out and feed.
    let served = Served::of(hub.service.clone()).await;
    let feed = served.replica.fleet.clone();
    assert!(!feed.is_running(), "no watcher, no reader");

    let mut grpc_streams = Vec::new();
    for _ in 0..GRPC_WATCHERS {
        grpc_streams.push(served.watch(&hub.viewer).await);
    }
    let mut sse_streams = Vec::new();
    for _ in 0..SSE_WATCHERS {
        sse_streams.push(served.events(&hub.viewer).await);
    }
    assert!(feed.is_running());

    let before = feed.reads();
    let r = hub
        .post_json(
            "/api/v1/gates/g/open",
            &hub.operator,
            json!({"for": "1h", "reason": "shared feed"}),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    for s in &mut grpc_streams {
        let g = next_event(
            s,
            "the gate event on every WatchFleet stream",
            |e| match e.event {
                Some(Event::GateState(g)) if !e.initial => Some(g),
                _ => None,
            },
        )
        .await;
        assert_eq!((g.gate.as_str(), g.to.as_str()), ("g", "open"));
    }
    for s in &mut sse_streams {
        let g = s.next("gate", |_| true).await;
        assert_eq!((&g["gate"], &g["to"]), (&json!("g"), &json!("open")), "{g}");
    }
    let reads = feed.reads() - before;
    println!("fleet reads for one change with {GRPC_WATCHERS} + {SSE_WATCHERS} watchers: {reads}");
    // One for the change; a 2 s poll tick may add one or two on a slow
    // machine. Per-watcher reads would be at least 10.
    assert!(
        (1..=3).contains(&reads),
        "{reads} fleet reads for one change"
    );

    drop(grpc_streams);
    drop(sse_streams);
    within("the reader to stop with its last watcher", async {
        while feed.is_running() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    served.stop().await;
}
