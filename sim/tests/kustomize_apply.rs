//! The simulated kustomize-controller applying a revision's manifests: server-side apply as
//! `kustomize-controller` with owner labels and `status.inventory`, prune, drift correction,
//! the `reconcile: disabled` / `ssa: Ignore` skips (desired or live copy), prune exclusions,
//! Ready unchanged by skips, and a parent Kustomization reverting a child's `spec.suspend`.

mod common;

use std::collections::BTreeMap;

use common::{CLUSTER, Kubectl, eventually, get, start};
use fleetgate_sim::{Sim, SimConfig};
use fleetgate_tests::nginx_objects;
use serde_json::{Value, json};

const KS: &str = "kustomize.toolkit.fluxcd.io/v1";

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

async fn setup() -> Sim {
    let sim = start(SimConfig::with_clusters(1)).await;
    for obj in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "nginx"}}),
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "repo", "namespace": "flux-system"},
               "spec": {"interval": "10m", "url": "https://example.com/repo", "ref": {"branch": "main"}}}),
        json!({"apiVersion": KS, "kind": "Kustomization",
               "metadata": {"name": "apps", "namespace": "flux-system"},
               "spec": {"interval": "10m", "path": "./apps", "prune": true,
                        "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
    ] {
        sim.create_object(CLUSTER, obj).await.unwrap();
    }
    sim
}

async fn push(sim: &Sim, n: u32, path: &str, yaml: &str) {
    let manifests = BTreeMap::from([(path.to_string(), yaml.to_string())]);
    sim.push_manifests(
        CLUSTER,
        ("GitRepository", "flux-system", "repo"),
        &rev(n),
        &manifests,
    )
    .await
    .unwrap();
}

fn ks(sim: &Sim, name: &str) -> Value {
    get(sim, KS, "Kustomization", "flux-system", name).expect("kustomization")
}

async fn applied(sim: &Sim, name: &str, n: u32) -> Value {
    eventually(&format!("{name} applied {}", rev(n)), || async {
        let k = ks(sim, name);
        (k["status"]["lastAppliedRevision"] == rev(n)).then_some(k)
    })
    .await
}

async fn merge(sim: &Sim, path: &str, patch: Value) {
    let url = format!("{}{path}", sim.url(CLUSTER).unwrap());
    let resp = reqwest::Client::new()
        .patch(url)
        .header("content-type", "application/merge-patch+json")
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success(), "{}", resp.text().await.unwrap());
}

async fn request_reconcile(sim: &Sim, name: &str, at: &str) {
    let path = format!(
        "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/{name}"
    );
    merge(
        sim,
        &path,
        json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": at}}}),
    )
    .await;
    eventually("requestedAt handled", || async {
        (ks(sim, name)["status"]["lastHandledReconcileAt"] == at).then_some(())
    })
    .await;
}

fn image(sim: &Sim) -> Value {
    get(sim, "apps/v1", "Deployment", "nginx", "nginx").unwrap()["spec"]["template"]["spec"]
        ["containers"][0]["image"]
        .clone()
}

