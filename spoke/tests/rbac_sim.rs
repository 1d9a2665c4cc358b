//! The spoke with exactly the RBAC of `deploy/spoke/` (ServiceAccount token,
//! ClusterRole + Role from the manifests) against the simulator's RBAC: it
//! watches, patches, records events and persists its snapshot without a single
//! forbidden request.

mod support;

use fleetgate_spoke::suspend::annotations;
use kube::api::Api;
use support::*;

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
