//! Warn mode for `holdObjects` gates end to end with real processes
//! (PostgreSQL, `fleetgate-hub`, `fleetgate-sim`, `fleetgate-spoke`): the
//! seeds' nginx app in one Kustomization behind a closed hub gate in
//! `enforcement: warn`. The spoke marks nothing — a new revision rolls the new
//! image out at once — while the hub's REST status lists per object that the
//! gate WOULD hold it (and that a newer revision would be held), with counts
//! per cluster, per gate and fleet-wide. Replacing the gate with
//! `enforcement: enforce` then holds exactly the objects it reported.

use std::{collections::BTreeSet, process::Stdio, time::Duration};

use fleetgate_tests::{ChildGuard, bin_path, free_port, hub_serve, poll, start_sim, test_db};
use k8s_openapi::api::events::v1::Event;
use kube::{
    Api, Client,
    api::{DynamicObject, ListParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::{Value, json};

const ADMIN: &str = "fga_warn-hold-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const GATE: &str = "nginx-try";
const WAIT: Duration = Duration::from_secs(60);

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

/// The nginx app: ConfigMap, Deployment and Service in one folder.
fn nginx(image: &str) -> String {
    format!(
        r#"apiVersion: v1
kind: Namespace
metadata: {{name: nginx}}
---
apiVersion: v1
kind: ConfigMap
metadata: {{name: nginx-config, namespace: nginx}}
data: {{image: "{image}"}}
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

/// The gate, a holdObjects gate closed by default, in `enforcement`.
fn gate(enforcement: &str) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": GATE},
        "spec": {
            "enforcement": enforcement,
            "clusters": {"names": [CLUSTER]},
            "mode": "holdObjects",
            "targets": {"kinds": ["Kustomization"], "namespaces": [NS], "names": ["apps"]},
            "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}, {"group": "", "kind": "Service"}],
                        "namespaces": ["nginx"]},
            "default": "closed"
        }
    })
}

fn api(
    client: &Client,
    (group, version, kind): (&str, &str, &str),
    ns: &str,
) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind));
    Api::namespaced_with(client.clone(), ns, &ar)
}

const KUSTOMIZATION: (&str, &str, &str) = ("kustomize.toolkit.fluxcd.io", "v1", "Kustomization");
const DEPLOYMENT: (&str, &str, &str) = ("apps", "v1", "Deployment");
const SERVICE: (&str, &str, &str) = ("", "v1", "Service");

/// fleetgate's hold on an object: Flux's opt-out and the marker.
fn marked(o: &DynamicObject) -> bool {
    let a = o.metadata.annotations.clone().unwrap_or_default();
    a.contains_key("kustomize.toolkit.fluxcd.io/reconcile")
        || a.contains_key("fleetgate.io/held-by")
}

struct Rest {
    http: reqwest::Client,
    base: String,
}

impl Rest {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}/api/v1{path}", self.base))
            .bearer_auth(ADMIN);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("hub reachable");
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap_or_default();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn ok(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let (status, v) = self.send(method.clone(), path, body).await;
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {v}"
        );
        v
    }
}

