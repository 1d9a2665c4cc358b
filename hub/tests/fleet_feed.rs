//! One fleet-view read per change however many watchers: gRPC `WatchFleet`
//! streams and dashboard event streams on one replica share its fleet feed.
//! A gate change reaches every watcher while the feed reads the fleet about
//! once (not once per watcher); the reader stops when the last one leaves.

mod common;
mod grpc_support;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::Hub;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{AppState, app};
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use futures::StreamExt as _;
use grpc_support::{Grpc, authed, connect, within};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

const GRPC_WATCHERS: usize = 6;
const SSE_WATCHERS: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_watchers_share_one_fleet_read_per_change() {
    let hub = Hub::new().await;
    hub.register("a", json!({})).await;
    hub.simple_gate("g", &["a"], "closed").await;

    // One replica: HTTP app and gRPC server on the same fan-out and feed.
    let shutdown = CancellationToken::new();
    let replica = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts());
    let state = AppState {
        shutdown: shutdown.clone(),
        ..AppState::from_replica(replica)
    };
    let feed = state.fleet.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = {
        let (replica, shutdown) = (state.replica.clone(), shutdown.clone());
        tokio::spawn(async move {
            let serving = fleetgate_hub::grpc::serve_replica(&replica, listener, shutdown);
            replica.run(serving).await
        })
    };
    let http = app(state);
    let channel = connect(&format!("http://{addr}")).await;
    assert!(!feed.is_running(), "no watcher, no reader");

    let mut grpc_streams = Vec::new();
    for _ in 0..GRPC_WATCHERS {
        let mut admin = fleetgate_proto::AdminServiceClient::new(channel.clone());
        let s = within(
            "WatchFleet",
            admin.watch_fleet(authed(pb::WatchFleetRequest::default(), &hub.viewer)),
        )
        .await
        .unwrap()
        .into_inner();
        grpc_streams.push(s);
    }
    let mut sse_streams = Vec::new();
    for _ in 0..SSE_WATCHERS {
        let req = Request::builder()
            .method(Method::GET)
            .uri("/api/v1/events")
            .header("authorization", format!("Bearer {}", hub.viewer))
            .body(Body::empty())
            .unwrap();
        let r = http.clone().oneshot(req).await.unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        sse_streams.push(r.into_body().into_data_stream());
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
        within("the gate event on every WatchFleet stream", async {
            loop {
                let e = s.message().await.unwrap().expect("stream ended");
                if let Some(Event::GateState(g)) = e.event
                    && !e.initial
                {
                    assert_eq!((g.gate.as_str(), g.to.as_str()), ("g", "open"));
                    return;
                }
            }
        })
        .await;
    }
    for s in &mut sse_streams {
        within("the gate event on every event stream", async {
            let mut seen = String::new();
            while !seen.contains("event: gate") {
                let chunk = s.next().await.expect("stream ended").expect("chunk");
                seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        })
        .await;
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
    shutdown.cancel();
    within("the gRPC server to stop", server)
        .await
        .unwrap()
        .unwrap();
}
