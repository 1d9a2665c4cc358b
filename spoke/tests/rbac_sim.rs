//! The spoke with exactly the RBAC of `deploy/spoke/` (ServiceAccount token,
//! ClusterRole + Role from the manifests) against the simulator's RBAC: it
//! watches, patches, records events and persists its snapshot without a single
//! forbidden request.

mod support;

use std::{path::Path, time::Duration};

use fleetgate_sim::{RbacConfig, RbacUser, Sim, SimConfig, parse_manifests};
use fleetgate_spoke::suspend::annotations;
use kube::api::Api;
use support::*;

const SPOKE_TOKEN: &str = "spoke-sa-token";

const ALL_RBAC: [&str; 4] = [
    "clusterrole.yaml",
    "clusterrolebinding.yaml",
    "role.yaml",
    "rolebinding.yaml",
];

fn deploy_rbac(files: &[&str]) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/spoke");
    let mut out = Vec::new();
    for file in files {
        let text =
            std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        for mut obj in parse_manifests(&text).unwrap() {
            // kustomize sets the namespace of the namespaced ones.
            if matches!(obj["kind"].as_str(), Some("Role" | "RoleBinding")) {
                obj["metadata"]["namespace"] = SPOKE_NS.into();
            }
            out.push(obj.to_string());
        }
    }
    out
}

/// A simulator with RBAC from `deploy/spoke/` (`files`), seeded with `repo`
/// and `apps`, and a client holding the spoke ServiceAccount's token.
async fn cluster_with_rbac(files: &[&str]) -> (Cluster, kube::Client) {
    let rbac = RbacConfig {
        tokens: [(
            SPOKE_TOKEN.to_owned(),
            RbacUser::service_account(SPOKE_NS, "fleetgate-spoke"),
        )]
        .into(),
        manifests: deploy_rbac(files),
        ..RbacConfig::default()
    };
    let admin_token = rbac.admin_token.clone();
    let sim = Sim::start(SimConfig {
        clusters: vec![CLUSTER.into()],
        reconcile_interval: Some(Duration::from_millis(200)),
        rbac: Some(rbac),
        ..SimConfig::default()
    })
    .await
    .unwrap();
    let cluster = Cluster {
        client: client_for(&sim).await,
        sim,
    };
    // (The simulator creates the namespaces of what it seeds.)
    create(&cluster, git_repository("repo")).await;
    create(&cluster, kustomization("apps", "repo", false)).await;

    // The spoke's own client: the same server, the ServiceAccount's token.
    let yaml = cluster.sim.kubeconfig_yaml(CLUSTER).unwrap();
    assert!(yaml.contains(&admin_token));
    let spoke_client = fleetgate_tests::kube_client(&yaml.replace(&admin_token, SPOKE_TOKEN)).await;
    // Sanity: the token really is restricted.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(spoke_client.clone(), SPOKE_NS);
    assert!(
        matches!(secrets.list(&Default::default()).await, Err(kube::Error::Api(s)) if s.code == 403)
    );
    (cluster, spoke_client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn least_privilege_rbac_from_deploy_is_enough() {
    let (cluster, spoke_client) = cluster_with_rbac(&ALL_RBAC).await;

    let hub = FakeHub::start().await;
    hub.set(snapshot(
        1,
        vec![gate("g", "suspend", &["Kustomization"], "closed")],
        vec![],
    ));
    let shutdown = tokio_util::sync::CancellationToken::new();
    let spoke = fleetgate_spoke::Spoke::start(
        spoke_client,
        spoke_config(Some(hub.url())),
        shutdown.clone(),
    )
    .await
    .unwrap();
    wait_for(&cluster.client, "Kustomization", "apps", "suspended", |o| {
        suspended(o) && annotation(o, annotations::SUSPENDED_BY) == Some("g")
    })
    .await;
    hub.set(snapshot(
        2,
        vec![gate("g", "suspend", &["Kustomization"], "open")],
        vec![],
    ));
    wait_for(&cluster.client, "Kustomization", "apps", "resumed", |o| {
        !suspended(o)
    })
    .await;
    let mut rx = spoke.ctx.report.subscribe();
    tokio::time::timeout(
        WAIT,
        rx.wait_for(|r| r.as_ref().is_some_and(|r| r.revision == 2)),
    )
    .await
    .unwrap()
    .unwrap();
    // The snapshot was persisted (create, then patch) and events were recorded.
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(cluster.client.clone(), SPOKE_NS);
    let cm = cms.get("fleetgate-spoke-snapshot").await.unwrap();
    assert_eq!(
        cm.data.unwrap().get("revision").map(String::as_str),
        Some("2")
    );
    let events: Api<k8s_openapi::api::events::v1::Event> =
        Api::namespaced(cluster.client.clone(), NS);
    let reasons: Vec<String> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|e| e.reason)
        .collect();
    assert!(
        reasons.iter().any(|r| r == "GateClosed") && reasons.iter().any(|r| r == "GateOpened"),
        "{reasons:?}"
    );
    let metrics = spoke.ctx.metrics.render();
    assert!(
        !metrics.contains("forbidden"),
        "no request was forbidden:\n{metrics}"
    );
    spoke.stop().await;
    drop(shutdown);
    hub.stop().await;
    cluster.sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_snapshot_configmap_never_falls_back_to_the_policy() {
    // Without the Role the persisted snapshot cannot be read (403). Even with
    // --enforce-without-snapshot=open, what fleetgate suspended stays suspended:
    // the unread snapshot may still hold it.
    let (cluster, spoke_client) =
        cluster_with_rbac(&["clusterrole.yaml", "clusterrolebinding.yaml"]).await;
    let mut held = kustomization("held", "repo", true);
    held["metadata"]["annotations"] = serde_json::json!({ annotations::SUSPENDED_BY: "g" });
    create(&cluster, held).await;
    let mut config = spoke_config(None);
    config.enforce_without_snapshot = fleetgate_spoke::WithoutSnapshot::Open;
    let shutdown = tokio_util::sync::CancellationToken::new();
    let spoke = fleetgate_spoke::Spoke::start(spoke_client, config, shutdown.clone())
        .await
        .unwrap();
    // The first pass ran (watches synced) with no snapshot in force.
    let mut rx = spoke.ctx.report.subscribe();
    tokio::time::timeout(WAIT, rx.wait_for(|r| r.is_some()))
        .await
        .unwrap()
        .unwrap();
    assert!(spoke.ctx.snapshot.borrow().is_none(), "no fallback policy");
    let held = api(&cluster.client, "Kustomization")
        .get("held")
        .await
        .unwrap();
    assert!(suspended(&held), "not resumed");
    assert!(
        spoke
            .ctx
            .metrics
            .render()
            .contains("reconcile_errors_total{error=\"forbidden\"}")
    );
    spoke.stop().await;
    drop(shutdown);
    cluster.sim.shutdown().await;
}
