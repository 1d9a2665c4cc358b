//! Local gates (Gate objects made in a hub-connected cluster): the hub's
//! `--local-gates` setting reaches spokes in their snapshots — also a spoke
//! that holds the current revision with the other setting (a hub restarted
//! with another flag); a spoke's report of its local gates is stored and
//! shown read-only on every surface (REST + OpenAPI, gRPC, WatchFleet, SSE,
//! metrics), enforced closed ones close the cluster's combined state, a bad
//! one is left out and listed naming the field, and a spoke that predates them shows
//! none.

mod common;
mod grpc_support;

use axum::http::Method;
use common::Hub;
use fleetgate_hub::config::{HttpOptions, LocalGates};
use fleetgate_hub::grpc::GrpcOptions;
use fleetgate_hub::replica::Replica;
use fleetgate_proto::v1::{self as pb, fleet_event::Event};
use grpc_support::served::{Served, next_event};
use grpc_support::{Grpc, TestSpoke, kustomization, within};
use serde_json::{Value, json};
use tonic::Streaming;

fn opts(local_gates: LocalGates) -> GrpcOptions {
    GrpcOptions {
        local_gates,
        ..Grpc::opts()
    }
}

#[tokio::test]
async fn the_setting_reaches_spokes_in_snapshots() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    hub.simple_gate("g", &["c1"], "open").await;

    // Default: ignore.
    let grpc = Grpc::start(hub.service.clone(), Grpc::opts()).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", 0)
        .await
        .unwrap();
    let s = spoke.snapshot().await;
    assert!(!s.local_gates_enforced);
    drop(spoke);
    grpc.stop().await;

    // The hub restarts with `--local-gates enforce`: a spoke holding the
    // current revision (Hello says not enforced, or is an old spoke's, which
    // never says) is sent the snapshot again, now enforcing.
    let grpc = Grpc::start(hub.service.clone(), opts(LocalGates::Enforce)).await;
    let mut spoke = TestSpoke::connect(grpc.channel.clone(), &token, "c1", s.revision)
        .await
        .unwrap();
    let again = spoke.snapshot().await;
    assert_eq!(again.revision, s.revision);
    assert!(again.local_gates_enforced);
    drop(spoke);
    grpc.stop().await;
}

fn local(name: &str, enforced: bool, open: bool, governed: u32, held: u32) -> pb::LocalGateStatus {
    pb::LocalGateStatus {
        name: name.into(),
        enforced,
        open,
        reason: if enforced { "Default" } else { "" }.into(),
        message: if enforced { "default (closed)" } else { "" }.into(),
        next_transition: None,
        governed,
        held,
        ready: if enforced { "True" } else { "False" }.into(),
        ready_reason: if enforced { "Enforced" } else { "NotEnforced" }.into(),
        ready_message: if enforced {
            "gate in force"
        } else {
            "hub setting --local-gates=ignore"
        }
        .into(),
    }
}

async fn report(spoke: &TestSpoke, revision: u64, local_gates: Vec<pb::LocalGateStatus>) {
    spoke
        .send_report(pb::StatusReport {
            revision,
            objects: vec![kustomization(
                "flux-system",
                "apps",
                true,
                &["release", "git-freeze"],
            )],
            local_gates,
            ..Default::default()
        })
        .await;
}

/// The next `localGates` WatchFleet event of `cluster`.
async fn local_event(s: &mut Streaming<pb::FleetEvent>, cluster: &str) -> pb::LocalGatesChanged {
    next_event(s, "a LocalGatesChanged event", |e| match e.event {
        Some(Event::LocalGates(l)) if l.cluster == cluster => Some(l),
        _ => None,
    })
    .await
}

