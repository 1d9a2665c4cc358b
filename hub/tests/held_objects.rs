//! Object-level holds on the hub: a spoke reports held objects over a real gRPC
//! stream (StatusReport.held_objects), the hub stores them and shows them on
//! every surface — REST cluster status, gate and fleet counts, gRPC
//! `GetClusterStatus`/`GetFleetStatus`, the `heldObjects` WatchFleet/SSE event,
//! Prometheus gauges — and a spoke that predates object holds (no
//! held_objects) breaks nothing. The same for objects a gate selects that the
//! spoke may not hold (`HoldNotPermitted`), and for what closed warn gates would hold
//! (`WouldHoldChanged`).

mod common;
mod grpc_support;

use std::time::Duration;

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::served::{Served, next_event};
use grpc_support::{TestSpoke, authed, kustomization, within};
use serde_json::{Value, json};
use tonic::Streaming;

const GATE: &str = r#"
apiVersion: fleetgate.io/v1
kind: Gate
metadata:
  name: nginx-window
spec:
  clusters:
    names: [c1, c2]
  mode: holdObjects
  targets:
    kinds: [Kustomization]
    names: [apps]
  objects:
    kinds:
      - {group: apps, kind: Deployment}
      - {group: "", kind: Service}
  default: closed
"#;

fn held(kind: &str, name: &str, held_by: &[&str], person: bool) -> pb::HeldObjectStatus {
    pb::HeldObjectStatus {
        group: if kind == "Deployment" { "apps" } else { "" }.into(),
        kind: kind.into(),
        namespace: "nginx".into(),
        name: name.into(),
        kustomization_namespace: "flux-system".into(),
        kustomization_name: "apps".into(),
        gates: vec!["nginx-window".into()],
        held_by: held_by.iter().map(|s| s.to_string()).collect(),
        held_by_person: person,
        held_since_revision: if held_by.is_empty() {
            ""
        } else {
            "main@sha1:aaa"
        }
        .into(),
        held_since: if held_by.is_empty() {
            ""
        } else {
            "2026-11-25T12:00:00Z"
        }
        .into(),
        newer_revision_applied: kind == "Deployment" && name == "nginx",
        not_permitted: false,
        ..Default::default()
    }
}

async fn report(spoke: &TestSpoke, revision: u64, held_objects: Vec<pb::HeldObjectStatus>) {
    send_objects(
        spoke,
        revision,
        vec![kustomization("flux-system", "apps", false, &[])],
        held_objects,
    )
    .await;
}

async fn send_objects(
    spoke: &TestSpoke,
    revision: u64,
    objects: Vec<pb::ObjectStatus>,
    held_objects: Vec<pb::HeldObjectStatus>,
) {
    spoke
        .send_report(pb::StatusReport {
            revision,
            objects,
            held_objects,
            ..Default::default()
        })
        .await;
}

/// A replica serving `hub` (REST with /metrics, gRPC on a socket), WatchFleet
/// opened as a viewer, and c1's spoke connected with `token`; its snapshot's
/// revision.
async fn c1_connected(
    hub: &Hub,
    token: &str,
) -> (Served, Streaming<pb::FleetEvent>, TestSpoke, u64) {
    let served = serve(hub).await;
    let watch = served.watch(&hub.viewer).await;
    let mut spoke = served.spoke(token, "c1").await;
    let rev = spoke.snapshot().await.revision;
    (served, watch, spoke, rev)
}

async fn serve(hub: &Hub) -> Served {
    Served::of(hub.service.clone()).await
}

/// The metrics of the replica `served`.
async fn metrics_of(hub: &Hub, served: &Served) -> String {
    let (status, text) = served.call(Method::GET, "/metrics", &hub.viewer).await;
    assert_eq!(status, StatusCode::OK);
    text
}

