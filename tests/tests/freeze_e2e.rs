//! The emergency stop end to end with real processes: PostgreSQL, `fleetgate-hub`,
//! `fleetgate-sim` with 20 clusters and a `fleetgate-spoke` per cluster, no gate at all.
//! `POST /api/v1/freezes` suspends every cluster's Kustomization (by the spokes' built-in
//! `fleet-freeze` gate); the time each cluster took is printed, not asserted. With the hub
//! killed, a spoke restarted re-suspends what a person resumed meanwhile, from its persisted
//! snapshot; unfreezing resumes every cluster. A freeze made in one cluster (its
//! `fleetgate-freeze` ConfigMap) suspends there, is recorded at the hub and ends there.

mod rollout_support;

use std::time::Instant;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use reqwest::Method;
use rollout_support::{Fleet, kustomizations};
use serde_json::{Value, json};

const CLUSTERS: usize = 20;

async fn client(f: &Fleet, i: usize) -> kube::Client {
    fleetgate_tests::kube_client_from_file(&f.clusters[i].kubeconfig).await
}

/// Every spoke connected (so the freeze is pushed, not picked up on a reconnect).
async fn all_connected(f: &Fleet) {
    fleetgate_tests::poll("every spoke connected", || async {
        let v = f.get("/clusters?limit=1000").await?;
        let items = v["items"].as_array()?;
        (items.len() == CLUSTERS && items.iter().all(|c| c["connected"] == true)).then_some(())
    })
    .await;
}

fn print_distribution(what: &str, mut ms: Vec<u128>) {
    ms.sort_unstable();
    let at = |q: f64| ms[((ms.len() as f64 - 1.0) * q).round() as usize];
    println!(
        "{what}: {} clusters, min {} ms, p50 {} ms, p90 {} ms, max {} ms (all: {ms:?})",
        ms.len(),
        ms[0],
        at(0.5),
        at(0.9),
        ms[ms.len() - 1]
    );
}

/// Waits until every cluster's Kustomization is suspended (or not); the milliseconds since
/// `t0` at which each was seen so.
async fn every_cluster(f: &Fleet, suspended: bool, t0: Instant) -> Vec<u128> {
    let waits = (0..CLUSTERS).map(|i| async move {
        f.wait_suspended(i, suspended).await;
        t0.elapsed().as_millis()
    });
    futures::future::join_all(waits).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_freeze_stops_twenty_clusters_and_survives_a_spoke_restart_with_the_hub_down() {
    let mut f = Fleet::start("freeze", CLUSTERS, 1).await;
    f.start_spokes();
    all_connected(&f).await;
    for i in 0..CLUSTERS {
        f.wait_suspended(i, false).await;
    }

    // Freeze: no gate exists; every Kustomization is suspended by the built-in gate.
    let t0 = Instant::now();
    let freeze = f
        .api(Method::POST, "/freezes", json!({"reason": "INC-123"}))
        .await;
    let ms = every_cluster(&f, true, t0).await;
    print_distribution(
        "freeze: POST /api/v1/freezes -> Kustomization suspended",
        ms,
    );
    let ks = kustomizations(&client(&f, 3).await)
        .get("apps")
        .await
        .unwrap();
    assert_eq!(
        ks.metadata.annotations.as_ref().unwrap()["fleetgate.io/suspended-by"],
        "fleet-freeze"
    );
    // Every cluster's status names the freeze.
    let status = f.get("/status/clusters").await.unwrap();
    assert_eq!(status["freezes"][0]["reason"], "INC-123", "{status}");

    // The hub goes down; a person resumes cluster 0's Kustomization while its spoke is
    // stopped; the spoke restarts (hub still down) and suspends it again from its
    // persisted snapshot.
    f.kill_hub(0);
    f.stop_spoke(0);
    let ks0 = kustomizations(&client(&f, 0).await);
    ks0.patch(
        "apps",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"suspend": false}})),
    )
    .await
    .unwrap();
    f.wait_suspended(0, false).await;
    f.start_spoke(0, 0);
    f.wait_suspended(0, true).await;

    // The hub is back; unfreeze resumes every cluster.
    f.start_hub(0).await;
    all_connected(&f).await;
    let t0 = Instant::now();
    let ended = f
        .api(
            Method::POST,
            "/freezes/end",
            json!({"reason": "INC-123 resolved"}),
        )
        .await;
    assert_eq!(ended[0]["id"], freeze["id"]);
    let ms = every_cluster(&f, false, t0).await;
    print_distribution(
        "unfreeze: POST /api/v1/freezes/end -> Kustomization resumed",
        ms,
    );

    // A freeze made inside cluster 1, by its ConfigMap: suspends there only, recorded at
    // the hub; deleting the ConfigMap ends it there and at the hub.
    let cms: Api<ConfigMap> = Api::namespaced(client(&f, 1).await, "fleetgate-system");
    let cm: ConfigMap = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fleetgate-freeze", "namespace": "fleetgate-system"},
        "data": {"reason": "INC-200 local"}
    }))
    .unwrap();
    cms.create(
        &PostParams {
            field_manager: Some("alice".into()),
            ..Default::default()
        },
        &cm,
    )
    .await
    .unwrap();
    f.wait_suspended(1, true).await;
    let recorded = fleetgate_tests::poll("the hub records the cluster's freeze", || async {
        let v = f.get("/freezes").await?;
        v.as_array()?
            .iter()
            .find(|x| x["requestedIn"] == f.name(1).as_str())
            .cloned()
    })
    .await;
    assert_eq!(recorded["reason"], "INC-200 local");
    assert_eq!(recorded["actor"], format!("alice@cluster/{}", f.name(1)));
    assert!(
        !f.recorder.latest(2).suspended,
        "another cluster stays free"
    );
    cms.delete("fleetgate-freeze", &DeleteParams::default())
        .await
        .unwrap();
    f.wait_suspended(1, false).await;
    fleetgate_tests::poll("the hub records the end", || async {
        let v: Value = f.get("/freezes").await?;
        v.as_array()?.is_empty().then_some(())
    })
    .await;
}
