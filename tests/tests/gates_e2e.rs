//! Gate objects end to end with real processes (PostgreSQL, `fleetgate-hub`,
//! `fleetgate-sim`, `fleetgate-spoke`) and the real kubectl: the spoke mirrors
//! the hub's gate into a Gate object; a close request by `kubectl annotate`
//! holds the Kustomization at once and the hub records it as an audited
//! override from that cluster (actor = the field manager @ the cluster); an
//! admin cancelling it at the hub reopens the gate; with the hub SIGKILLed a
//! close request still applies at once, and after the hub restarts the spoke
//! reports it, the hub records and audits it and the cluster's status lists
//! it with the Kubernetes user; a disallowed open request changes nothing and
//! reaches nobody. A hub with `--local-gates enforce`: a Gate committed to the
//! cluster holds its Kustomization beside the hub's open gate, and the hub
//! shows it as a local gate closing the cluster.

use std::{
    path::Path,
    process::{Command, Stdio},
    time::Duration,
};

use chrono::{SecondsFormat, Utc};
use fleetgate_tests::{ChildGuard, bin_path, free_port, poll, start_sim, test_db};
use futures::StreamExt;
use kube::{
    Api,
    api::{DynamicObject, PostParams},
    core::{ApiResource, GroupVersionKind},
    runtime::watcher,
};
use serde_json::{Value, json};

const ADMIN: &str = "fga_gates-e2e-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const WAIT: Duration = Duration::from_secs(60);

async fn get(http: &reqwest::Client, base: &str, path: &str) -> Option<Value> {
    let r = http
        .get(format!("{base}/api/v1{path}"))
        .bearer_auth(ADMIN)
        .send()
        .await
        .ok()?;
    r.status().is_success().then_some(())?;
    r.json().await.ok()
}

fn resource(group: &str, version: &str, kind: &str) -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk(group, version, kind))
}

async fn wait_obj(
    api: Api<DynamicObject>,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    let fut = async {
        let mut s = std::pin::pin!(watcher::watch_object(api, name).boxed());
        while let Some(ev) = s.next().await {
            if let Ok(Some(o)) = ev
                && pred(&o)
            {
                return o;
            }
        }
        panic!("watch ended: {what}");
    };
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out: {name} {what}"))
}

fn suspended(o: &DynamicObject) -> bool {
    o.data["spec"]["suspend"].as_bool().unwrap_or(false)
}

