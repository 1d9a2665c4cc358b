//! Object-level holds (`mode: holdObjects`) end to end against the simulator's
//! kustomize-controller: the seeds' nginx example in ONE Kustomization (the
//! ConfigMap stays real-time, drift included; the Deployment waits for the
//! window), a person's own `reconcile: disabled` surviving open and close, and
//! a window edge passing with the hub down and the spoke restarted. People
//! look with the real kubectl.

mod support;

use std::{collections::BTreeMap, time::Duration};

use chrono::Utc;
use fleetgate_proto::v1 as pb;
use fleetgate_spoke::{Config, hold::marks};
use fleetgate_tests::{dynamic_api, nginx_app, watch_until};
use kube::{
    Api, Client,
    api::{DynamicObject, Patch, PatchParams},
};
use serde_json::{Value, json};
use support::*;

const APP_NS: &str = "nginx";

/// The gate of docs/object-holds.md's example: Deployments and Services of `apps`
/// wait for the window, everything else it applies stays real-time.
fn hold_gate(default: &str) -> pb::GateRule {
    let manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "window"},
        "spec": {
            "clusters": {"names": [CLUSTER]},
            "mode": "holdObjects",
            "targets": {"names": ["apps"]},
            "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}, {"kind": "Service"}]},
            "default": default,
        }
    });
    pb::GateRule {
        name: "window".into(),
        version: 1,
        manifest_json: manifest.to_string(),
        release: None,
        waiting: None,
        opening_fence: None,
        calendars: vec![],
    }
}

fn config(hub_url: Option<String>) -> Config {
    let mut c = spoke_config(hub_url);
    c.held_kinds = ["apps/v1/Deployment", "v1/Service", "v1/ConfigMap"]
        .iter()
        .map(|k| k.parse().unwrap())
        .collect();
    c
}

async fn setup() -> Cluster {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    let mut apps = kustomization("apps", "repo", false);
    apps["spec"]["path"] = json!("./apps");
    create(&cluster, apps).await;
    push_nginx(&cluster, 1, "nginx:1.25", "blue").await;
    cluster
}

async fn push_nginx(cluster: &Cluster, n: u32, image: &str, color: &str) {
    let manifests = BTreeMap::from([("apps".to_string(), nginx_app(image, color))]);
    cluster
        .sim
        .push_manifests(
            CLUSTER,
            ("GitRepository", NS, "repo"),
            &revision(n),
            &manifests,
        )
        .await
        .expect("push");
    let want = revision(n);
    wait_for(
        &cluster.client,
        "Kustomization",
        "apps",
        "revision applied",
        |o| status_str(o, "/status/lastAppliedRevision") == Some(want.as_str()),
    )
    .await;
}

fn app_api(client: &Client, group: &str, kind: &str) -> Api<DynamicObject> {
    dynamic_api(client, (group, "v1", kind), APP_NS)
}

/// Waits (watch, bounded) until the app object satisfies `pred`.
async fn wait_app(
    client: &Client,
    group: &str,
    kind: &str,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let what = format!("{kind}: {what}");
    watch_until(app_api(client, group, kind), name, &what, WAIT, pred).await
}

fn image(o: &DynamicObject) -> Option<&str> {
    o.data
        .pointer("/spec/template/spec/containers/0/image")
        .and_then(Value::as_str)
}

fn held_by_us(o: &DynamicObject) -> bool {
    annotation(o, marks::RECONCILE) == Some("disabled") && annotation(o, marks::HELD_BY).is_some()
}

