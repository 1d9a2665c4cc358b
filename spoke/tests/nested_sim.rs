//! Flux's bootstrap layout with `mode: suspend`: a parent Kustomization applies
//! the child's manifest, which declares `spec.suspend: false`. Without a pin,
//! the parent's server-side apply would resume the child whenever a commit
//! lands (flux2#3462). The spoke pins its suspend with kustomize-controller's
//! own opt-out, so the child applies nothing until its gate opens.

mod support;

use std::collections::BTreeMap;

use fleetgate_spoke::suspend::annotations::{PINNED, SUSPENDED_BY};
use serde_json::json;
use support::*;

fn bundle(n: u32) -> BTreeMap<String, String> {
    let child = r#"apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec: {interval: 1m, path: ./apps, prune: true, suspend: false, sourceRef: {kind: GitRepository, name: repo}}
"#;
    let app = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: flux-system}}\ndata: {{commit: \"{n}\"}}\n"
    );
    BTreeMap::from([
        ("clusters".to_string(), child.to_string()),
        ("apps".to_string(), app),
    ])
}

async fn push_bundle(cluster: &Cluster, n: u32) {
    cluster
        .sim
        .push_manifests(
            CLUSTER,
            ("GitRepository", NS, "repo"),
            &revision(n),
            &bundle(n),
        )
        .await
        .expect("push");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parent_declaring_suspend_false_cannot_resume_a_held_child() {
    let cluster = start_cluster().await;
    create(&cluster, git_repository("repo")).await;
    let mut parent = kustomization("flux-system", "repo", false);
    parent["spec"]["path"] = json!("./clusters");
    create(&cluster, parent).await;
    push_bundle(&cluster, 1).await;
    let c = &cluster.client;
    let want = revision(1);
    wait_for(c, "Kustomization", "apps", "child applied r1", |o| {
        status_str(o, "/status/lastAppliedRevision") == Some(want.as_str())
    })
    .await;

    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate_named("window", "suspend", &["apps"], "closed")],
        vec![],
    ));
    let spoke = RunningSpoke::start(&cluster, spoke_config(Some(hub.url()))).await;
    let child = wait_for(c, "Kustomization", "apps", "suspended and pinned", |o| {
        suspended(o) && annotation(o, PINNED).is_some()
    })
    .await;
    assert_eq!(
        annotation(&child, "kustomize.toolkit.fluxcd.io/reconcile"),
        Some("disabled")
    );
    spoke
        .report_where("pinned against its parent", |r| {
            r.objects
                .iter()
                .any(|o| o.key.name == "apps" && o.pinned && o.applied_by_parent)
        })
        .await;

    // A commit lands while the gate is closed: the parent applies it but skips
    // the pinned child, which stays suspended and applies nothing.
    push_bundle(&cluster, 2).await;
    let want = revision(2);
    wait_for(
        c,
        "Kustomization",
        "flux-system",
        "parent applied r2",
        |o| status_str(o, "/status/lastAppliedRevision") == Some(want.as_str()),
    )
    .await;
    let child = api(c, "Kustomization").get("apps").await.unwrap();
    assert!(suspended(&child), "the parent did not resume the child");
    assert_eq!(
        status_str(&child, "/status/lastAppliedRevision"),
        Some(revision(1).as_str())
    );
    let cm = cluster
        .sim
        .get_object(CLUSTER, "v1", "ConfigMap", NS, "app")
        .unwrap();
    assert_eq!(cm["data"]["commit"], "1", "the child applied nothing");

    // The gate opens: resumed, pin removed, the held commit rolls out.
    hub.set(snapshot(
        2,
        vec![gate_named("window", "suspend", &["apps"], "open")],
        vec![],
    ));
    let want = revision(2);
    let child = wait_for(c, "Kustomization", "apps", "child applied r2", |o| {
        status_str(o, "/status/lastAppliedRevision") == Some(want.as_str())
    })
    .await;
    assert!(!suspended(&child));
    assert_eq!(annotation(&child, PINNED), None);
    assert_eq!(annotation(&child, SUSPENDED_BY), None);
    assert_eq!(
        annotation(&child, "kustomize.toolkit.fluxcd.io/reconcile"),
        None
    );
    spoke.stop().await;
    hub.stop().await;
}
