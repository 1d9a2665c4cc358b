//! The Flux simulator: pushed revisions flow source → Kustomization/HelmRelease unless
//! suspended; requestedAt triggers a reconcile; a suspended source holds new revisions
//! while its consumers keep reconciling the last one; generated HelmCharts; HTTP pushes.

mod common;

use std::time::Duration;

use common::{CLUSTER, eventually, get, start};
use fleetgate_sim::{Sim, SimConfig};
use serde_json::{Value, json};

const KS: &str = "kustomize.toolkit.fluxcd.io/v1";
const GIT: &str = "source.toolkit.fluxcd.io/v1";

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

fn ks(sim: &Sim, name: &str) -> Value {
    get(sim, KS, "Kustomization", "flux-system", name).expect("kustomization exists")
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

fn ks_path(name: &str) -> String {
    format!("/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/{name}")
}

const GIT_PATH: &str =
    "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories/flux-system";

async fn applied(sim: &Sim, name: &str, want: &str) {
    eventually(&format!("{name} applies {want}"), || async {
        let o = ks(sim, name);
        (o["status"]["lastAppliedRevision"] == want).then_some(())
    })
    .await;
}

/// "Pushes commit `n`" to the seeded GitRepository.
async fn push_git(sim: &Sim, n: u32) {
    sim.push_revision(
        CLUSTER,
        "GitRepository",
        "flux-system",
        "flux-system",
        &rev(n),
    )
    .await
    .unwrap();
}

/// Sets `reconcile.fluxcd.io/requestedAt` and waits until the simulator handled it.
async fn request_reconcile(sim: &Sim, name: &str, at: &str) {
    let annotation = json!({"metadata": {"annotations": {"reconcile.fluxcd.io/requestedAt": at}}});
    merge(sim, &ks_path(name), annotation).await;
    eventually("lastHandledReconcileAt", || async {
        (ks(sim, name)["status"]["lastHandledReconcileAt"] == at).then_some(())
    })
    .await;
}

async fn fast_sim() -> Sim {
    let sim = start(SimConfig {
        reconcile_interval: Some(Duration::from_millis(50)),
        ..SimConfig::with_clusters(1)
    })
    .await;
    sim.seed_fleet(3).await.unwrap();
    sim
}

#[tokio::test]
async fn pushed_revision_reaches_kustomizations_unless_suspended() {
    let sim = fast_sim().await;
    push_git(&sim, 1).await;
    applied(&sim, "infra-000", &rev(1)).await;
    applied(&sim, "infra-001", &rev(1)).await;
    let o = ks(&sim, "infra-000");
    assert_eq!(o["status"]["lastAttemptedRevision"], rev(1));
    let ready = o["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "Ready")
        .unwrap();
    assert_eq!(ready["status"], "True");
    assert_eq!(ready["message"], format!("Applied revision: {}", rev(1)));
    assert_eq!(
        o["status"]["observedGeneration"],
        o["metadata"]["generation"]
    );

    merge(
        &sim,
        &ks_path("infra-001"),
        json!({"spec": {"suspend": true}}),
    )
    .await;
    push_git(&sim, 2).await;
    applied(&sim, "infra-000", &rev(2)).await;
    // A later pass proves the pass that applied rev 2 has finished for everyone.
    push_git(&sim, 3).await;
    applied(&sim, "infra-000", &rev(3)).await;
    assert_eq!(
        ks(&sim, "infra-001")["status"]["lastAppliedRevision"],
        rev(1),
        "suspended: held"
    );

    merge(
        &sim,
        &ks_path("infra-001"),
        json!({"spec": {"suspend": false}}),
    )
    .await;
    applied(&sim, "infra-001", &rev(3)).await;
    sim.shutdown().await;
}

#[tokio::test]
async fn requested_at_triggers_an_immediate_reconcile() {
    // Real intervals (10m): only the annotation can explain a reconcile.
    let sim = start(SimConfig::with_clusters(1)).await;
    sim.seed_fleet(3).await.unwrap();
    eventually("first reconcile", || async {
        ks(&sim, "infra-000")["status"]["lastAppliedRevision"]
            .as_str()
            .map(|_| ())
    })
    .await;
    let before = sim.reconcile_count(CLUSTER, "Kustomization", "flux-system", "infra-000");
    let at = "2026-01-01T00:00:00Z";
    request_reconcile(&sim, "infra-000", at).await;
    assert_eq!(
        sim.reconcile_count(CLUSTER, "Kustomization", "flux-system", "infra-000"),
        before + 1
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn suspended_source_holds_revisions_while_consumers_keep_reconciling() {
    let sim = fast_sim().await;
    push_git(&sim, 1).await;
    applied(&sim, "infra-000", &rev(1)).await;

    merge(&sim, GIT_PATH, json!({"spec": {"suspend": true}})).await;
    push_git(&sim, 2).await;
    // The Kustomization keeps reconciling (drift correction) the last revision.
    let count = sim.reconcile_count(CLUSTER, "Kustomization", "flux-system", "infra-000");
    eventually("more reconciles", || async {
        (sim.reconcile_count(CLUSTER, "Kustomization", "flux-system", "infra-000") >= count + 3)
            .then_some(())
    })
    .await;
    let at = "2026-01-01T00:00:00Z";
    request_reconcile(&sim, "infra-000", at).await;
    assert_eq!(
        ks(&sim, "infra-000")["status"]["lastAppliedRevision"],
        rev(1)
    );
    let git = get(&sim, GIT, "GitRepository", "flux-system", "flux-system").unwrap();
    assert_eq!(
        git["status"]["artifact"]["revision"],
        rev(1),
        "a suspended source publishes nothing new"
    );

    merge(&sim, GIT_PATH, json!({"spec": {"suspend": false}})).await;
    applied(&sim, "infra-000", &rev(2)).await;
    sim.shutdown().await;
}

#[tokio::test]
async fn helm_releases_get_generated_charts_and_push_works_over_http() {
    let sim = start(SimConfig {
        reconcile_interval: Some(Duration::from_millis(50)),
        ..SimConfig::with_clusters(1)
    })
    .await;
    sim.seed_fleet(6).await.unwrap();
    let hr = || {
        get(
            &sim,
            "helm.toolkit.fluxcd.io/v2",
            "HelmRelease",
            "apps",
            "podinfo-002",
        )
    };
    let chart = || get(&sim, GIT, "HelmChart", "flux-system", "apps-podinfo-002");
    let deployed = |version: &'static str| {
        let (hr, chart) = (&hr, &chart);
        async move {
            eventually(&format!("chart version {version} deployed"), || async {
                let (hr, chart) = (hr()?, chart()?);
                (chart["status"]["artifact"]["revision"] == version
                    && hr["status"]["history"][0]["chartVersion"] == version
                    && hr["status"]["lastAttemptedRevision"] == version)
                    .then_some(hr)
            })
            .await
        }
    };
    // helm-controller's generated HelmChart: "<namespace>-<name>" next to the repository.
    let first = deployed("1.0.0").await;
    assert_eq!(first["status"]["helmChart"], "flux-system/apps-podinfo-002");
    let c = chart().unwrap();
    assert_eq!(c["spec"]["chart"], "podinfo");
    assert_eq!(
        c["spec"]["sourceRef"],
        json!({"kind": "HelmRepository", "name": "podinfo"})
    );

    // A new repository index (pushed over HTTP) publishes the next chart version.
    let url = format!("{}/sim/v1/push", sim.url(CLUSTER).unwrap());
    let http = reqwest::Client::new();
    let push = json!({"kind": "HelmRepository", "namespace": "flux-system", "name": "podinfo", "revision": "sha256:abc"});
    let resp = http.post(&url).json(&push).send().await.unwrap();
    assert_eq!(resp.status(), 202);
    let upgraded = deployed("1.0.1").await;
    let ready = &upgraded["status"]["conditions"][0];
    assert_eq!(ready["reason"], "UpgradeSucceeded");
    assert_eq!(upgraded["status"]["history"][0]["version"], 2);
    // Or push a chart version directly.
    sim.push_revision(
        CLUSTER,
        "HelmChart",
        "flux-system",
        "apps-podinfo-002",
        "6.5.5",
    )
    .await
    .unwrap();
    deployed("6.5.5").await;

    // Deleting the release deletes its generated chart.
    let hr_path = format!(
        "{}/apis/helm.toolkit.fluxcd.io/v2/namespaces/apps/helmreleases/podinfo-002",
        sim.url(CLUSTER).unwrap()
    );
    assert_eq!(http.delete(hr_path).send().await.unwrap().status(), 200);
    eventually("generated chart deleted", || async {
        chart().is_none().then_some(())
    })
    .await;

    let bad =
        json!({"kind": "Kustomization", "namespace": "flux-system", "name": "x", "revision": "r"});
    assert_eq!(
        http.post(&url).json(&bad).send().await.unwrap().status(),
        400
    );
    sim.shutdown().await;
}