/// The real kubectl against the simulated cluster, as a person would look.
async fn kubectl(cluster: &Cluster, args: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    cluster.sim.write_kubeconfig(CLUSTER, &kubeconfig).unwrap();
    let out = tokio::time::timeout(
        WAIT,
        tokio::process::Command::new("kubectl")
            .env("HOME", dir.path())
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(args)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("kubectl finished")
    .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_in_one_kustomization_configmap_real_time_deployment_in_the_window() {
    let cluster = setup().await;
    let mut hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![hold_gate("closed")], vec![]));
    let spoke = RunningSpoke::start(&cluster, config(Some(hub.url()))).await;

    // Closed: the Deployment and the Service are marked, the ConfigMap is not.
    let c = &cluster.client;
    wait_app(c, "apps", "Deployment", "nginx", "held", held_by_us).await;
    wait_app(c, "", "Service", "nginx", "held", held_by_us).await;
    spoke
        .report_where("two objects held", |r| {
            r.held_objects
                .iter()
                .filter(|h| !h.held_by.is_empty())
                .count()
                == 2
        })
        .await;
    let cm = app_api(c, "", "ConfigMap")
        .get("nginx-config")
        .await
        .unwrap();
    assert_eq!(annotation(&cm, marks::RECONCILE), None);
    // The hub gets them in the status report (proto HeldObjectStatus).
    let report = hub
        .report_where("held objects reported", |r: &pb::StatusReport| {
            r.held_objects.iter().any(|h| !h.held_by.is_empty())
        })
        .await;
    let deploy = report
        .held_objects
        .iter()
        .find(|h| h.kind == "Deployment")
        .expect("Deployment reported");
    assert_eq!(
        (
            deploy.group.as_str(),
            deploy.namespace.as_str(),
            deploy.name.as_str()
        ),
        ("apps", APP_NS, "nginx")
    );
    assert_eq!(deploy.kustomization_name, "apps");
    assert_eq!(deploy.held_by, ["window"]);
    assert_eq!(deploy.held_since_revision, revision(1));
    let out = kubectl(
        &cluster,
        &["get", "deployment", "nginx", "-n", APP_NS, "-o",
          "jsonpath={.metadata.annotations.kustomize\\.toolkit\\.fluxcd\\.io/reconcile} {.metadata.annotations.fleetgate\\.io/held-by}"],
    )
    .await;
    assert_eq!(out, "disabled window");

    // A commit changing both: the ConfigMap changes at once, the Deployment waits.
    push_nginx(&cluster, 2, "nginx:1.26", "green").await;
    let apps = api(c, "Kustomization").get("apps").await.unwrap();
    assert!(!suspended(&apps), "nothing else was suspended");
    let ready = apps
        .data
        .pointer("/status/conditions/0/status")
        .and_then(Value::as_str);
    assert_eq!(ready, Some("True"), "Ready unchanged by the held objects");
    let cm = app_api(c, "", "ConfigMap")
        .get("nginx-config")
        .await
        .unwrap();
    assert_eq!(cm.data.pointer("/data/color"), Some(&json!("green")));
    let deploy = app_api(c, "apps", "Deployment").get("nginx").await.unwrap();
    assert_eq!(image(&deploy), Some("nginx:1.25"), "held: keeps its image");
    spoke
        .report_where("newer revision waits", |r| {
            r.held_objects.iter().any(|h| {
                &*h.key.name == "nginx"
                    && h.key.kind.kind == "Deployment"
                    && h.newer_revision_applied
                    && h.since_revision.as_deref() == Some(revision(1).as_str())
            })
        })
        .await;

    // Drift on the ConfigMap is still corrected while the gate is closed.
    app_api(c, "", "ConfigMap")
        .patch(
            "nginx-config",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"color": "red"}})),
        )
        .await
        .unwrap();
    wait_app(c, "", "ConfigMap", "nginx-config", "drift corrected", |o| {
        o.data.pointer("/data/color") == Some(&json!("green"))
    })
    .await;

    // The window opens: marks removed, a reconcile requested, the new image rolls out.
    hub.set(snapshot(2, vec![hold_gate("open")], vec![]));
    let deploy = wait_app(c, "apps", "Deployment", "nginx", "new image", |o| {
        image(o) == Some("nginx:1.26")
    })
    .await;
    assert_eq!(annotation(&deploy, marks::RECONCILE), None);
    assert_eq!(annotation(&deploy, marks::HELD_BY), None);
    let apps = api(c, "Kustomization").get("apps").await.unwrap();
    assert!(annotation(&apps, fleetgate_spoke::suspend::annotations::REQUESTED_AT).is_some());
    wait_event(c, "ObjectsHeld", "apps").await;
    wait_event(c, "ObjectsReleased", "apps").await;
    spoke
        .report_where("nothing held", |r| {
            r.held_objects.iter().all(|h| h.held_by.is_empty())
        })
        .await;
    spoke.stop().await;
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persons_own_mark_survives_every_close_and_open() {
    let cluster = setup().await;
    let c = &cluster.client;
    // A person holds the Service themselves, before fleetgate ever closes.
    kubectl(
        &cluster,
        &[
            "annotate",
            "service/nginx",
            "-n",
            APP_NS,
            "kustomize.toolkit.fluxcd.io/reconcile=disabled",
        ],
    )
    .await;
    let hub = FakeHub::start().await;
    let spoke = RunningSpoke::start(&cluster, config(Some(hub.url()))).await;
    for (revision, state) in [(1, "closed"), (2, "open"), (3, "closed"), (4, "open")] {
        hub.set(snapshot(revision, vec![hold_gate(state)], vec![]));
        spoke
            .report_where(&format!("revision {revision} enforced"), |r| {
                r.revision == revision
                    && r.held_objects.iter().any(|h| {
                        h.key.kind.kind == "Deployment" && h.held_by.is_empty() == (state == "open")
                    })
            })
            .await;
        let svc = app_api(c, "", "Service").get("nginx").await.unwrap();
        assert_eq!(
            annotation(&svc, marks::RECONCILE),
            Some("disabled"),
            "{state}"
        );
        assert_eq!(annotation(&svc, marks::HELD_BY), None, "never claimed");
        spoke
            .report_where("reported as held by a person", |r| {
                r.held_objects
                    .iter()
                    .any(|h| h.key.kind.kind == "Service" && h.held_by_person)
            })
            .await;
    }
    spoke.stop().await;
    hub.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_edge_passes_with_the_hub_down_and_the_spoke_restarted() {
    let cluster = setup().await;
    let c = &cluster.client;
    // Closed now; an override opens it a few seconds from now.
    let edge = Utc::now() + chrono::Duration::seconds(4);
    let hub = FakeHub::start().await;
    hub.set(snapshot(
        5,
        vec![hold_gate("closed")],
        vec![override_from("window", "open", edge)],
    ));
    let spoke = RunningSpoke::start(&cluster, config(Some(hub.url()))).await;
    wait_app(c, "apps", "Deployment", "nginx", "held", held_by_us).await;
    spoke
        .report_where("revision 5 enforced", |r| r.revision == 5)
        .await;
    hub.stop().await;
    spoke.stop().await;

    // A commit lands while everything fleetgate is down: held by the mark alone.
    push_nginx(&cluster, 2, "nginx:1.26", "green").await;
    let deploy = app_api(c, "apps", "Deployment").get("nginx").await.unwrap();
    assert_eq!(image(&deploy), Some("nginx:1.25"));

    // Restarted with the hub unreachable: the persisted snapshot opens it at the edge.
    let dead = format!(
        "http://{}",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    );
    let spoke = RunningSpoke::start(&cluster, config(Some(dead))).await;
    let deploy = wait_app(
        c,
        "apps",
        "Deployment",
        "nginx",
        "released at the edge",
        |o| image(o) == Some("nginx:1.26"),
    )
    .await;
    assert!(Utc::now() >= edge, "not released before the edge");
    assert!(!held_by_us(&deploy));
    spoke.stop().await;
    tokio::time::sleep(Duration::ZERO).await;
}

/// The inventory decides what belongs to a Kustomization (docs/object-holds.md,
/// "Rules and limits"): a Service `apps` lists whose owner labels a person removed is
/// still held and released (read by name, the watches select the labels); a
/// Deployment carrying `apps`'s owner labels that `apps`'s inventory does not
/// list is never marked (kustomize-controller does not apply it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_inventory_decides_what_a_kustomization_holds() {
    let cluster = setup().await;
    let c = &cluster.client;
    kubectl(
        &cluster,
        &[
            "label",
            "service/nginx",
            "-n",
            APP_NS,
            &format!("{}-", marks::OWNER_NAME),
            &format!("{}-", marks::OWNER_NAMESPACE),
        ],
    )
    .await;
    create(
        &cluster,
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
               "metadata": {"name": "copied", "namespace": APP_NS,
                            "labels": {(marks::OWNER_NAME): "apps", (marks::OWNER_NAMESPACE): NS}},
               "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    )
    .await;
    let hub = FakeHub::start().await;
    hub.set(snapshot(1, vec![hold_gate("closed")], vec![]));
    let spoke = RunningSpoke::start(&cluster, config(Some(hub.url()))).await;
    wait_app(
        c,
        "",
        "Service",
        "nginx",
        "held without owner labels",
        held_by_us,
    )
    .await;
    wait_app(c, "apps", "Deployment", "nginx", "held", held_by_us).await;
    spoke
        .report_where("both listed objects held", |r| {
            r.held_objects
                .iter()
                .filter(|h| !h.held_by.is_empty())
                .count()
                == 2
        })
        .await;
    let report = spoke.ctx().report.borrow().clone().expect("a report");
    let svc = report
        .held_objects
        .iter()
        .find(|h| h.key.kind.kind == "Service")
        .expect("Service reported");
    assert_eq!(svc.owner.as_ref().map(|o| o.name.as_str()), Some("apps"));
    assert!(
        report.held_objects.iter().all(|h| &*h.key.name != "copied"),
        "not in the inventory: not selected, not reported"
    );
    let copied = app_api(c, "apps", "Deployment")
        .get("copied")
        .await
        .unwrap();
    assert_eq!(annotation(&copied, marks::RECONCILE), None);

    // Opening releases the unlabelled Service too.
    hub.set(snapshot(2, vec![hold_gate("open")], vec![]));
    wait_app(c, "", "Service", "nginx", "released", |o| !held_by_us(o)).await;
    spoke
        .report_where("nothing held", |r| {
            r.revision == 2 && r.held_objects.iter().all(|h| h.held_by.is_empty())
        })
        .await;
    spoke.stop().await;
    hub.stop().await;
}

/// A holdObjects gate selecting kinds the spoke may not hold (`--held-kinds`)
/// says so (`HoldNotPermitted`: a Warning Event, the report), and a person's
/// mark no gate selects is reported too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_on_kinds_the_spoke_may_not_hold_says_so() {
    let cluster = setup().await;
    let c = &cluster.client;
    // A person holds the ConfigMap; no gate selects ConfigMaps.
    kubectl(
        &cluster,
        &[
            "annotate",
            "configmap/nginx-config",
            "-n",
            APP_NS,
            "kustomize.toolkit.fluxcd.io/reconcile=disabled",
        ],
    )
    .await;
    let hub = FakeHub::start().await;
    // Only ConfigMaps enabled: the gate's Deployments and Services are not.
    let mut cfg = spoke_config(Some(hub.url()));
    cfg.held_kinds = vec!["v1/ConfigMap".parse().unwrap()];
    let spoke = RunningSpoke::start(&cluster, cfg).await;
    hub.set(snapshot(1, vec![hold_gate("closed")], vec![]));
    spoke
        .report_where("not permitted and a person's mark reported", |r| {
            let not_permitted: Vec<_> = r.held_objects.iter().filter(|h| h.not_permitted).collect();
            r.revision == 1
                // The Deployment and the Service: selected, not holdable, not held.
                && not_permitted.len() == 2
                && not_permitted.iter().all(|h| {
                    h.held_by.is_empty()
                        && *h.gates == ["window".to_string()]
                        && h.owner.as_ref().is_some_and(|o| o.name == "apps")
                })
                // The ConfigMap a person marked, though no gate selects it.
                && r.held_objects.iter().any(|h| {
                    h.key.kind.kind == "ConfigMap" && h.held_by_person && h.gates.is_empty()
                })
        })
        .await;
    let e = wait_event(c, "HoldNotPermitted", "apps").await;
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    let note = e.note.unwrap_or_default();
    assert!(
        note.contains("'window'")
            && note.contains("Deployment.apps")
            && note.contains("--held-kinds: v1/ConfigMap"),
        "{note}"
    );
    // Nothing was marked: the Deployment is not the spoke's to patch.
    let d = app_api(c, "apps", "Deployment").get("nginx").await.unwrap();
    assert_eq!(annotation(&d, marks::HELD_BY), None);
    spoke.stop().await;
    hub.stop().await;
}
