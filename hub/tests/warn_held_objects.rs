//! Warn mode for `holdObjects` gates on the hub: a spoke reports over a real gRPC stream
//! the objects inside a Kustomization that a closed warn gate would hold
//! (`HeldObjectStatus.would_hold_by`), and every surface shows them apart from real
//! holds — REST and gRPC cluster status (per object, per gate, counts), the fleet summary
//! and cluster briefs, the WatchFleet `WouldHoldChanged` and SSE `wouldHold` events, the
//! dashboard grid, and the `held_objects_would_hold_by_gate` gauge.

mod common;
mod grpc_support;

use axum::http::{Method, StatusCode};
use common::Hub;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::served::{Served, next_event};
use grpc_support::{TestSpoke, authed, kustomization};
use serde_json::json;

const GATE: &str = "nginx-try";

/// The nginx `kind` inside `apps`, as the spoke reports it: would-held by the warn gate
/// (`waiting`: its Kustomization applied a newer revision since), or not at all.
fn object(kind: &str, would: bool, waiting: bool) -> pb::HeldObjectStatus {
    pb::HeldObjectStatus {
        group: if kind == "Deployment" { "apps" } else { "" }.into(),
        kind: kind.into(),
        namespace: "nginx".into(),
        name: "nginx".into(),
        kustomization_namespace: "flux-system".into(),
        kustomization_name: "apps".into(),
        gates: vec![GATE.into()],
        would_hold_by: if would { vec![GATE.into()] } else { vec![] },
        would_hold_since_revision: if would { "main@sha1:aaa" } else { "" }.into(),
        would_hold_newer_revision: waiting,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn would_held_objects_reach_every_surface_apart_from_held_ones() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let r = hub
        .create_gate_yaml(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {GATE}}}\nspec:\n  enforcement: warn\n  mode: holdObjects\n  clusters: {{names: [c1]}}\n  targets: {{kinds: [Kustomization], names: [apps]}}\n  objects: {{kinds: [{{group: apps, kind: Deployment}}, {{group: '', kind: Service}}]}}\n  default: closed\n"
        ))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.text);
    let served = Served::of(hub.service.clone()).await;
    let mut watch = served.watch(&hub.viewer).await;
    let mut sse = served.events(&hub.viewer).await;
    let mut spoke = TestSpoke::connect(served.grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let rev = spoke.snapshot().await.revision;
    let report = |held_objects: Vec<pb::HeldObjectStatus>| pb::StatusReport {
        revision: rev,
        objects: vec![kustomization("flux-system", "apps", false, &[GATE])],
        held_objects,
        ..Default::default()
    };
    spoke
        .send_report(report(vec![
            object("Deployment", true, true),
            object("Service", true, false),
        ]))
        .await;

    // The change streams: their own event, never a held one.
    let w = next_event(&mut watch, "a WouldHoldChanged event", |e| match e.event {
        Some(Event::WouldHold(w)) if w.cluster == "c1" => Some(w),
        Some(Event::Held(h)) => panic!("nothing is held for a warn gate: {h:?}"),
        Some(Event::HeldObjects(h)) => panic!("nothing is marked for a warn gate: {h:?}"),
        _ => None,
    })
    .await;
    assert_eq!(
        (
            w.would_hold_objects,
            w.would_hold_objects_waiting,
            w.previous_would_hold_objects
        ),
        (2, 1, 0),
        "{w:?}"
    );
    let e = sse.next("wouldHold", |d| d["cluster"] == "c1").await;
    assert_eq!(
        (&e["wouldHoldObjects"], &e["wouldHoldObjectsWaiting"]),
        (&json!(2), &json!(1)),
        "{e}"
    );

    // REST: per object, per gate, counts; the fleet summary and the cluster briefs.
    let s = hub.get("/api/v1/clusters/c1/status").await.body;
    let d = &s["heldObjects"].as_array().unwrap()[0];
    assert_eq!(
        (&d["kind"], &d["held"], &d["heldBy"], &d["wouldHoldBy"]),
        (
            &json!("Deployment"),
            &json!(false),
            &json!([]),
            &json!([GATE])
        ),
        "{s}"
    );
    assert_eq!(
        (&d["wouldHoldSinceRevision"], &d["wouldHoldNewerRevision"]),
        (&json!("main@sha1:aaa"), &json!(true)),
        "{d}"
    );
    assert_eq!(
        (
            &s["counts"]["heldObjects"],
            &s["counts"]["wouldHoldObjects"],
            &s["counts"]["wouldHoldObjectsWaiting"]
        ),
        (&json!(0), &json!(2), &json!(1)),
        "{s}"
    );
    assert_eq!(s["gates"][0]["wouldHoldObjects"], 2, "{s}");
    assert_eq!(s["gates"][0]["heldObjects"], 0, "{s}");
    let fleet = hub.get("/api/v1/status/clusters").await.body;
    assert_eq!(
        fleet["summary"]["objects"]["wouldHoldObjects"], 2,
        "{fleet}"
    );
    assert_eq!(
        fleet["summary"]["gates"][0]["wouldHoldObjects"], 2,
        "{fleet}"
    );
    assert_eq!(
        fleet["summary"]["clusters"]["withHeldObjects"], 0,
        "{fleet}"
    );
    assert_eq!(
        fleet["clusters"][0]["gates"][0]["wouldHoldObjects"], 2,
        "{fleet}"
    );
    assert_eq!(
        fleet["clusters"][0]["counts"]["wouldHoldObjects"], 2,
        "{fleet}"
    );
    // The dashboard grid: the row's count and the cell's.
    let grid = served
        .get_json("/api/v1/dashboard/fleet", &hub.viewer)
        .await;
    assert_eq!(grid["clusters"][0]["wouldHoldObjects"], 2, "{grid}");
    let cell = &grid["clusters"][0]["cells"][0];
    assert_eq!(
        (&cell["warn"], &cell["wouldHoldObjects"]),
        (&json!(true), &json!(2)),
        "{grid}"
    );

    // The gate's page: its cluster would close, with the objects it would hold.
    let page = served
        .get_json(&format!("/api/v1/dashboard/gates/{GATE}"), &hub.viewer)
        .await;
    let c = &page["clusters"][0];
    assert_eq!(
        (&c["warn"], &c["state"], &c["wouldHoldObjects"]),
        (&json!(true), &json!("closed"), &json!(2)),
        "{page}"
    );

    // gRPC: the same.
    let mut admin = served.grpc.admin();
    let st = admin
        .get_cluster_status(authed(
            pb::GetClusterStatusRequest { name: "c1".into() },
            &hub.viewer,
        ))
        .await
        .unwrap()
        .into_inner();
    let counts = st.counts.unwrap();
    assert_eq!(
        (
            counts.held_objects,
            counts.would_hold_objects,
            counts.would_hold_objects_waiting
        ),
        (0, 2, 1)
    );
    assert_eq!(st.gates[0].would_hold_objects, 2);
    let d = &st.held_objects[0];
    assert_eq!(
        (
            d.would_hold_by.clone(),
            d.would_hold_since_revision.as_str(),
            d.would_hold_newer_revision,
            d.held
        ),
        (vec![GATE.to_string()], "main@sha1:aaa", true, false)
    );
    let f = admin
        .get_fleet_status(authed(pb::GetFleetStatusRequest::default(), &hub.viewer))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(f.gates[0].would_hold_objects, 2);
    assert_eq!(f.objects.unwrap().would_hold_objects, 2);

    // The gauge, per cluster and gate.
    let (status, metrics) = served.call(Method::GET, "/metrics", &hub.viewer).await;
    assert_eq!(status, StatusCode::OK);
    let line = format!(
        "fleetgate_hub_held_objects_would_hold_by_gate{{cluster=\"c1\",gate=\"{GATE}\"}} 2"
    );
    assert!(metrics.contains(&line), "{line} missing:\n{metrics}");

    // Enforced (or opened): nothing would be held any more.
    spoke
        .send_report(report(vec![
            object("Deployment", false, false),
            object("Service", false, false),
        ]))
        .await;
    let w = next_event(&mut watch, "the WouldHoldChanged back to 0", |e| {
        match e.event {
            Some(Event::WouldHold(w)) if w.cluster == "c1" => Some(w),
            _ => None,
        }
    })
    .await;
    assert_eq!(
        (w.would_hold_objects, w.previous_would_hold_objects),
        (0, 2),
        "{w:?}"
    );
    let (_, metrics) = served.call(Method::GET, "/metrics", &hub.viewer).await;
    assert!(
        !metrics.contains("held_objects_would_hold_by_gate{"),
        "{metrics}"
    );
    drop(watch);
    served.stop().await;
}
