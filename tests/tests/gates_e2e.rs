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

use std::process::{Command, Stdio};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, SimProcess, TestDb, bin_path, dynamic_api, free_port, kubectl,
    poll, spoke_connect, start_sim, test_db, watch_until,
};
use kube::api::{DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube::{Api, Client};
use serde_json::{Value, json};

const ADMIN: &str = "fga_gates-e2e-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const WAIT: Duration = Duration::from_secs(60);

async fn wait_obj(
    api: Api<DynamicObject>,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    watch_until(api, name, what, WAIT, pred).await
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
async fn local_overrides(rest: &Rest) -> Vec<Value> {
    rest.get("/overrides?gate=release&all=true")
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

/// One simulated cluster with a GitRepository and the `apps` Kustomization, a
/// hub process (`FLEETGATE_LOCAL_GATES=local_gates`) with the cluster
/// registered and an open gate `release` over it (`spec_extra` added to its
/// spec), and a spoke (`spoke_args` added) that has mirrored the gate.
struct Scenario {
    db: TestDb,
    dir: tempfile::TempDir,
    sim: SimProcess,
    kubeconfig: std::path::PathBuf,
    ks: Api<DynamicObject>,
    gates: Api<DynamicObject>,
    hub: Option<ChildGuard>,
    hub_ports: (u16, u16),
    rest: Rest,
    _spoke: ChildGuard,
}

impl Scenario {
    async fn start(local_gates: &str, spec_extra: Value, spoke_args: &[&str]) -> Scenario {
        let db = test_db().await;
        let dir = tempfile::tempdir().unwrap();
        let sim = start_sim(dir.path()).await;
        // The simulator has flux-system; the spoke needs its own namespace.
        sim.create_namespaces(&["fleetgate-system"]).await;
        let (kubeconfig, client) = (sim.kubeconfig.clone(), sim.client().await);
        create(
            &client,
            "source.toolkit.fluxcd.io",
            "GitRepository",
            "repo",
            json!(
            {"interval": "1m", "url": "https://example.com/repo.git"}),
        )
        .await;
        create(
            &client,
            "kustomize.toolkit.fluxcd.io",
            "Kustomization",
            "apps",
            json!(
            {"interval": "1m", "path": "./", "prune": true,
             "sourceRef": {"kind": "GitRepository", "name": "repo"}}),
        )
        .await;
        let ks = dynamic_api(&client, KUSTOMIZATION, NS);
        let gate_kind = GroupVersionKind::gvk("fleetgate.io", "v1", "Gate");
        let gates = Api::all_with(client.clone(), &ApiResource::from_gvk(&gate_kind));

        let hub_ports = (free_port(), free_port());
        let hub = start_hub_with(&db.url, hub_ports.0, hub_ports.1, local_gates);
        let rest = Rest::new(format!("http://127.0.0.1:{}", hub_ports.0), ADMIN);
        rest.wait_ready().await;
        let token = rest.register(CLUSTER, json!({})).await;
        let mut spec = json!({"clusters": {"names": [CLUSTER]},
                              "targets": {"kinds": ["Kustomization"]}, "default": "open"});
        spec.as_object_mut()
            .unwrap()
            .extend(spec_extra.as_object().cloned().unwrap_or_default());
        let gate = json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate",
                          "metadata": {"name": "release"}, "spec": spec});
        rest.ok(reqwest::Method::POST, "/gates", Some(gate)).await;

        let spoke = ChildGuard(
            spoke_connect(CLUSTER, hub_ports.1, &kubeconfig, &token, free_port())
                .args(["--report-debounce", "200ms", "--heartbeat-interval", "2s"])
                .args(spoke_args)
                .env("RUST_LOG", "info")
                .spawn()
                .expect("starting fleetgate-spoke"),
        );
        wait_obj(gates.clone(), "release", "mirrored, open", |o| {
            opened(o).is_some_and(|(s, _)| s == "True")
        })
        .await;
        Scenario {
            db,
            dir,
            sim,
            kubeconfig,
            ks,
            gates,
            hub: Some(hub),
            hub_ports,
            rest,
            _spoke: spoke,
        }
    }
}

/// Creates `kind` `name` in flux-system with `spec`.
async fn create(client: &Client, group: &str, kind: &str, name: &str, spec: Value) {
    let obj = json!({"apiVersion": format!("{group}/v1"), "kind": kind,
                     "metadata": {"name": name, "namespace": NS}, "spec": spec});
    dynamic_api(client, (group, "v1", kind), NS)
        .create(
            &PostParams::default(),
            &serde_json::from_value(obj).unwrap(),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_requests_on_mirrored_gates_reach_the_hub_audit() {
    let mut sc = Scenario::start(
        "ignore",
        json!({"window": "2h"}),
        &["--reconnect-max", "1s"],
    )
    .await;

    // Online: a close request from kubectl, applied at once, recorded at the hub.
    kubectl(
        &sc.kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "--field-manager=alice",
            "gate/release",
            &format!("close.gate.fleetgate.io/requestedAt={}", now_z()),
            "close.gate.fleetgate.io/reason=incident 7",
        ],
    );
    wait_obj(
        sc.ks.clone(),
        "apps",
        "held by the close request",
        suspended,
    )
    .await;
    let recorded = poll("hub recorded the close request", || async {
        local_overrides(&sc.rest)
            .await
            .into_iter()
            .find(|o| o["state"] == "closed")
    })
    .await;
    assert_eq!(recorded["actor"], format!("alice@cluster/{CLUSTER}"));
    assert_eq!(recorded["reason"], "incident 7");
    assert_eq!(recorded["clusters"]["names"], json!([CLUSTER]));
    let audit = sc.rest.get("/audit").await.unwrap();
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
    wait_obj(sc.gates.clone(), "release", "acknowledged", |o| {
        o.data["status"]["closeRequest"]["acknowledged"] == true
    })
    .await;

    // An admin cancels it at the hub: the gate opens again on the cluster.
    let id = recorded["id"].as_str().unwrap();
    sc.rest
        .ok(reqwest::Method::DELETE, &format!("/overrides/{id}"), None)
        .await;
    wait_obj(sc.ks.clone(), "apps", "resumed after the cancel", |o| {
        !suspended(o)
    })
    .await;
    let g = wait_obj(sc.gates.clone(), "release", "request cancelled", |o| {
        o.data["status"]["closeRequest"]["cancelled"] == true
    })
    .await;
    assert_eq!(opened(&g).map(|o| o.0), Some("True".into()));

    // A disallowed open request (hub gates: opening is the hub's) changes nothing.
    kubectl(
        &sc.kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "gate/release",
            &format!("open.gate.fleetgate.io/requestedAt={}", now_z()),
        ],
    );
    wait_obj(sc.gates.clone(), "release", "open request refused", |o| {
        o.data["status"]["openRequest"]["accepted"] == false
    })
    .await;

    // The hub SIGKILLed: a close request still applies at once.
    drop(sc.hub.take());
    // Stamped 2 s ahead (within the clock skew a request may be ahead of the
    // spoke): a later second than the first request without waiting for one.
    let later =
        (Utc::now() + chrono::Duration::seconds(2)).to_rfc3339_opts(SecondsFormat::Secs, true);
    kubectl(
        &sc.kubeconfig,
        &[
            "annotate",
            "--overwrite",
            "--field-manager=bob",
            "gate/release",
            &format!("close.gate.fleetgate.io/requestedAt={later}"),
            "close.gate.fleetgate.io/reason=hub down",
        ],
    );
    wait_obj(sc.ks.clone(), "apps", "held offline", suspended).await;

    // The hub back on the same database: the spoke reports the request.
    sc.hub = Some(start_hub(&sc.db.url, sc.hub_ports.0, sc.hub_ports.1));
    let offline = poll("hub recorded the offline request", || async {
        local_overrides(&sc.rest)
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
    let audit = sc.rest.get("/audit").await.unwrap();
    let entry = audit["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["actor"] == format!("bob@cluster/{CLUSTER}"))
        .cloned()
        .expect("audit entry of the offline request");
    assert_eq!(entry["action"], "override.close");
    let status = sc
        .rest
        .get(&format!("/clusters/{CLUSTER}/status"))
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
        local_overrides(&sc.rest)
            .await
            .iter()
            .all(|o| o["state"] == "closed"),
        "the refused open request never reached the hub"
    );
    let ks_now = sc.ks.get("apps").await.unwrap();
    assert!(suspended(&ks_now));
    sc.sim.child.terminate();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_local_gate_coexists_with_the_hubs_when_the_hub_enforces_local_gates() {
    let sc = Scenario::start("enforce", json!({}), &[]).await;

    // A Gate committed to the cluster (what Flux applies from Git).
    let manifest = sc.dir.path().join("git-freeze.yaml");
    std::fs::write(
        &manifest,
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: git-freeze}\nspec:\n  clusters: {selector: {}}\n  targets: {kinds: [Kustomization], names: [apps]}\n  default: closed\n",
    )
    .unwrap();
    kubectl(&sc.kubeconfig, &["apply", "-f", manifest.to_str().unwrap()]);
    let g = wait_obj(sc.gates.clone(), "git-freeze", "enforced, closed", |o| {
        opened(o).is_some_and(|(s, _)| s == "False")
    })
    .await;
    assert!(
        g.metadata
            .labels
            .as_ref()
            .is_none_or(|l| !l.contains_key("fleetgate.io/origin"))
    );
    wait_obj(sc.ks.clone(), "apps", "held by the local gate", suspended).await;

    // The hub shows it read-only as a local gate closing the cluster; its own
    // gate stays open. The spoke counts a gate's objects from its own latest
    // report, so the first report naming the gate may still count none: wait
    // for the one counting the held object.
    let status = poll("the hub shows the local gate governing apps", || async {
        sc.rest
            .get(&format!("/clusters/{CLUSTER}/status"))
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
    sc.sim.child.terminate();
}