fn opened(o: &DynamicObject) -> Option<(String, String)> {
    let c = o.data["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Opened")?;
    Some((c["status"].as_str()?.into(), c["reason"].as_str()?.into()))
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

fn now_z() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn start_hub(db_url: &str, http: u16, grpc: u16) -> ChildGuard {
    start_hub_with(db_url, http, grpc, "ignore")
}

fn start_hub_with(db_url: &str, http: u16, grpc: u16, local_gates: &str) -> ChildGuard {
    ChildGuard(
        Command::new(bin_path("fleetgate-hub"))
            .arg("serve")
            .env("FLEETGATE_LOCAL_GATES", local_gates)
            .args(["--database-url", db_url])
            .args(["--http-addr", &format!("127.0.0.1:{http}")])
            .args(["--grpc-addr", &format!("127.0.0.1:{grpc}")])
            .env("FLEETGATE_ADMIN_TOKEN", ADMIN)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .spawn()
            .expect("starting fleetgate-hub"),
    )
}

/// The overrides of gate `release` recorded from the cluster.
async fn local_overrides(http: &reqwest::Client, base: &str) -> Vec<Value> {
    get(http, base, "/overrides?gate=release&all=true")
        .await
        .and_then(|v| v["items"].as_array().cloned())
        .unwrap_or_default()
        .into_iter()
        .filter(|o| {
            o["actor"]
                .as_str()
                .is_some_and(|a| a.ends_with(&format!("@cluster/{CLUSTER}")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_requests_on_mirrored_gates_reach_the_hub_audit() {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(dir.path()).await;
    // The simulator has flux-system; the spoke needs its own namespace.
    sim.create_namespaces(&["fleetgate-system"]).await;
    let (kubeconfig, client) = (sim.kubeconfig.clone(), sim.client().await);
    let create = |group: &str, version: &str, kind: &str, obj: Value| {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), NS, &resource(group, version, kind));
        async move {
            api.create(
                &PostParams::default(),
                &serde_json::from_value(obj).unwrap(),
            )
            .await
            .unwrap()
        }
    };
    create(
        "source.toolkit.fluxcd.io",
        "v1",
        "GitRepository",
        json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": NS},
        "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
    )
    .await;
    create(
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "Kustomization",
        json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": NS},
        "spec": {"interval": "1m", "path": "./", "prune": true,
                 "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
    )
    .await;
    let ks: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &resource("kustomize.toolkit.fluxcd.io", "v1", "Kustomization"),
    );
    let gates: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("fleetgate.io", "v1", "Gate"));

    let (hub_http, hub_grpc) = (free_port(), free_port());
    let hub = start_hub(&db.url, hub_http, hub_grpc);
    let base = format!("http://127.0.0.1:{hub_http}");
    let http = reqwest::Client::new();
    poll("hub ready", || async {
        http.get(format!("{base}/readyz"))
            .send()
            .await
            .ok()?
            .status()
            .is_success()
            .then_some(())
    })
    .await;
    let send = |method: reqwest::Method, path: &str, body: Value| {
        http.request(method, format!("{base}/api/v1{path}"))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
    };
    let r = send(reqwest::Method::POST, "/clusters", json!({"name": CLUSTER}))
        .await
        .unwrap();
    assert!(r.status().is_success());
    let token = r.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = send(
        reqwest::Method::POST,
        "/gates",
        json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "release"},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"]},
                 "default": "open", "window": "2h"}}),
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());

    let _spoke = ChildGuard(
        Command::new(bin_path("fleetgate-spoke"))
            .args(["--cluster", CLUSTER])
            .args(["--hub-url", &format!("http://127.0.0.1:{hub_grpc}")])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", "fleetgate-system"])
            .args(["--http-addr", &format!("127.0.0.1:{}", free_port())])
            .args([
                "--report-debounce",
                "200ms",
                "--reconnect-max",
                "1s",
                "--heartbeat-interval",
                "2s",
            ])
            .env("FLEETGATE_SPOKE_TOKEN", &token)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    wait_obj(gates.clone(), "release", "mirrored, open", |o| {
        opened(o).is_some_and(|(s, _)| s == "True")
    })
    .await;

    // Online: a close request from kubectl, applied at once, recorded at the hub.
    kubectl(
        &kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "--field-manager=alice",
            "gate/release",
            &format!("close.gate.fleetgate.io/requestedAt={}", now_z()),
            "close.gate.fleetgate.io/reason=incident 7",
        ],
    );
    wait_obj(ks.clone(), "apps", "held by the close request", suspended).await;
    let recorded = poll("hub recorded the close request", || async {
        local_overrides(&http, &base)
            .await
            .into_iter()
            .find(|o| o["state"] == "closed")
    })
    .await;
    assert_eq!(recorded["actor"], format!("alice@cluster/{CLUSTER}"));
    assert_eq!(recorded["reason"], "incident 7");
    assert_eq!(recorded["clusters"]["names"], json!([CLUSTER]));
    let audit = get(&http, &base, "/audit").await.unwrap();
    let entry = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["actor"] == format!("alice@cluster/{CLUSTER}"))
        .cloned()
        .expect("audit entry of the request");
    assert_eq!(entry["action"], "override.close");
    assert!(
        entry["reason"]
            .as_str()
            .unwrap()
            .contains("requested in cluster cluster-000"),
        "{entry}"
    );
    wait_obj(gates.clone(), "release", "acknowledged", |o| {
        o.data["status"]["closeRequest"]["acknowledged"] == true
    })
    .await;

    // An admin cancels it at the hub: the gate opens again on the cluster.
    let id = recorded["id"].as_str().unwrap();
    let r = send(
        reqwest::Method::DELETE,
        &format!("/overrides/{id}"),
        Value::Null,
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{}", r.status());
    wait_obj(ks.clone(), "apps", "resumed after the cancel", |o| {
        !suspended(o)
    })
    .await;
    let g = wait_obj(gates.clone(), "release", "request cancelled", |o| {
        o.data["status"]["closeRequest"]["cancelled"] == true
    })
    .await;
    assert_eq!(opened(&g).map(|o| o.0), Some("True".into()));

    // A disallowed open request (hub gates: opening is the hub's) changes nothing.
    kubectl(
        &kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "gate/release",
            &format!("open.gate.fleetgate.io/requestedAt={}", now_z()),
        ],
    );
    wait_obj(gates.clone(), "release", "open request refused", |o| {
        o.data["status"]["openRequest"]["accepted"] == false
    })
    .await;

    // The hub SIGKILLed: a close request still applies at once.
    drop(hub);
    // Stamped 2 s ahead (within the clock skew a request may be ahead of the
    // spoke): a later second than the first request without waiting for one.
    let later =
        (Utc::now() + chrono::Duration::seconds(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    kubectl(
        &kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "--field-manager=bob",
            "gate/release",
            &format!("close.gate.fleetgate.io/requestedAt={later}"),
            "close.gate.fleetgate.io/reason=hub down",
        ],
    );
    wait_obj(ks.clone(), "apps", "held offline", suspended).await;

    // The hub back on the same database: the spoke reports the request.
    let _hub = start_hub(&db.url, hub_http, hub_grpc);
    let offline = poll("hub recorded the offline request", || async {
        local_overrides(&http, &base)
            .await
            .into_iter()
            .find(|o| o["actor"] == format!("bob@cluster/{CLUSTER}"))
    })
    .await;
    assert_eq!(
        (offline["state"].as_str(), offline["reason"].as_str()),
        (Some("closed"), Some("hub down"))
    );
    assert!(offline["cancelledAt"].is_null());
    assert_eq!(offline["requestedIn"], CLUSTER);
    assert_eq!(offline["requestedBy"], "bob");
    // Audited, and listed on the cluster's status (what the dashboard's
    // cluster page and `fleetgate status` show).
    let audit = get(&http, &base, "/audit").await.unwrap();
    let entry = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["actor"] == format!("bob@cluster/{CLUSTER}"))
        .cloned()
        .expect("audit entry of the offline request");
    assert_eq!(entry["action"], "override.close");
    let status = get(&http, &base, &format!("/clusters/{CLUSTER}/status"))
        .await
        .unwrap();
    let listed: Vec<&Value> = status["localRequests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["requestedBy"] == "bob")
        .collect();
    assert_eq!(listed.len(), 1, "{status}");
    assert_eq!(listed[0]["id"], offline["id"]);
    assert!(
        local_overrides(&http, &base)
            .await
            .iter()
            .all(|o| o["state"] == "closed"),
        "the refused open request never reached the hub"
    );
    let ks_now = ks.get("apps").await.unwrap();
    assert!(suspended(&ks_now));
    sim.child.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_gate_coexists_with_the_hubs_when_the_hub_enforces_local_gates() {
    let db = test_db().await;
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(dir.path()).await;
    sim.create_namespaces(&["fleetgate-system"]).await;
    let (kubeconfig, client) = (sim.kubeconfig.clone(), sim.client().await);
    let ks: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &resource("kustomize.toolkit.fluxcd.io", "v1", "Kustomization"),
    );
    for (group, kind, spec) in [
        (
            "source.toolkit.fluxcd.io",
            "GitRepository",
            json!({"interval": "1m", "url": "https://example.com/repo.git"}),
        ),
        (
            "kustomize.toolkit.fluxcd.io",
            "Kustomization",
            json!({"interval": "1m", "path": "./", "prune": true,
            "sourceRef": {"kind": "GitRepository", "name": "repo"}}),
        ),
    ] {
        let name = if kind == "GitRepository" {
            "repo"
        } else {
            "apps"
        };
        let obj = json!({"apiVersion": format!("{group}/v1"), "kind": kind,
            "metadata": {"name": name, "namespace": NS}, "spec": spec});
        Api::<DynamicObject>::namespaced_with(client.clone(), NS, &resource(group, "v1", kind))
            .create(
                &PostParams::default(),
                &serde_json::from_value(obj).unwrap(),
            )
            .await
            .unwrap();
    }
    let gates: Api<DynamicObject> =
        Api::all_with(client.clone(), &resource("fleetgate.io", "v1", "Gate"));

    let (hub_http, hub_grpc) = (free_port(), free_port());
    let _hub = start_hub_with(&db.url, hub_http, hub_grpc, "enforce");
    let base = format!("http://127.0.0.1:{hub_http}");
    let http = reqwest::Client::new();
    poll("hub ready", || async {
        let r = http.get(format!("{base}/readyz")).send().await.ok()?;
        r.status().is_success().then_some(())
    })
    .await;
    let post = |path: &str, body: Value| {
        http.post(format!("{base}/api/v1{path}"))
            .bearer_auth(ADMIN)
            .json(&body)
            .send()
    };
    let r = post("/clusters", json!({"name": CLUSTER})).await.unwrap();
    let token = r.json::<Value>().await.unwrap()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let r = post(
        "/gates",
        json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "release"},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"]},
                 "default": "open"}}),
    )
    .await
    .unwrap();
    assert!(r.status().is_success(), "{}", r.text().await.unwrap());
    let _spoke = ChildGuard(
        Command::new(bin_path("fleetgate-spoke"))
            .args(["--cluster", CLUSTER])
            .args(["--hub-url", &format!("http://127.0.0.1:{hub_grpc}")])
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--namespace", "fleetgate-system"])
            .args(["--http-addr", &format!("127.0.0.1:{}", free_port())])
            .args(["--report-debounce", "200ms", "--heartbeat-interval", "2s"])
            .env("FLEETGATE_SPOKE_TOKEN", &token)
            .env("RUST_LOG", "info")
            .stdout(Stdio::null())
            .spawn()
            .expect("starting fleetgate-spoke"),
    );
    wait_obj(gates.clone(), "release", "mirrored, open", |o| {
        opened(o).is_some_and(|(s, _)| s == "True")
    })
    .await;

    // A Gate committed to the cluster (what Flux applies from Git).
    let manifest = dir.path().join("git-freeze.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: git-freeze}\nspec:\n  clusters: {selector: {}}\n  targets: {kinds: [Kustomization], names: [apps]}\n  default: closed\n",
    )
    .unwrap();
    kubectl(&kubeconfig, &["apply", "-f", manifest.to_str().unwrap()]);
    let g = wait_obj(gates.clone(), "git-freeze", "enforced, closed", |o| {
        opened(o).is_some_and(|(s, _)| s == "False")
    })
    .await;
    assert!(
        g.metadata
            .labels
            .as_ref()
            .is_none_or(|l| !l.contains_key("fleetgate.io/origin"))
    );
    wait_obj(ks.clone(), "apps", "held by the local gate", suspended).await;

    // The hub shows it read-only as a local gate closing the cluster; its own
    // gate stays open. The spoke counts a gate's objects from its own latest
    // report, so the first report naming the gate may still count none: wait
    // for the one counting the held object.
    let status = poll("the hub shows the local gate governing apps", || async {
        get(&http, &base, &format!("/clusters/{CLUSTER}/status"))
            .await
            .filter(|s| {
                s["localGates"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|g| g["governed"] != 0))
            })
    })
    .await;
    let local = &status["localGates"][0];
    assert_eq!(
        (
            &local["name"],
            &local["enforced"],
            &local["state"],
            &local["governed"]
        ),
        (
            &json!("git-freeze"),
            &json!(true),
            &json!("closed"),
            &json!(1)
        ),
        "{status}"
    );
    assert_eq!(status["gates"][0]["state"], "open", "{status}");
    assert_eq!(status["closedBy"], json!(["git-freeze"]), "{status}");
    sim.child.terminate();
}
