//! Open/close requests made inside a cluster, as its spoke reports them over
//! a real gRPC stream on a real database, on every hub surface: a
//! `OverrideChanged` event on `WatchFleet` and an `override` event on the
//! dashboard's event stream naming the cluster and the Kubernetes user; the
//! cluster's status over REST and gRPC listing it; the metrics counting
//! recorded, resent and refused requests; an admin cancelling it (audited),
//! after which the cluster lists it no more.

mod common;
mod grpc_support;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::Hub;
use fleetgate_hub::config::HttpOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_hub::{AppState, app};
use fleetgate_proto::v1::{self as pb, fleet_event::Event, spoke_message};
use futures::StreamExt as _;
use grpc_support::{Grpc, TestSpoke, authed, connect, within};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt as _;

async fn call(http: &Router, method: Method, uri: &str, token: &str) -> (StatusCode, String) {
    let req = Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .body(Body::empty())
        .unwrap();
    let r = http.clone().oneshot(req).await.unwrap();
    let status = r.status();
    let bytes = axum::body::to_bytes(r.into_body(), 1 << 24).await.unwrap();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

async fn get_json(http: &Router, uri: &str, token: &str) -> Value {
    let (status, text) = call(http, Method::GET, uri, token).await;
    assert_eq!(status, StatusCode::OK, "{uri}: {text}");
    serde_json::from_str(&text).unwrap()
}

fn request(state: &str, by: &str, at: chrono::DateTime<chrono::Utc>) -> pb::SpokeMessage {
    use fleetgate_proto::time::to_timestamp;
    pb::SpokeMessage {
        msg: Some(spoke_message::Msg::LocalRequest(pb::LocalRequest {
            gate: "release".into(),
            state: state.into(),
            requested_at: Some(to_timestamp(at)),
            expires_at: Some(to_timestamp(at + chrono::Duration::hours(1))),
            reason: "incident 7".into(),
            requested_by: by.into(),
        })),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_made_in_the_cluster_shows_on_every_surface_and_can_be_cancelled() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    hub.register("c2", json!({})).await;
    // Closing from the cluster is allowed by default; opening is not.
    hub.simple_gate("release", &["c1", "c2"], "open").await;

    let shutdown = CancellationToken::new();
    let replica = Replica::new(hub.service.clone(), HttpOptions::default(), Grpc::opts());
    let state = AppState {
        shutdown: shutdown.clone(),
        ..AppState::from_replica(replica)
    };
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
    let mut admin = fleetgate_proto::AdminServiceClient::new(channel.clone());
    let mut watch = within(
        "WatchFleet",
        admin.watch_fleet(authed(pb::WatchFleetRequest::default(), &hub.viewer)),
    )
    .await
    .unwrap()
    .into_inner();
    let req = Request::builder()
        .uri("/api/v1/events")
        .header("authorization", format!("Bearer {}", hub.viewer))
        .body(Body::empty())
        .unwrap();
    let r = http.clone().oneshot(req).await.unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    let mut sse = r.into_body().into_data_stream();

    let mut spoke = TestSpoke::connect(channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    spoke.snapshot().await;
    let at = fleetgate_hub::clock::Clock::now(&hub.clock) - chrono::Duration::minutes(1);
    spoke.send(request("closed", "alice", at)).await;

    // WatchFleet: the override, marked as made in c1 by alice.
    let info = within("the request on WatchFleet", async {
        loop {
            let e = watch.message().await.unwrap().expect("stream ended");
            if let Some(Event::Override(o)) = e.event
                && let Some(info) = o.r#override
                && o.change == "active"
                && !e.initial
            {
                return info;
            }
        }
    })
    .await;
    assert_eq!(
        (
            info.requested_in.as_str(),
            info.requested_by.as_str(),
            info.state.as_str(),
            info.clusters.as_slice()
        ),
        ("c1", "alice", "closed", ["c1".to_string()].as_slice())
    );
    // The dashboard's event stream says the same.
    within("the request on the event stream", async {
        let mut seen = String::new();
        while !(seen.contains("event: override") && seen.contains(r#""requestedIn":"c1""#)) {
            let chunk = sse.next().await.expect("stream ended").expect("chunk");
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        assert!(seen.contains(r#""requestedBy":"alice""#), "{seen}");
    })
    .await;

    // REST: the cluster's status lists it; the other cluster's does not.
    let st = get_json(&http, "/api/v1/clusters/c1/status", &hub.viewer).await;
    let listed = st["localRequests"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{st}");
    assert_eq!(
        (
            &listed[0]["requestedBy"],
            &listed[0]["requestedIn"],
            &listed[0]["reason"]
        ),
        (&json!("alice"), &json!("c1"), &json!("incident 7"))
    );
    assert_eq!(listed[0]["id"], info.id.as_str());
    let other = get_json(&http, "/api/v1/clusters/c2/status", &hub.viewer).await;
    assert_eq!(other["localRequests"], json!([]));
    // gRPC: the same.
    let status = admin
        .get_cluster_status(authed(
            pb::GetClusterStatusRequest { name: "c1".into() },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(status.local_requests.len(), 1);
    assert_eq!(status.local_requests[0].requested_by, "alice");
    // OpenAPI documents the list.
    let doc = get_json(&http, "/api/v1/openapi.json", &hub.viewer).await;
    let schema = &doc["components"]["schemas"]["ClusterStatus"]["properties"];
    assert!(!schema["localRequests"].is_null(), "{schema}");

    // A resend is recorded once; a refused open request is counted too.
    spoke.send(request("closed", "alice", at)).await;
    spoke.send(request("open", "bob", at)).await;
    let line = |state: &str, result: &str, n: u32| {
        format!(
            r#"fleetgate_hub_grpc_local_requests_total{{state="{state}",result="{result}"}} {n}"#
        )
    };
    within("the metrics to count them", async {
        loop {
            let (_, text) = call(&http, Method::GET, "/metrics", &hub.viewer).await;
            if [
                line("closed", "recorded", 1),
                line("closed", "duplicate", 1),
                line("open", "refused", 1),
            ]
            .iter()
            .all(|l| text.contains(l.as_str()))
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;

    // An admin cancels it: audited, and the cluster lists it no more.
    let (code, text) = call(
        &http,
        Method::DELETE,
        &format!("/api/v1/overrides/{}", info.id),
        &hub.admin,
    )
    .await;
    assert!(code.is_success(), "{code} {text}");
    let st = get_json(&http, "/api/v1/clusters/c1/status", &hub.viewer).await;
    assert_eq!(st["localRequests"], json!([]), "{st}");
    let audit = get_json(&http, "/api/v1/audit", &hub.viewer).await;
    let actions: Vec<(&str, &str)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap_or_default(),
                e["actor"].as_str().unwrap_or_default(),
            )
        })
        .collect();
    assert!(
        actions.contains(&("override.close", "alice@cluster/c1")),
        "{actions:?}"
    );
    assert!(
        actions
            .iter()
            .any(|(a, who)| a.starts_with("override.cancel") && *who == "bootstrap-admin"),
        "{actions:?}"
    );

    spoke.close();
    shutdown.cancel();
    within("the replica to stop", server)
        .await
        .unwrap()
        .unwrap();
}