/// A replica serving REST and gRPC with `--local-gates <local_gates>`, and
/// WatchFleet opened as a viewer before any spoke connects.
async fn serve(hub: &Hub, local_gates: LocalGates) -> (Served, Streaming<pb::FleetEvent>) {
    let served = Served::start(Replica::new(
        hub.service.clone(),
        HttpOptions::default(),
        opts(local_gates),
    ))
    .await;
    let watch = served.watch(&hub.viewer).await;
    (served, watch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reported_local_gates_show_on_every_surface() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    let old_token = hub.register("c2", json!({})).await;
    hub.simple_gate("release", &["c1", "c2"], "open").await;

    let (served, mut watch) = serve(&hub, LocalGates::Enforce).await;
    let mut sse = served.events(&hub.viewer).await;

    // c2's spoke predates local gates: its report carries none.
    let old = served.spoke(&old_token, "c2").await;
    old.report(0, vec![kustomization("flux-system", "apps", false, &[])])
        .await;

    let mut spoke = served.spoke(&token, "c1").await;
    let snap = spoke.snapshot().await;
    assert!(snap.local_gates_enforced);
    report(
        &spoke,
        snap.revision,
        vec![
            local("other", false, false, 0, 0),
            local("git-freeze", true, false, 1, 1),
        ],
    )
    .await;

    // WatchFleet: the cluster's local gates, by name.
    let e = local_event(&mut watch, "c1").await;
    let names: Vec<&str> = e.gates.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["git-freeze", "other"]);
    let g = &e.gates[0];
    assert!(
        g.enforced && g.state == "closed" && g.governed == 1 && g.held == 1,
        "{g:?}"
    );
    assert_eq!(
        (g.reason.as_str(), g.ready_reason.as_str()),
        ("Default", "Enforced")
    );
    // The dashboard's event stream says the same.
    sse.next("localGates", |d| {
        d.to_string().contains(r#""name":"git-freeze""#)
    })
    .await;

    // REST: stored and shown; the enforced closed local gate closes the
    // cluster (the hub's own gate is open), the one not enforced does not.
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
    let list = st["localGates"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{st}");
    assert_eq!(list[0]["name"], "git-freeze");
    assert_eq!(list[0]["state"], "closed");
    assert_eq!(list[0]["enforced"], true);
    assert_eq!(list[0]["held"], 1);
    assert_eq!(list[1]["readyReason"], "NotEnforced");
    assert_eq!(
        list[1]["readyMessage"], "hub setting --local-gates=ignore",
        "{st}"
    );
    assert_eq!(st["gates"][0]["state"], "open", "{st}");
    assert_eq!(
        (&st["open"], &st["closedBy"]),
        (&json!(false), &json!(["git-freeze"]))
    );
    let fleet = served
        .get_json("/api/v1/status/clusters", &hub.viewer)
        .await;
    let c1 = &fleet["clusters"][0];
    assert_eq!(c1["cluster"]["name"], "c1");
    assert_eq!(
        (&c1["open"], &c1["closedBy"]),
        (&json!(false), &json!(["git-freeze"]))
    );
    assert_eq!(fleet["clusters"][1]["open"], true, "{fleet}");
    // OpenAPI documents them.
    let doc = served.get_json("/api/v1/openapi.json", &hub.viewer).await;
    let schemas = &doc["components"]["schemas"];
    assert!(!schemas["ClusterStatus"]["properties"]["localGates"].is_null());
    assert!(!schemas["LocalGate"]["properties"]["readyReason"].is_null());
    // gRPC AdminService.
    let status = served.cluster_status("c1", &hub.viewer).await;
    assert_eq!(status.local_gates.len(), 2);
    assert_eq!(status.local_gates[0].name, "git-freeze");
    assert_eq!(status.closed_by, ["git-freeze"]);
    // Metrics of the replica serving c1.
    let (_, metrics) = served.call(Method::GET, "/metrics", &hub.viewer).await;
    for line in [
        r#"fleetgate_hub_local_gates{cluster="c1",enforced="true",state="closed"} 1"#,
        r#"fleetgate_hub_local_gates{cluster="c1",enforced="true",state="open"} 0"#,
        r#"fleetgate_hub_local_gates{cluster="c1",enforced="false",state="closed"} 1"#,
        r#"fleetgate_hub_local_gates{cluster="c2",enforced="true",state="closed"} 0"#,
    ] {
        assert!(metrics.contains(line), "{line} missing:\n{metrics}");
    }
    // The old spoke's cluster shows none.
    let other = served
        .get_json("/api/v1/clusters/c2/status", &hub.viewer)
        .await;
    assert_eq!(other["localGates"], json!([]), "{other}");

    // A local gate the hub cannot take is left out and listed with its
    // field; the rest of the report is stored, the stream stays open.
    let mut bad = local("Bad_Name", true, true, 0, 0);
    let mut maybe = local("ok", true, true, 0, 0);
    maybe.ready = "Maybe".into();
    bad.message = "held \u{0}".into();
    report(
        &spoke,
        snap.revision,
        vec![local("git-freeze", true, true, 0, 0), bad, maybe],
    )
    .await;
    let st = within("the problems to show", async {
        loop {
            let st = served
                .get_json("/api/v1/clusters/c1/status", &hub.viewer)
                .await;
            if st["reportProblems"]["total"] != 0 {
                return st;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    let fields: Vec<&str> = st["reportProblems"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "report.local_gates[1].message",
            "report.local_gates[1].name",
            "report.local_gates[2].ready"
        ],
        "{st}"
    );
    assert_eq!(st["localGates"].as_array().unwrap().len(), 1, "{st}");
    assert_eq!(st["localGates"][0]["name"], "git-freeze", "{st}");
    let e = local_event(&mut watch, "c1").await;
    assert_eq!(e.gates.len(), 1, "{e:?}");

    // The local gates are gone from the cluster: an event with none, and
    // the cluster is open again.
    let spoke = TestSpoke::connect(served.grpc.channel.clone(), &token, "c1", snap.revision)
        .await
        .unwrap();
    report(&spoke, snap.revision, vec![]).await;
    let e = local_event(&mut watch, "c1").await;
    assert!(e.gates.is_empty(), "{e:?}");
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
    assert_eq!((&st["open"], &st["localGates"]), (&json!(true), &json!([])));

    drop((watch, old, spoke));
    served.stop().await;
}

/// The `local_gate.*` audit entries: (action, actor, gate named in the entry).
async fn local_gate_audit(served: &Served, token: &str) -> Vec<(String, String, String)> {
    let audit = served
        .get_json("/api/v1/audit?targetKind=cluster&limit=1000", token)
        .await;
    let mut out: Vec<(String, String, String)> = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| {
            e["action"]
                .as_str()
                .unwrap_or_default()
                .starts_with("local_gate.")
        })
        .map(|e| {
            let gate = if e["after"].is_null() {
                &e["before"]
            } else {
                &e["after"]
            };
            (
                e["action"].as_str().unwrap_or_default().to_string(),
                e["actor"].as_str().unwrap_or_default().to_string(),
                gate["name"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.reverse(); // oldest first
    out
}

/// With `--local-gates enforce`, a cluster's `nextTransition` (REST cluster
/// and fleet status, gRPC) counts its enforced local gates, as its combined
/// open/closed does; local gates that appear, disappear or change how they
/// are enforced are audited under `cluster/NAME`, a report that only moves
/// their state or counts (a heartbeat, a window edge) is not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_transition_and_audit_follow_local_gates() {
    let hub = Hub::new().await;
    let token = hub.register("c1", json!({})).await;
    // The hub's only gate is open with nothing scheduled: no next change of its own.
    hub.simple_gate("release", &["c1"], "open").await;
    let (served, mut watch) = serve(&hub, LocalGates::Enforce).await;
    let mut spoke = served.spoke(&token, "c1").await;
    let snap = spoke.snapshot().await;
    let at = common::t0() + chrono::Duration::hours(3);
    let mut freeze = local("git-freeze", true, false, 1, 1);
    freeze.next_transition = Some(fleetgate_proto::time::to_timestamp(at));
    let mut ignored = local("other", false, false, 0, 0);
    ignored.next_transition = Some(fleetgate_proto::time::to_timestamp(
        common::t0() + chrono::Duration::hours(1),
    ));
    report(&spoke, snap.revision, vec![freeze.clone(), ignored.clone()]).await;
    local_event(&mut watch, "c1").await;

    // The enforced closed local gate opens at `at`: the cluster's next change.
    // The earlier transition of the gate that is not enforced counts for nothing.
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
    assert_eq!(st["open"], false, "{st}");
    let want = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    let next = |v: &Value| {
        v.as_str()
            .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
            .map(|t| t.to_utc())
    };
    assert_eq!(next(&st["nextTransition"]), Some(at), "{st} (want {want})");
    let fleet = served
        .get_json("/api/v1/status/clusters", &hub.viewer)
        .await;
    assert_eq!(
        next(&fleet["clusters"][0]["nextTransition"]),
        Some(at),
        "{fleet}"
    );
    let status = served.cluster_status("c1", &hub.viewer).await;
    assert_eq!(
        status.next_transition,
        Some(fleetgate_proto::time::to_timestamp(at))
    );
    assert_eq!(
        local_gate_audit(&served, &hub.viewer).await,
        [
            (
                "local_gate.add".into(),
                "cluster/c1".into(),
                "git-freeze".into()
            ),
            ("local_gate.add".into(), "cluster/c1".into(), "other".into()),
        ]
    );

    // The window edge passed on the cluster: open, counts moved. Shown and
    // evented, not audited.
    let mut opened = local("git-freeze", true, true, 1, 0);
    opened.next_transition = None;
    report(&spoke, snap.revision, vec![opened.clone(), ignored.clone()]).await;
    let e = local_event(&mut watch, "c1").await;
    assert_eq!(e.gates[0].state, "open", "{e:?}");
    assert_eq!(local_gate_audit(&served, &hub.viewer).await.len(), 2);
    // Open everywhere, nothing scheduled: no next change.
    let st = served
        .get_json("/api/v1/clusters/c1/status", &hub.viewer)
        .await;
    assert_eq!(
        (&st["open"], &st["nextTransition"]),
        (&json!(true), &Value::Null),
        "{st}"
    );

    // A Git commit broke the gate's spec (the last valid version stays in
    // force, Ready=False), and the other gate left the cluster.
    let mut invalid = opened.clone();
    invalid.ready = "False".into();
    invalid.ready_reason = "InvalidSpec".into();
    invalid.ready_message = "spec.windows[0].schedule: bad".into();
    report(&spoke, snap.revision, vec![invalid]).await;
    local_event(&mut watch, "c1").await;
    let audit = local_gate_audit(&served, &hub.viewer).await;
    assert_eq!(
        audit[2..],
        [
            (
                "local_gate.change".into(),
                "cluster/c1".into(),
                "git-freeze".into()
            ),
            (
                "local_gate.remove".into(),
                "cluster/c1".into(),
                "other".into()
            ),
        ]
    );

    drop((watch, spoke));
    served.stop().await;
}
