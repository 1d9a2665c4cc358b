//! Object-level holds end to end with real processes (PostgreSQL,
//! `fleetgate-hub`, `fleetgate-sim`, `fleetgate-spoke`) and the real kubectl:
//! the seeds' nginx app in ONE Kustomization behind a hub `holdObjects` gate.
//! Closed through the hub's REST API, the spoke marks the Deployment and the
//! Service; a new revision changes the ConfigMap at once while the Deployment
//! keeps its old image, and the hub's REST status lists the held objects with
//! changes waiting; opening releases them and the new image rolls out.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use fleetgate_tests::objects::Gvk;
use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, dynamic_api, free_port, hub_serve, kubectl, nginx_app, poll,
    spoke_connect, start_sim, test_db, watch_until,
};
use kube::Client;
use kube::api::{DynamicObject, PostParams};
use serde_json::{Value, json};

const ADMIN: &str = "fga_hold-e2e-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const GATE: &str = "nginx-window";

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

/// What a person types to see the running image and the held mark.
fn image(kubeconfig: &Path) -> String {
    kubectl(
        kubeconfig,
        &[
            "-n",
            "nginx",
            "get",
            "deployment",
            "nginx",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
    )
}

fn annotation(kubeconfig: &Path, kind: &str, name: &str, key: &str) -> String {
    let path = format!(
        "jsonpath={{.metadata.annotations.{}}}",
        key.replace('.', "\\.")
    );
    kubectl(kubeconfig, &["-n", "nginx", "get", kind, name, "-o", &path])
}

fn config_color(kubeconfig: &Path) -> String {
    kubectl(
        kubeconfig,
        &[
            "-n",
            "nginx",
            "get",
            "configmap",
            "nginx-config",
            "-o",
            "jsonpath={.data.color}",
        ],
    )
}

const DEPLOYMENT: Gvk = ("apps", "v1", "Deployment");
const SERVICE: Gvk = ("", "v1", "Service");

/// Watches `ns/name` until `pred` holds (60 s at most).
async fn wait_for(
    client: &Client,
    gvk: Gvk<'_>,
    ns: &str,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    watch_until(
        dynamic_api(client, gvk, ns),
        name,
        what,
        Duration::from_secs(60),
        pred,
    )
    .await
}

fn str_at<'a>(o: &'a DynamicObject, ptr: &str) -> Option<&'a str> {
    o.data.pointer(ptr).and_then(Value::as_str)
}

/// fleetgate's hold on `o`: Flux's opt-out plus the marker naming the gate.
fn marked(o: &DynamicObject) -> bool {
    let a = o.metadata.annotations.clone().unwrap_or_default();
    a.get("kustomize.toolkit.fluxcd.io/reconcile")
        .map(String::as_str)
        == Some("disabled")
        && a.get("fleetgate.io/held-by").map(String::as_str) == Some(GATE)
}

async fn create(client: &Client, group: &str, kind: &str, obj: Value) {
    dynamic_api(client, (group, "v1", kind), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("creating {kind}: {e}"));
}