/// `kind/name` of the held objects `pick` chooses from a cluster status.
fn objects(status: &Value, pick: impl Fn(&Value) -> bool) -> BTreeSet<String> {
    status["heldObjects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| pick(o))
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn names_gate(list: &Value) -> bool {
    list.as_array().is_some_and(|g| g == &[json!(GATE)])
}

fn gate_status(status: &Value) -> &Value {
    status["gates"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["gate"] == GATE))
        .unwrap_or_else(|| panic!("{GATE} in {status}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warn_hold_objects_gate_marks_nothing_and_reports_what_enforce_then_holds() {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(dir.path()).await;
    let client = sim.client().await;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "fleetgate-system"}}))
    .unwrap();
    namespaces
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    for (gvk, obj) in [
        (
            ("source.toolkit.fluxcd.io", "v1", "GitRepository"),
            json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                   "metadata": {"name": "repo", "namespace": NS},
                   "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
        ),
        (
            KUSTOMIZATION,
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                   "metadata": {"name": "apps", "namespace": NS},
                   "spec": {"interval": "1m", "path": "./apps", "prune": true,
                            "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
        ),
    ] {
        let obj = serde_json::from_value(obj).unwrap();
        api(&client, gvk, NS)
            .create(&PostParams::default(), &obj)
            .await
            .unwrap();
    }
    let http = reqwest::Client::new();
    let push = |n: u32, image: &str| {
        let body = json!({
            "kind": "GitRepository", "namespace": NS, "name": "repo", "revision": rev(n),
            "manifests": {"apps": nginx(image)},
        });
        let (http, url) = (http.clone(), format!("{}/sim/v1/push", sim.url));
        async move {
            let r = http.post(url).json(&body).send().await.unwrap();
            assert!(r.status().is_success(), "push: {}", r.status());
        }
    };
    let image = || async {
        let d = api(&client, DEPLOYMENT, "nginx").get("nginx").await.ok()?;
        d.data
            .pointer("/spec/template/spec/containers/0/image")
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    push(1, "nginx:1.25").await;
    poll("revision 1 applied", || async {
        (image().await.as_deref() == Some("nginx:1.25")).then_some(())
    })
    .await;

    // The hub, the cluster, the gate in warn mode (closed by default).
    let (hub_http, hub_grpc) = (free_port(), free_port());
    let _hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .stderr(Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let rest = Rest {
        http: http.clone(),
        base: format!("http://127.0.0.1:{hub_http}"),
    };
    poll("hub ready", || async {
        let r = http
            .get(format!("{}/readyz", rest.base))
            .send()
            .await
            .ok()?;
        r.status().is_success().then_some(())
    })
    .await;
    let registered = rest
        .ok(
            reqwest::Method::POST,
            "/clusters",
            Some(json!({"name": CLUSTER})),
        )
        .await;
    let token = registered["token"]
        .as_str()
        .expect("spoke token")
        .to_owned();
    rest.ok(reqwest::Method::POST, "/gates", Some(gate("warn")))
        .await;
    let _spoke = ChildGuard(
        std::process::Command::new(bin_path("fleetgate-spoke"))
            .args(["--cluster", CLUSTER])
            .args(["--hub-url", &format!("http://127.0.0.1:{hub_grpc}")])
            .arg("--kubeconfig")
            .arg(&sim.kubeconfig)
            .args(["--namespace", "fleetgate-system"])
            .args(["--http-addr", &format!("127.0.0.1:{}", free_port())])
            .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
            .args(["--held-kinds", "apps/v1/Deployment,v1/Service"])
            .env("FLEETGATE_SPOKE_TOKEN", &token)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    let path = format!("/clusters/{CLUSTER}/status");

    // The warn gate would hold the Deployment and the Service; nothing is held.
    let s = poll("would-hold objects reported", || async {
        let (_, s) = rest.send(reqwest::Method::GET, &path, None).await;
        (s["counts"]["wouldHoldObjects"] == 2).then_some(s)
    })
    .await;
    let would = objects(&s, |o| names_gate(&o["wouldHoldBy"]));
    assert_eq!(
        would,
        BTreeSet::from(["Deployment/nginx".to_owned(), "Service/nginx".to_owned()]),
        "{s}"
    );
    assert!(objects(&s, |o| o["held"] == true).is_empty(), "{s}");
    let d = &s["heldObjects"].as_array().unwrap()[0];
    assert_eq!(
        (&d["heldBy"], &d["wouldHoldSinceRevision"]),
        (&json!([]), &json!(rev(1))),
        "{d}"
    );
    assert_eq!(s["counts"]["heldObjects"], 0, "{s}");
    assert_eq!(s["closedBy"], json!([]), "a warn gate closes nothing: {s}");
    assert_eq!(s["wouldCloseBy"], json!([GATE]), "{s}");
    let g = gate_status(&s);
    assert_eq!(
        (
            &g["state"],
            &g["enforcement"],
            &g["heldObjects"],
            &g["wouldHoldObjects"]
        ),
        (&json!("closed"), &json!("warn"), &json!(0), &json!(2)),
        "{g}"
    );
    let fleet = rest.ok(reqwest::Method::GET, "/status", None).await;
    assert_eq!(fleet["objects"]["wouldHoldObjects"], 2, "{fleet}");
    assert_eq!(fleet["objects"]["heldObjects"], 0, "{fleet}");
    let summary = fleet["gates"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["gate"] == GATE);
    assert_eq!(summary.unwrap()["wouldHoldObjects"], 2, "{fleet}");

    // A commit changes the image: it rolls out at once (nothing is held), and
    // the hub says that enforced, this change would wait.
    push(2, "nginx:1.27").await;
    poll("revision 2 rolled out", || async {
        (image().await.as_deref() == Some("nginx:1.27")).then_some(())
    })
    .await;
    let s = poll("a newer revision would be held", || async {
        let (_, s) = rest.send(reqwest::Method::GET, &path, None).await;
        (s["counts"]["wouldHoldObjectsWaiting"] == 2).then_some(s)
    })
    .await;
    for o in s["heldObjects"].as_array().unwrap() {
        assert_eq!(
            (
                &o["wouldHoldNewerRevision"],
                &o["wouldHoldSinceRevision"],
                &o["held"]
            ),
            (&json!(true), &json!(rev(1)), &json!(false)),
            "{o}"
        );
    }
    for (gvk, kind) in [(DEPLOYMENT, "Deployment"), (SERVICE, "Service")] {
        let o = api(&client, gvk, "nginx").get("nginx").await.unwrap();
        assert!(
            !marked(&o),
            "a warn gate marked the {kind}: {:?}",
            o.metadata.annotations
        );
    }
    // In the cluster: the mirrored Gate's transition Event says "would".
    let events: Api<Event> = Api::all(client.clone());
    poll("GateWouldClose event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        let reasons: Vec<&str> = list
            .items
            .iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(GATE))
            .filter_map(|e| e.reason.as_deref())
            .collect();
        assert!(!reasons.contains(&"GateClosed"), "{reasons:?}");
        reasons.contains(&"GateWouldClose").then_some(())
    })
    .await;

    // warn → enforce: exactly the reported objects are held.
    rest.ok(
        reqwest::Method::PUT,
        &format!("/gates/{GATE}?reason=enforce"),
        Some(gate("enforce")),
    )
    .await;
    let s = tokio::time::timeout(WAIT, async {
        loop {
            let (_, s) = rest.send(reqwest::Method::GET, &path, None).await;
            if s["counts"]["heldObjects"] == 2 && s["counts"]["wouldHoldObjects"] == 0 {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("enforce holds what warn reported");
    assert_eq!(objects(&s, |o| names_gate(&o["heldBy"])), would, "{s}");
    assert_eq!(gate_status(&s)["heldObjects"], 2, "{s}");
    for gvk in [DEPLOYMENT, SERVICE] {
        let o = api(&client, gvk, "nginx").get("nginx").await.unwrap();
        assert!(marked(&o), "enforced, {:?} is marked", gvk);
    }
    sim.child.terminate();
}
