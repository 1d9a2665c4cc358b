//! Object-level holds end to end with real processes (PostgreSQL,
//! `fleetgate-hub`, `fleetgate-sim`, `fleetgate-spoke`) and the real kubectl:
//! the seeds' nginx app in ONE Kustomization behind a hub `holdObjects` gate.
//! Closed through the hub's REST API, the spoke marks the Deployment and the
//! Service; a new revision changes the ConfigMap at once while the Deployment
//! keeps its old image, and the hub's REST status lists the held objects with
//! changes waiting; opening releases them and the new image rolls out.

use std::{
    path::Path,
    process::{Command, Stdio},
};

use fleetgate_tests::{ChildGuard, bin_path, free_port, hub_serve, poll, start_sim, test_db};
use futures::StreamExt;
use kube::{
    Api, Client,
    api::{DynamicObject, PostParams},
    core::{ApiResource, GroupVersionKind},
    runtime::watcher,
};
use serde_json::{Value, json};

const ADMIN: &str = "fga_hold-e2e-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const GATE: &str = "nginx-window";

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

/// The seeds' nginx app: ConfigMap, Deployment and Service in one folder.
fn nginx(image: &str, color: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: nginx}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: nginx-config, namespace: nginx}}
data: {{color: {color}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: nginx, namespace: nginx}}
spec:
  replicas: 1
  template: {{spec: {{containers: [{{name: nginx, image: "{image}"}}]}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: nginx, namespace: nginx}}
spec: {{ports: [{{port: 80}}]}}
"#
    )
}

fn kubectl(kubeconfig: &Path, args: &[&str]) -> String {
    let out = Command::new("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "kubectl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
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

fn api(client: &Client, gvk: (&str, &str, &str), ns: &str) -> Api<DynamicObject> {
    let (group, version, kind) = gvk;
    Api::namespaced_with(
        client.clone(),
        ns,
        &ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind)),
    )
}

const KUSTOMIZATION: (&str, &str, &str) = ("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
const DEPLOYMENT: (&str, &str, &str) = ("apps", "v1", "Deployment");
const SERVICE: (&str, &str, &str) = ("", "v1", "Service");

/// Watches `ns/name` until `pred` holds (60 s at most).
async fn wait_for(
    client: &Client,
    gvk: (&str, &str, &str),
    ns: &str,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let fut = async {
        let mut s = std::pin::pin!(watcher::watch_object(api(client, gvk, ns), name).boxed());
        while let Some(ev) = s.next().await {
            if let Ok(Some(o)) = ev
                && pred(&o)
            {
                return o;
            }
        }
        panic!("watch ended: {what}");
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {name} {what}"))
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
    api(client, (group, "v1", kind), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await
        .unwrap_or_else(|e| panic!("creating {kind}: {e}"));
}

/// `GET /api/v1{path}` as the admin; `None` unless 2xx.
async fn get(http: &reqwest::Client, base: &str, path: &str) -> Option<Value> {
    let r = http
        .get(format!("{base}/api/v1{path}"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .ok()?;
    if !r.status().is_success() {
        return None;
    }
    r.json().await.ok()
}

async fn send(http: &reqwest::Client, method: reqwest::Method, url: String, body: Value) -> Value {
    let r = http
        .request(method.clone(), &url)
        .bearer_auth(ADMIN)
        .json(&body)
        .send()
        .await
        .expect("reachable");
    let status = r.status();
    let text = r.text().await.unwrap_or_default();
    assert!(status.is_success(), "{method} {url}: {status} {text}");
    serde_json::from_str(&text).unwrap_or(Value::Null)
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
            "manifests": {"apps": nginx(image, color)},
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
    let _hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    poll("hub ready", || async {
        let r = http.get(format!("{base}/readyz")).send().await.ok()?;
        r.status().is_success().then_some(())
    })
    .await;
    let registered = send(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/v1/clusters"),
        json!({"name": CLUSTER, "labels": {"env": "prod"}}),
    )
    .await;
    let token = registered["token"]
        .as_str()
        .expect("spoke token")
        .to_owned();
    send(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/v1/gates"),
        json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
            "spec": {
                "clusters": {"selector": {"matchLabels": {"env": "prod"}}},
                "mode": "holdObjects",
                "targets": {"kinds": ["Kustomization"], "namespaces": [NS], "names": ["apps"]},
                "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}, {"group": "", "kind": "Service"}],
                            "namespaces": ["nginx"]},
                "default": "open"
            }
        }),
    )
    .await;

    // The spoke, with the kinds of deploy/spoke/components/hold-objects.
    let spoke_http = free_port();
    let _spoke = ChildGuard(
        Command::new(bin_path("fleetgate-spoke"))
            .args(["--cluster", CLUSTER])
            .args(["--hub-url", &format!("http://127.0.0.1:{hub_grpc}")])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", "fleetgate-system"])
            .args(["--http-addr", &format!("127.0.0.1:{spoke_http}")])
            .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
            .args(["--held-kinds", "apps/v1/Deployment,v1/Service"])
            .env("FLEETGATE_SPOKE_TOKEN", &token)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    let status_path = format!("/clusters/{CLUSTER}/status");
    poll(
        "the selected objects reported, not held (gate open)",
        || async {
            let s = get(&http, &base, &status_path).await?;
            (held(&s, "Deployment")?["held"] == false && held(&s, "Service").is_some())
                .then_some(())
        },
    )
    .await;

    // Close through the hub: the Deployment and the Service are marked.
    let closed = send(
        &http,
        reqwest::Method::POST,
        format!("{base}/api/v1/gates/{GATE}/close"),
        json!({"reason": "e2e: outside the window"}),
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
            let s = get(&http, &base, &status_path).await?;
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
    let fleet = get(&http, &base, "/status").await.expect("fleet summary");
    assert_eq!(fleet["objects"]["heldObjects"], 2, "{fleet}");
    assert_eq!(fleet["clusters"]["withHeldObjects"], 1, "{fleet}");

    // Open (cancel the close): released, and the new image rolls out.
    let r = http
        .delete(format!(
            "{base}/api/v1/overrides/{override_id}?reason=window"
        ))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert!(r.status().is_success(), "cancel: {}", r.status());
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
        let s = get(&http, &base, &status_path).await?;
        (s["counts"]["heldObjects"] == 0 && held(&s, "Deployment")?["held"] == false).then_some(())
    })
    .await;
    sim.child.terminate();
}
