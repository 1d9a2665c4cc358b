//! End to end with real processes: PostgreSQL, `fleetgate-hub`, `fleetgate-sim`
//! (test API server + Flux simulator) and `fleetgate-spoke`. A gate closed
//! through the hub's REST API suspends the cluster's Kustomization; a pushed
//! revision shows up as held in the hub's REST status; opening resumes it and
//! the simulator applies the revision; with the hub killed, a window edge
//! scheduled earlier is still enforced; SIGTERM stops the spoke cleanly; a
//! spoke restarted with the hub down enforces its persisted snapshot.

use std::time::Duration;

use fleetgate_tests::{
    ChildGuard, KUSTOMIZATION, Rest, dynamic_api, free_port, hub_serve, poll, spoke_connect,
    start_sim, test_db, watch_until,
};
use kube::{
    Api, Client,
    api::{DynamicObject, PostParams},
};
use serde_json::{Value, json};

const ADMIN: &str = "fga_spoke-e2e-admin-token-0123456789";
const CLUSTER: &str = "cluster-000";
const NS: &str = "flux-system";
const WAIT: Duration = Duration::from_secs(60);

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

fn ks_api(client: &Client) -> Api<DynamicObject> {
    dynamic_api(client, KUSTOMIZATION, NS)
}

async fn wait_ks(
    client: &Client,
    name: &str,
    what: &str,
    pred: impl Fn(&DynamicObject) -> bool,
) -> DynamicObject {
    watch_until(ks_api(client), name, what, WAIT, pred).await
}

fn suspended(o: &DynamicObject) -> bool {
    o.data
        .pointer("/spec/suspend")
        .and_then(Value::as_bool)
        .unwrap_or(false)
}

fn applied(o: &DynamicObject) -> Option<&str> {
    o.data
        .pointer("/status/lastAppliedRevision")
        .and_then(Value::as_str)
}

