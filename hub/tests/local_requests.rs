//! Open/close requests made inside a cluster, as its spoke reports them over
//! a real gRPC stream on a real database, on every hub surface: a
//! `OverrideChanged` event on `WatchFleet` and an `override` event on the
//! dashboard's event stream naming the cluster and the Kubernetes user; the
//! cluster's status over REST and gRPC listing it; the metrics counting
//! recorded, resent and refused requests; an admin cancelling it (audited),
//! after which the cluster lists it no more.

mod common;
mod grpc_support;

use axum::http::Method;
use common::Hub;
use fleetgate_proto::v1::{self as pb, fleet_event::Event, spoke_message};
use grpc_support::served::{Served, next_event};
use grpc_support::within;
use serde_json::json;

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

    let served = Served::of(hub.service.clone()).await;
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;

    let mut spoke = served.spoke(&token, "c1").await;
    spoke.snapshot().await;
    let at = fleetgate_hub::clock::Clock::now(&hub.clock) - chrono::Duration::minutes(1);
    spoke.send(request("closed", "alice", at)).await;

    // WatchFleet: the override, marked as made in c1 by alice.
    let info = next_event(&mut watch, "the request on WatchFleet", |e| match e.event {
        Some(Event::Override(o)) if o.change == "active" && !e.initial => o.r#override,
        _ => None,
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
    let seen = sse
        .next("override", |d| {
            d.to_string().contains(r#""requestedIn":"c1""#)
        })
        .await;
    assert!(
        seen.to_string().contains(r#""requestedBy":"alice""#),
        "{seen}"
    );

    // REST: the cluster's status lists it; the other cluster's does not.
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
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
    let other = served
        .get_json("/api/v1/clusters/c2/status", &hub.viewer)
        .await;
    assert_eq!(other["localRequests"], json!([]));
    // gRPC: the same.
    let status = served.cluster_status("c1", &hub.viewer).await;
    assert_eq!(status.local_requests.len(), 1);
    assert_eq!(status.local_requests[0].requested_by, "alice");
    // OpenAPI documents the list.
    let doc = served.get_json("/api/v1/openapi.json", &hub.viewer).await;
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
            let (_, text) = served.call(Method::GET, "/metrics", &hub.viewer).await;
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
    let (code, text) = served
        .call(
            Method::DELETE,
            &format!("/api/v1/overrides/{}", info.id),
            &hub.admin,
        )
        .await;
    assert!(code.is_success(), "{code} {text}");
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
    assert_eq!(st["localRequests"], json!([]), "{st}");
    let audit = served.get_json("/api/v1/audit", &hub.viewer).await;
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
    served.stop().await;
}