/// Polls `uri` (JSON) until `done` holds (bounded).
async fn until(hub: &Hub, uri: &str, done: impl Fn(&Value) -> bool) -> Value {
    within(&format!("{uri} to reflect the report"), async {
        loop {
            let r = hub.get(uri).await;
            assert_eq!(r.status, StatusCode::OK, "{}", r.text);
            if done(&r.body) {
                return r.body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// The next `heldObjects` event for `cluster` on a WatchFleet stream.
async fn held_event(s: &mut Streaming<pb::FleetEvent>, cluster: &str) -> pb::HeldObjectsChanged {
    next_event(s, "a HeldObjectsChanged event", |e| match e.event {
        Some(Event::HeldObjects(h)) if h.cluster == cluster => Some(h),
        _ => None,
    })
    .await
}

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|o| o["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_objects_reach_every_surface_and_old_spokes_break_nothing() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let old_token = hub.register("c2", json!({})).await;
    let r = hub.create_gate_yaml(GATE).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let served = serve(&hub).await;
    let mut admin = served.grpc.admin();
    let mut watch = served.watch(&hub.viewer).await;

    // c2's spoke predates object holds: its reports carry no held_objects.
    let old = served.spoke(&old_token, "c2").await;
    old.report(0, vec![kustomization("flux-system", "apps", false, &[])])
        .await;
    let body = until(&hub, "/api/v1/clusters/c2/status", |b| {
        b["objects"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    assert_eq!(body["heldObjects"], json!([]), "{body}");
    assert_eq!(body["counts"]["heldObjects"], 0, "{body}");

    // c1: the Deployment and Service held by the closed gate, a person's own
    // mark on another Deployment, a Service selected but no longer held.
    let mut spoke = served.spoke(&token, "c1").await;
    let rev = spoke.snapshot().await.revision;
    report(
        &spoke,
        rev,
        vec![
            held("Deployment", "nginx", &["nginx-window"], false),
            held("Service", "nginx", &["nginx-window"], false),
            held("Deployment", "legacy", &[], true),
            held("Service", "metrics", &[], false),
        ],
    )
    .await;
    let body = until(&hub, "/api/v1/clusters/c1/status", |b| {
        b["heldObjects"].as_array().is_some_and(|o| o.len() == 4)
    })
    .await;
    let list = &body["heldObjects"];
    // Held ones first.
    assert_eq!(
        names(list),
        ["legacy", "nginx", "nginx", "metrics"],
        "{body}"
    );
    let nginx = list
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["name"] == "nginx")
        .unwrap();
    assert_eq!(nginx["group"], "apps");
    assert_eq!(nginx["namespace"], "nginx");
    assert_eq!(nginx["kustomizationNamespace"], "flux-system");
    assert_eq!(nginx["kustomizationName"], "apps");
    assert_eq!(nginx["heldBy"], json!(["nginx-window"]));
    assert_eq!(nginx["held"], true);
    assert_eq!(nginx["heldByPerson"], false);
    assert_eq!(nginx["heldSinceRevision"], "main@sha1:aaa");
    assert_eq!(nginx["heldSince"], "2026-11-25T12:00:00Z");
    assert_eq!(nginx["newerRevisionApplied"], true);
    assert!(nginx["reportedAt"].is_string(), "{nginx}");
    assert_eq!(list[0]["heldByPerson"], true);
    assert_eq!(list[3]["held"], false);
    assert_eq!(list[3]["heldSince"], Value::Null);
    let counts = &body["counts"];
    assert_eq!(counts["heldObjects"], 2, "{body}");
    assert_eq!(counts["heldObjectsByPerson"], 1, "{body}");
    assert_eq!(counts["heldObjectsWaiting"], 1, "{body}");
    assert_eq!(body["gates"][0]["heldObjects"], 2, "{body}");

    // Fleet summary and every cluster's gates.
    let s = hub.get("/api/v1/status").await.body;
    assert_eq!(s["objects"]["heldObjects"], 2, "{s}");
    assert_eq!(s["objects"]["heldObjectsByPerson"], 1, "{s}");
    assert_eq!(s["clusters"]["withHeldObjects"], 1, "{s}");
    assert_eq!(s["gates"][0]["heldObjects"], 2, "{s}");
    let f = hub.get("/api/v1/status/clusters").await.body;
    let c1 = &f["clusters"][0];
    assert_eq!(c1["cluster"]["name"], "c1", "{f}");
    assert_eq!(c1["counts"]["heldObjects"], 2, "{f}");
    assert_eq!(c1["gates"][0]["heldObjects"], 2, "{f}");
    assert_eq!(f["clusters"][1]["counts"]["heldObjects"], 0, "{f}");

    // gRPC AdminService.
    let st = served.cluster_status("c1", &hub.viewer).await;
    assert_eq!(st.held_objects.len(), 4);
    let h = st
        .held_objects
        .iter()
        .find(|h| h.kind == "Deployment" && h.name == "nginx")
        .unwrap();
    assert!(h.held && h.newer_revision_applied && !h.held_by_person);
    assert_eq!(h.held_by, ["nginx-window"]);
    assert_eq!(h.held_since_revision, "main@sha1:aaa");
    assert_eq!(h.held_since.unwrap().seconds, 1_795_608_000);
    let counts = st.counts.unwrap();
    assert_eq!(
        (
            counts.held_objects,
            counts.held_objects_by_person,
            counts.held_objects_waiting
        ),
        (2, 1, 1)
    );
    assert_eq!(st.gates[0].held_objects, 2);
    let fleet = admin
        .get_fleet_status(authed(pb::GetFleetStatusRequest {}, &hub.viewer))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(fleet.objects.unwrap().held_objects, 2);
    assert_eq!(fleet.clusters.unwrap().with_held_objects, 1);
    assert_eq!(fleet.gates[0].held_objects, 2);

    // WatchFleet: the held set appeared.
    let e = held_event(&mut watch, "c1").await;
    assert_eq!((e.held, e.by_person, e.previous), (2, 1, 0), "{e:?}");

    // Prometheus gauges of the replica serving c1's spoke.
    let metrics = metrics_of(&hub, &served).await;
    for line in [
        "fleetgate_hub_held_objects{cluster=\"c1\"} 2",
        "fleetgate_hub_held_objects_by_person{cluster=\"c1\"} 1",
        "fleetgate_hub_held_objects_waiting{cluster=\"c1\"} 1",
        "fleetgate_hub_held_objects_by_gate{cluster=\"c1\",gate=\"nginx-window\"} 2",
        "fleetgate_hub_held_objects{cluster=\"c2\"} 0",
    ] {
        assert!(metrics.contains(line), "{line} missing:\n{metrics}");
    }

    // Same counts, another object held: the set changed, so an event.
    report(
        &spoke,
        rev,
        vec![
            held("Deployment", "nginx", &["nginx-window"], false),
            held("Service", "metrics", &["nginx-window"], false),
            held("Deployment", "legacy", &[], true),
        ],
    )
    .await;
    let e = held_event(&mut watch, "c1").await;
    assert_eq!((e.held, e.previous), (2, 2), "{e:?}");

    // The same spoke downgraded (no held_objects): nothing is held any more.
    spoke
        .report(0, vec![kustomization("flux-system", "apps", false, &[])])
        .await;
    let e = held_event(&mut watch, "c1").await;
    assert_eq!(
        (e.held, e.by_person, e.previous, e.previous_by_person),
        (0, 0, 2, 1)
    );
    let body = hub.get("/api/v1/clusters/c1/status").await.body;
    assert_eq!(body["heldObjects"], json!([]), "{body}");
    assert_eq!(body["objects"].as_array().unwrap().len(), 1, "{body}");

    // A held object that cannot be converted or stored is left out and
    // listed with its field; the rest of the report is stored.
    let mut bad = held("Deployment", "nginx", &["nginx-window"], false);
    bad.held_since = "yesterday".into();
    let mut empty = held("Deployment", "x", &["nginx-window"], false);
    empty.kustomization_name.clear();
    report(
        &spoke,
        rev,
        vec![held("Service", "ok", &[], false), bad, empty],
    )
    .await;
    let body = until(&hub, "/api/v1/clusters/c1/status", |b| {
        b["reportProblems"]["total"] == 2
    })
    .await;
    let fields: Vec<&str> = body["reportProblems"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "report.held_objects[1].held_since",
            "report.held_objects[2].kustomization_name"
        ],
        "{body}"
    );
    assert_eq!(body["heldObjects"].as_array().unwrap().len(), 1, "{body}");
    drop((watch, old));
    served.stop().await;
}

/// HoldNotPermitted: the spoke reports objects a holdObjects gate selects whose
/// kind its `--held-kinds` does not enable; every surface flags them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_the_spoke_may_not_hold_are_flagged_on_every_surface() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let r = hub.create_gate_yaml(GATE).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (served, mut watch, spoke, rev) = c1_connected(&hub, &token).await;
    let not_permitted = pb::HeldObjectStatus {
        not_permitted: true,
        ..held("Deployment", "nginx", &[], false)
    };
    report(&spoke, rev, vec![not_permitted]).await;
    let body = until(&hub, "/api/v1/clusters/c1/status", |b| {
        b["heldObjects"].as_array().is_some_and(|o| o.len() == 1)
    })
    .await;
    let o = &body["heldObjects"][0];
    assert_eq!(o["notPermitted"], true, "{body}");
    assert_eq!(o["held"], false, "{body}");
    assert_eq!(o["gates"], json!(["nginx-window"]), "{body}");
    assert_eq!(body["counts"]["heldObjectsNotPermitted"], 1, "{body}");
    assert_eq!(body["counts"]["heldObjects"], 0, "{body}");
    let s = hub.get("/api/v1/status").await.body;
    assert_eq!(s["objects"]["heldObjectsNotPermitted"], 1, "{s}");
    let grid = hub.get("/api/v1/dashboard/fleet").await.body;
    assert_eq!(grid["clusters"][0]["heldObjectsNotPermitted"], 1, "{grid}");

    let st = served.cluster_status("c1", &hub.viewer).await;
    assert!(st.held_objects[0].not_permitted && !st.held_objects[0].held);
    assert_eq!(st.counts.unwrap().held_objects_not_permitted, 1);

    let e = held_event(&mut watch, "c1").await;
    assert_eq!((e.not_permitted, e.previous_not_permitted), (1, 0), "{e:?}");

    let metrics = metrics_of(&hub, &served).await;
    let line = "fleetgate_hub_held_objects_not_permitted{cluster=\"c1\"} 1";
    assert!(metrics.contains(line), "{line} missing:\n{metrics}");

    // The kind enabled on the spoke: the next report no longer flags it.
    report(&spoke, rev, vec![]).await;
    let e = held_event(&mut watch, "c1").await;
    assert_eq!((e.not_permitted, e.previous_not_permitted), (0, 1), "{e:?}");
    drop(watch);
    served.stop().await;
}

/// Warn mode on the change streams: what a closed warn gate would suspend and hold comes as
/// its own WatchFleet event (`WouldHoldChanged`, SSE `wouldHold`), apart from the held
/// counts (nothing is held), with the `would_suspend_objects`/`would_hold_objects` gauges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn would_hold_counts_go_on_the_change_streams_apart_from_held_ones() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let r = hub
        .create_gate_yaml(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: try}\nspec:\n  enforcement: warn\n  clusters: {names: [c1]}\n  targets: {kinds: [Kustomization]}\n  default: closed\n",
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let (served, mut watch, spoke, rev) = c1_connected(&hub, &token).await;
    let would = |name: &str, hold: bool| pb::ObjectStatus {
        would_suspend_by: vec!["try".into()],
        would_hold: hold,
        ..kustomization("flux-system", name, false, &["try"])
    };
    send_objects(
        &spoke,
        rev,
        vec![would("apps", true), would("web", false)],
        vec![],
    )
    .await;
    let w = would_event(&mut watch).await;
    assert_eq!(
        (
            w.would_suspend,
            w.would_hold,
            w.previous_would_suspend,
            w.previous_would_hold
        ),
        (2, 1, 0, 0),
        "{w:?}"
    );
    let metrics = metrics_of(&hub, &served).await;
    for line in [
        "fleetgate_hub_would_suspend_objects{cluster=\"c1\",gate=\"try\"} 2",
        "fleetgate_hub_would_hold_objects{cluster=\"c1\",gate=\"try\"} 1",
    ] {
        assert!(metrics.contains(line), "{line} missing:\n{metrics}");
    }
    // The gate opens (or is enforced): nothing would be held any more.
    send_objects(
        &spoke,
        rev,
        vec![kustomization("flux-system", "apps", false, &["try"])],
        vec![],
    )
    .await;
    let w = would_event(&mut watch).await;
    assert_eq!(
        (
            w.would_suspend,
            w.would_hold,
            w.previous_would_suspend,
            w.previous_would_hold
        ),
        (0, 0, 2, 1),
        "{w:?}"
    );
    let metrics = metrics_of(&hub, &served).await;
    assert!(!metrics.contains("would_hold_objects{"), "{metrics}");
    drop(watch);
    served.stop().await;
}

/// The next `WouldHoldChanged` for c1; a `HeldChanged` on the way fails (nothing is held).
async fn would_event(s: &mut Streaming<pb::FleetEvent>) -> pb::WouldHoldChanged {
    next_event(s, "a WouldHoldChanged event", |e| match e.event {
        Some(Event::WouldHold(w)) if w.cluster == "c1" => Some(w),
        Some(Event::Held(h)) => panic!("nothing is held for a warn gate: {h:?}"),
        _ => None,
    })
    .await
}