#[tokio::test]
async fn applies_with_owner_labels_inventory_and_kustomize_controller_ownership() {
    let sim = setup().await;
    push(&sim, 1, "apps", &nginx_objects("nginx:1.25", "blue")).await;
    let k = applied(&sim, "apps", 1).await;
    let ids: Vec<&str> = k["status"]["inventory"]["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "nginx_nginx-config__ConfigMap",
            "nginx_nginx__Service",
            "nginx_nginx_apps_Deployment"
        ]
    );
    assert_eq!(k["status"]["inventory"]["entries"][2]["v"], "v1");
    let cm = get(&sim, "v1", "ConfigMap", "nginx", "nginx-config").unwrap();
    assert_eq!(
        cm["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/name"],
        "apps"
    );
    assert_eq!(
        cm["metadata"]["labels"]["kustomize.toolkit.fluxcd.io/namespace"],
        "flux-system"
    );
    let managers = &cm["metadata"]["managedFields"];
    assert_eq!(managers[0]["manager"], "kustomize-controller");
    assert_eq!(managers[0]["operation"], "Apply");

    // A person looks with kubectl.
    let kubectl = Kubectl::new(&sim);
    let out = kubectl
        .ok(&[
            "get",
            "deployments",
            "-n",
            "nginx",
            "-o",
            "jsonpath={.items[0].spec.template.spec.containers[0].image}",
        ])
        .await;
    assert_eq!(out, "nginx:1.25");

    // The next revision updates what changed and prunes what it dropped.
    let without_service = nginx_objects("nginx:1.26", "green")
        .split("---")
        .take(2)
        .collect::<Vec<_>>()
        .join("---");
    push(&sim, 2, "apps", &without_service).await;
    let k = applied(&sim, "apps", 2).await;
    assert_eq!(
        k["status"]["inventory"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(image(&sim), "nginx:1.26");
    assert!(
        get(&sim, "v1", "Service", "nginx", "nginx").is_none(),
        "pruned"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn reconcile_disabled_on_the_live_copy_skips_it_and_ready_stays_true() {
    let sim = setup().await;
    push(&sim, 1, "apps", &nginx_objects("nginx:1.25", "blue")).await;
    applied(&sim, "apps", 1).await;
    let kubectl = Kubectl::new(&sim);
    // Value compared case-insensitively, label or annotation.
    kubectl
        .ok(&[
            "annotate",
            "deployment/nginx",
            "-n",
            "nginx",
            "kustomize.toolkit.fluxcd.io/reconcile=Disabled",
        ])
        .await;
    kubectl
        .ok(&[
            "label",
            "service/nginx",
            "-n",
            "nginx",
            "kustomize.toolkit.fluxcd.io/ssa=ignore",
        ])
        .await;

    push(&sim, 2, "apps", &nginx_objects("nginx:1.26", "green")).await;
    let k = applied(&sim, "apps", 2).await;
    let ready = k["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["status"], "True", "{ready}");
    assert_eq!(
        image(&sim),
        "nginx:1.25",
        "the held Deployment keeps its image"
    );
    let cm = get(&sim, "v1", "ConfigMap", "nginx", "nginx-config").unwrap();
    assert_eq!(cm["data"]["color"], "green", "the rest is applied");
    assert_eq!(
        k["status"]["inventory"]["entries"]
            .as_array()
            .unwrap()
            .len(),
        3,
        "skipped objects stay in the inventory"
    );

    // Drift on the ConfigMap is corrected at the next reconcile.
    kubectl
        .ok(&[
            "patch",
            "configmap/nginx-config",
            "-n",
            "nginx",
            "--type=merge",
            "-p",
            r#"{"data":{"color":"red"}}"#,
        ])
        .await;
    request_reconcile(&sim, "apps", "t1").await;
    let cm = get(&sim, "v1", "ConfigMap", "nginx", "nginx-config").unwrap();
    assert_eq!(cm["data"]["color"], "green");

    // A revision dropping the skipped objects does not prune them either.
    let cm_only = nginx_objects("nginx:1.26", "green")
        .split("---")
        .next()
        .unwrap()
        .to_string();
    push(&sim, 3, "apps", &cm_only).await;
    applied(&sim, "apps", 3).await;
    assert!(get(&sim, "apps/v1", "Deployment", "nginx", "nginx").is_some());
    assert!(get(&sim, "v1", "Service", "nginx", "nginx").is_some());

    // Enabled again: the next reconcile applies the held change.
    kubectl
        .ok(&[
            "annotate",
            "deployment/nginx",
            "-n",
            "nginx",
            "kustomize.toolkit.fluxcd.io/reconcile-",
        ])
        .await;
    push(&sim, 4, "apps", &nginx_objects("nginx:1.27", "green")).await;
    applied(&sim, "apps", 4).await;
    assert_eq!(image(&sim), "nginx:1.27");
    sim.shutdown().await;
}

#[tokio::test]
async fn desired_opt_out_and_prune_disabled() {
    let sim = setup().await;
    let yaml = r#"apiVersion: v1
kind: ConfigMap
metadata: {name: keep, namespace: nginx, annotations: {kustomize.toolkit.fluxcd.io/prune: disabled}}
data: {a: "1"}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: never, namespace: nginx, labels: {kustomize.toolkit.fluxcd.io/reconcile: disabled}}
data: {a: "1"}
"#;
    push(&sim, 1, "apps", yaml).await;
    applied(&sim, "apps", 1).await;
    assert!(get(&sim, "v1", "ConfigMap", "nginx", "keep").is_some());
    assert!(
        get(&sim, "v1", "ConfigMap", "nginx", "never").is_none(),
        "desired copy opted out: not even created"
    );
    push(&sim, 2, "apps", "").await;
    applied(&sim, "apps", 2).await;
    assert!(
        get(&sim, "v1", "ConfigMap", "nginx", "keep").is_some(),
        "prune: disabled"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn missing_path_fails_ready_and_keeps_the_last_applied_revision() {
    let sim = setup().await;
    push(&sim, 1, "apps", &nginx_objects("nginx:1.25", "blue")).await;
    applied(&sim, "apps", 1).await;
    push(&sim, 2, "elsewhere", "").await;
    let k = eventually("Ready=False", || async {
        let k = ks(&sim, "apps");
        (k["status"]["lastAttemptedRevision"] == rev(2)).then_some(k)
    })
    .await;
    assert_eq!(k["status"]["lastAppliedRevision"], rev(1));
    let ready = &k["status"]["conditions"][0];
    assert_eq!(ready["status"], "False");
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("path not found")
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn a_parent_declaring_suspend_false_reverts_a_childs_suspend() {
    let sim = setup().await;
    // The bootstrap layout: `apps` applies the `child` Kustomization's manifest.
    let child = |suspend: &str| {
        format!(
            r#"apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {{name: child, namespace: flux-system}}
spec: {{interval: 10m, path: ./child, prune: true, suspend: {suspend}, sourceRef: {{kind: GitRepository, name: repo}}}}
"#
        )
    };
    push(&sim, 1, "apps", &child("false")).await;
    applied(&sim, "apps", 1).await;
    eventually("child exists", || async {
        get(&sim, KS, "Kustomization", "flux-system", "child")
    })
    .await;
    let child_path =
        "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/child";
    // Someone (a CronJob, the spoke) suspends the child with a merge patch.
    merge(&sim, child_path, json!({"spec": {"suspend": true}})).await;
    // The parent's next reconcile (a new commit) takes spec.suspend back.
    push(&sim, 2, "apps", &child("false")).await;
    applied(&sim, "apps", 2).await;
    assert_eq!(
        ks(&sim, "child")["spec"]["suspend"],
        false,
        "the parent reverted the suspend"
    );

    // Marked reconcile: disabled, the child is left alone by its parent.
    merge(
        &sim,
        child_path,
        json!({"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/reconcile": "disabled"}}, "spec": {"suspend": true}}),
    )
    .await;
    push(&sim, 3, "apps", &child("false")).await;
    applied(&sim, "apps", 3).await;
    assert_eq!(ks(&sim, "child")["spec"]["suspend"], true);
    sim.shutdown().await;
}