/// The held-object entry of the nginx `kind` in a cluster status.
fn held<'a>(status: &'a Value, kind: &str) -> Option<&'a Value> {
    status["heldObjects"]
        .as_array()?
        .iter()
        .find(|o| o["kind"] == kind && o["name"] == "nginx")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nginx_deployment_waits_for_the_hub_gate_while_its_configmap_changes_at_once() {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(dir.path()).await;
    let (kubeconfig, client) = (sim.kubeconfig.clone(), sim.client().await);
    kubectl(&kubeconfig, &["create", "namespace", "fleetgate-system"]);
    create(
        &client,
        "source.toolkit.fluxcd.io",
        "GitRepository",
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "repo", "namespace": NS},
            "spec": {"interval": "1m", "url": "https://example.com/repo.git"}
        }),
    )
    .await;
    create(
        &client,
        "kustomize.toolkit.fluxcd.io",
        "Kustomization",
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": NS},
            "spec": {"interval": "1m", "path": "./apps", "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "repo"}}
        }),
    )
    .await;
    let http = reqwest::Client::new();
    let push = |n: u32, image: &str, color: &str| {
        let body = json!({
            "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(n),
            "manifests": {"apps": nginx_app(image, color)},
        });
        let (http, url) = (http.clone(), format!("{}/sim/v1/push", sim.url));
        async move {
            let r = http.post(url).json(&body).send().await.unwrap();
            assert!(r.status().is_success(), "push: {}", r.status());
        }
    };
    let applied = |n: u32| {
        let client = client.clone();
        async move {
            let want = rev(n);
            wait_for(
                &client,
                KUSTOMIZATION,
                NS,
                "apps",
                "revision applied",
                |o| str_at(o, "/status/lastAppliedRevision") == Some(want.as_str()),
            )
            .await;
        }
    };
    push(1, "nginx:1.25", "blue").await;
    applied(1).await;
    assert_eq!(image(&kubeconfig), "nginx:1.25");

    // The hub with the gate (open by default), the cluster registered.
    let (hub_http, hub_grpc) = (free_port(), free_port());
    let base = format!("http://127.0.0.1:{hub_http}");
    let rest = Rest::new(base.clone(), ADMIN);
    let _hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    rest.wait_ready().await;
    let token = rest.register(CLUSTER, json!({"env": "prod"})).await;
    rest.ok(
        reqwest::Method::POST,
        "/gates",
        Some(json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
            "spec": {
                "clusters": {"selector": {"matchLabels": {"env": "prod"}}},
                "mode": "holdObjects",
                "targets": {"kinds": ["Kustomization"], "namespaces": [NS], "names": ["apps"]},
                "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}, {"group": "", "kind": "Service"}],
                            "namespaces": ["nginx"]},
                "default": "open"
            }
        })),
    )
    .await;

    // The spoke, with the kinds of deploy/spoke/components/hold-objects.
    let spoke_http = free_port();
    let _spoke = ChildGuard(
        spoke_connect(CLUSTER, hub_grpc, &kubeconfig, &token, spoke_http)
            .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
            .args(["--held-kinds", "apps/v1/Deployment,v1/Service"])
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    let status_path = format!("/clusters/{CLUSTER}/status");
    poll(
        "the selected objects reported, not held (gate open)",
        || async {
            let s = rest.get(&status_path).await?;
            (held(&s, "Deployment")?["held"] == false && held(&s, "Service").is_some())
                .then_some(())
        },
    )
    .await;

    // Close through the hub: the Deployment and the Service are marked.
    let closed = rest
        .ok(
            reqwest::Method::POST,
            &format!("/gates/{GATE}/close"),
            Some(json!({"reason": "e2e: outside the window"})),
        )
        .await;
    let override_id = closed["id"].as_str().expect("override id").to_owned();
    for gvk in [DEPLOYMENT, SERVICE] {
        wait_for(&client, gvk, "nginx", "nginx", "marked", marked).await;
    }
    // What a person sees with kubectl.
    assert_eq!(
        annotation(
            &kubeconfig,
            "deployment",
            "nginx",
            "kustomize.toolkit.fluxcd.io/reconcile"
        ),
        "disabled"
    );

    // A commit changes the config and the image: the ConfigMap follows at
    // once, the Deployment keeps its image, the Kustomization is not suspended.
    push(2, "nginx:1.27", "green").await;
    applied(2).await;
    assert_eq!(config_color(&kubeconfig), "green");
    assert_eq!(image(&kubeconfig), "nginx:1.25", "held while closed");
    let suspend = kubectl(
        &kubeconfig,
        &[
            "-n",
            NS,
            "get",
            "kustomization",
            "apps",
            "-o",
            "jsonpath={.spec.suspend}",
        ],
    );
    assert_ne!(
        suspend, "true",
        "holdObjects never suspends the Kustomization"
    );
    // The hub shows the held objects, with changes waiting.
    let s = poll(
        "hub lists the held Deployment with changes waiting",
        || async {
            let s = rest.get(&status_path).await?;
            (held(&s, "Deployment")?["newerRevisionApplied"] == true).then_some(s)
        },
    )
    .await;
    let d = held(&s, "Deployment").unwrap();
    assert_eq!(d["held"], true, "{s}");
    assert_eq!(d["group"], "apps", "{s}");
    assert_eq!(d["namespace"], "nginx", "{s}");
    assert_eq!(d["heldBy"], json!([GATE]), "{s}");
    assert_eq!(d["kustomizationNamespace"], NS, "{s}");
    assert_eq!(d["kustomizationName"], "apps", "{s}");
    assert_eq!(d["heldSinceRevision"], rev(1), "{s}");
    assert_eq!(s["counts"]["heldObjects"], 2, "{s}");
    assert!(s["counts"]["heldObjectsWaiting"].as_i64() >= Some(1), "{s}");
    assert_eq!(s["gates"][0]["heldObjects"], 2, "{s}");
    let fleet = rest.get("/status").await.expect("fleet summary");
    assert_eq!(fleet["objects"]["heldObjects"], 2, "{fleet}");
    assert_eq!(fleet["clusters"]["withHeldObjects"], 1, "{fleet}");

    // Open (cancel the close): released, and the new image rolls out.
    rest.ok(
        reqwest::Method::DELETE,
        &format!("/overrides/{override_id}?reason=window"),
        None,
    )
    .await;
    let d = wait_for(&client, DEPLOYMENT, "nginx", "nginx", "new image", |o| {
        str_at(o, "/spec/template/spec/containers/0/image") == Some("nginx:1.27")
    })
    .await;
    assert!(!marked(&d), "released");
    assert_eq!(image(&kubeconfig), "nginx:1.27");
    assert_eq!(
        annotation(&kubeconfig, "deployment", "nginx", "fleetgate.io/held-by"),
        "",
        "fleetgate's mark removed"
    );
    poll("hub shows nothing held", || async {
        let s = rest.get(&status_path).await?;
        (s["counts"]["heldObjects"] == 0 && held(&s, "Deployment")?["held"] == false).then_some(())
    })
    .await;
    sim.child.terminate();
}