fn gate_manifest(name: &str) -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
        "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"], "namespaces": [NS]},
                 "default": "open"}
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spoke_enforces_hub_gates_end_to_end() {
    let db = test_db().await;

    // The simulated cluster (a process), its kubeconfig and push endpoint.
    let dir = tempfile::tempdir().unwrap();
    let sim = start_sim(dir.path()).await;
    sim.create_namespaces(&[NS, "fleetgate-system"]).await;
    let (sim_url, kubeconfig, client) =
        (sim.url.clone(), sim.kubeconfig.clone(), sim.client().await);
    let gitrepos = dynamic_api(
        &client,
        ("source.toolkit.fluxcd.io", "v1", "GitRepository"),
        NS,
    );
    let repo = serde_json::from_value(json!({
        "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
        "metadata": {"name": "repo", "namespace": NS},
        "spec": {"interval": "1m", "url": "https://example.com/repo.git"}
    }))
    .unwrap();
    gitrepos
        .create(&PostParams::default(), &repo)
        .await
        .unwrap();
    let ks = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "apps", "namespace": NS},
        "spec": {"interval": "1m", "path": "./", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}}
    }))
    .unwrap();
    ks_api(&client)
        .create(&PostParams::default(), &ks)
        .await
        .unwrap();
    let http = reqwest::Client::new();
    let push = |revision: String| {
        let (http, url) = (http.clone(), sim_url.clone());
        async move {
            let r = http
                .post(format!("{url}/sim/v1/push"))
                .json(&json!({"kind": "GitRepository", "namespace": NS, "name": "repo", "revision": revision}))
                .send()
                .await
                .unwrap();
            assert!(r.status().is_success(), "push: {}", r.status());
        }
    };
    push(rev(1)).await;
    wait_ks(&client, "apps", "r1 applied", |o| {
        applied(o) == Some(rev(1).as_str())
    })
    .await;

    // The hub (a process) on the throwaway database.
    let (hub_http, hub_grpc) = (free_port(), free_port());
    let hub = ChildGuard(
        hub_serve(&db.url, hub_http, hub_grpc, ADMIN)
            .spawn()
            .expect("starting fleetgate-hub"),
    );
    let rest = Rest::new(format!("http://127.0.0.1:{hub_http}"), ADMIN);
    rest.wait_ready().await;
    let token = rest.register(CLUSTER, json!({"env": "e2e"})).await;
    rest.ok(
        reqwest::Method::POST,
        "/gates",
        Some(gate_manifest("e2e-window")),
    )
    .await;

    // The spoke (a process).
    let spoke_http = free_port();
    let start_spoke = || {
        ChildGuard(
            spoke_connect(CLUSTER, hub_grpc, &kubeconfig, &token, spoke_http)
                .args(["--report-debounce", "200ms", "--reconnect-max", "1s"])
                .env("RUST_LOG", "info")
                .spawn()
                .expect("starting fleetgate-spoke"),
        )
    };
    let spoke = start_spoke();
    let status_path = format!("/clusters/{CLUSTER}/status");
    poll("spoke connected and reporting", || async {
        let (code, s) = rest.send(reqwest::Method::GET, &status_path, None).await;
        (code == 200
            && s["cluster"]["connected"] == json!(true)
            && s["objects"].as_array().is_some_and(|o| !o.is_empty()))
        .then_some(())
    })
    .await;

    // Close through the hub: suspended by the spoke.
    let closed = rest
        .ok(
            reqwest::Method::POST,
            "/gates/e2e-window/close",
            Some(json!({"reason": "e2e freeze"})),
        )
        .await;
    let override_id = closed["id"].as_str().expect("override id").to_owned();
    let apps = wait_ks(&client, "apps", "suspended by fleetgate", |o| {
        suspended(o)
            && o.metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get("fleetgate.io/suspended-by"))
                .map(String::as_str)
                == Some("e2e-window")
    })
    .await;
    assert_eq!(applied(&apps), Some(rev(1).as_str()));

    // A pushed revision is held, visible through the hub's REST status.
    push(rev(2)).await;
    let obj = poll("held visible at the hub", || async {
        let (_, s) = rest.send(reqwest::Method::GET, &status_path, None).await;
        s["objects"]
            .as_array()?
            .iter()
            .find(|o| o["name"] == "apps" && o["held"] == json!(true))
            .cloned()
    })
    .await;
    assert_eq!(obj["newestSourceRevision"], json!(rev(2)));
    assert_eq!(obj["lastAppliedRevision"], json!(rev(1)));
    assert_eq!(obj["suspendedBy"], json!(["e2e-window"]));

    // Open (cancel the override): resumed, and the held revision rolls out.
    rest.ok(
        reqwest::Method::DELETE,
        &format!("/overrides/{override_id}"),
        None,
    )
    .await;
    wait_ks(&client, "apps", "resumed, r2 applied", |o| {
        !suspended(o) && applied(o) == Some(rev(2).as_str())
    })
    .await;

    // Schedule a close a few seconds ahead, then kill the hub: the spoke still
    // closes on time from its own clock and snapshot.
    let starts_at = chrono::Utc::now() + chrono::Duration::seconds(4);
    rest.ok(
        reqwest::Method::POST,
        "/gates/e2e-window/close",
        Some(json!({"reason": "scheduled freeze", "startsAt": starts_at.to_rfc3339()})),
    )
    .await;
    poll(
        "spoke holds the snapshot with the scheduled close",
        || async {
            let (_, s) = rest.send(reqwest::Method::GET, &status_path, None).await;
            let desired = s["cluster"]["desiredRevision"].as_i64()?;
            let metrics = http
                .get(format!("http://127.0.0.1:{spoke_http}/metrics"))
                .send()
                .await
                .ok()?
                .text()
                .await
                .ok()?;
            metrics
                .lines()
                .any(|l| l == format!("fleetgate_spoke_snapshot_revision {desired}"))
                .then_some(())
        },
    )
    .await;
    drop(hub);
    let apps = wait_ks(
        &client,
        "apps",
        "suspended at the edge with the hub gone",
        suspended,
    )
    .await;
    let at = apps
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("fleetgate.io/suspended-at"))
        .cloned()
        .unwrap();
    let at = chrono::DateTime::parse_from_rfc3339(&at).unwrap().to_utc();
    assert!(
        at + chrono::Duration::seconds(1) > starts_at,
        "not before the edge: {at} vs {starts_at}"
    );

    // Graceful shutdown on SIGTERM.
    spoke.terminate();
    let mut spoke = spoke;
    let exited = tokio::task::spawn_blocking(move || {
        let status = spoke.0.wait();
        (spoke, status)
    });
    let (_spoke, status) = tokio::time::timeout(WAIT, exited)
        .await
        .expect("spoke exits on SIGTERM")
        .unwrap();
    assert!(status.unwrap().success(), "spoke exits 0 on SIGTERM");

    // Restarted while the hub is still down: the persisted snapshot is enforced
    // at once (a Kustomization created meanwhile is suspended).
    let late = serde_json::from_value(json!({
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
        "metadata": {"name": "late", "namespace": NS},
        "spec": {"interval": "1m", "path": "./", "prune": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}}
    }))
    .unwrap();
    ks_api(&client)
        .create(&PostParams::default(), &late)
        .await
        .unwrap();
    let _spoke = start_spoke();
    wait_ks(
        &client,
        "late",
        "suspended from the persisted snapshot, hub down",
        suspended,
    )
    .await;
    sim.child.terminate();
}
