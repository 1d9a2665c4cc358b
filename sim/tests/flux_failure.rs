//! Bad revisions: a push marked `"ready": false` fails the consumers that apply it with the
//! reasons Flux uses (Kustomization `ReconciliationFailed` / `HealthCheckFailed`, HelmRelease
//! `UpgradeFailed` then `Stalled`), `lastAppliedRevision` stays, and a good revision recovers
//! them. `failOn` limits the failure to the named clusters.

mod common;

use std::time::Duration;

use common::{eventually, start};
use fleetgate_sim::{Sim, SimConfig};
use serde_json::{Value, json};

const KS: &str = "kustomize.toolkit.fluxcd.io/v1";

fn rev(n: u32) -> String {
    format!("main@sha1:{n:040x}")
}

fn condition(o: &Value, type_: &str) -> Option<Value> {
    o["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
        .cloned()
}

fn ks(sim: &Sim, cluster: &str, name: &str) -> Value {
    sim.get_object(cluster, KS, "Kustomization", "flux-system", name)
        .expect("kustomization exists")
}

/// Pushes over the simulator's HTTP API; returns the status and the body.
async fn push(sim: &Sim, cluster: &str, body: Value) -> (u16, Value) {
    let url = format!("{}/sim/v1/push", sim.url(cluster).unwrap());
    let resp = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    (resp.status().as_u16(), resp.json().await.unwrap())
}

fn git_push(n: u32) -> Value {
    json!({"kind": "GitRepository", "namespace": "flux-system", "name": "flux-system",
        "revision": rev(n)})
}

/// Waits until `name` on `cluster` attempted `revision` with Ready `ready`.
async fn attempted(sim: &Sim, cluster: &str, name: &str, revision: &str, ready: &str) -> Value {
    eventually(&format!("{cluster} {name} attempts {revision}"), || async {
        let o = ks(sim, cluster, name);
        let r = condition(&o, "Ready")?;
        (o["status"]["lastAttemptedRevision"] == revision && r["status"] == ready).then_some(o)
    })
    .await
}

async fn patch_ks(sim: &Sim, name: &str, patch: Value) {
    let url = format!(
        "{}/apis/{KS}/namespaces/flux-system/kustomizations/{name}",
        sim.url("cluster-000").unwrap()
    );
    let resp = reqwest::Client::new()
        .patch(url)
        .header("content-type", "application/merge-patch+json")
        .json(&patch)
        .send()
        .await
        .unwrap();
    assert!(resp.status().is_success());
}

#[tokio::test]
async fn bad_kustomization_revision_fails_keeps_last_applied_and_recovers() {
    let sim = start(SimConfig {
        reconcile_interval: Some(Duration::from_millis(50)),
        ..SimConfig::with_clusters(2)
    })
    .await;
    sim.seed_fleet(3).await.unwrap();
    // infra-001 waits for its objects' health (spec.wait), infra-000 does not.
    patch_ks(
        &sim,
        "infra-001",
        json!({"spec": {"wait": true, "timeout": "45s"}}),
    )
    .await;
    for c in ["cluster-000", "cluster-001"] {
        assert_eq!(push(&sim, c, git_push(1)).await.0, 202);
        attempted(&sim, c, "infra-000", &rev(1), "True").await;
    }
    attempted(&sim, "cluster-000", "infra-001", &rev(1), "True").await;

    // Bad on cluster-000 only: the same push to cluster-001 is a good revision there.
    let mut bad = git_push(2);
    bad["ready"] = json!(false);
    bad["message"] = json!("Deployment/apps/web dry-run failed: admission webhook denied");
    bad["failOn"] = json!(["cluster-000"]);
    let (status, body) = push(&sim, "cluster-000", bad.clone()).await;
    assert_eq!((status, body["ready"].clone()), (202, json!(false)));
    let (status, body) = push(&sim, "cluster-001", bad).await;
    assert_eq!((status, body["ready"].clone()), (202, json!(true)));
    attempted(&sim, "cluster-001", "infra-000", &rev(2), "True").await;

    let failed = attempted(&sim, "cluster-000", "infra-000", &rev(2), "False").await;
    let ready = condition(&failed, "Ready").unwrap();
    assert_eq!(ready["reason"], "ReconciliationFailed");
    assert_eq!(
        ready["message"],
        "Deployment/apps/web dry-run failed: admission webhook denied"
    );
    assert_eq!(
        ready["observedGeneration"],
        failed["metadata"]["generation"]
    );
    assert_eq!(
        failed["status"]["lastAppliedRevision"],
        rev(1),
        "not applied"
    );
    assert_eq!(
        failed["status"]["observedGeneration"],
        failed["metadata"]["generation"]
    );
    assert_eq!(
        condition(&failed, "Reconciling").unwrap()["reason"],
        "ProgressingWithRetry"
    );
    // With health checks the objects are applied, then found unhealthy.
    let unhealthy = attempted(&sim, "cluster-000", "infra-001", &rev(2), "False").await;
    let ready = condition(&unhealthy, "Ready").unwrap();
    assert_eq!(ready["reason"], "HealthCheckFailed");
    assert_eq!(
        ready["message"],
        "health check failed after 45s: Deployment/apps/web dry-run failed: admission webhook denied"
    );
    assert_eq!(condition(&unhealthy, "Healthy").unwrap()["status"], "False");
    assert_eq!(unhealthy["status"]["lastAppliedRevision"], rev(1));

    // A good revision recovers both.
    assert_eq!(push(&sim, "cluster-000", git_push(3)).await.0, 202);
    for name in ["infra-000", "infra-001"] {
        let o = attempted(&sim, "cluster-000", name, &rev(3), "True").await;
        assert_eq!(o["status"]["lastAppliedRevision"], rev(3));
        assert!(condition(&o, "Reconciling").is_none());
    }
    let healthy = condition(&ks(&sim, "cluster-000", "infra-001"), "Healthy").unwrap();
    assert_eq!(healthy["status"], "True");
    sim.shutdown().await;
}

#[tokio::test]
async fn bad_chart_version_fails_the_helm_upgrade_then_stalls_and_recovers() {
    let sim = start(SimConfig {
        reconcile_interval: Some(Duration::from_millis(50)),
        ..SimConfig::with_clusters(1)
    })
    .await;
    sim.seed_fleet(6).await.unwrap();
    let hr = || {
        sim.get_object(
            "cluster-000",
            "helm.toolkit.fluxcd.io/v2",
            "HelmRelease",
            "apps",
            "podinfo-002",
        )
    };
    eventually("installed", || async {
        (hr()?["status"]["history"][0]["status"] == "deployed").then_some(())
    })
    .await;
    // A bad repository index: the chart built from it (1.0.1) fails to upgrade.
    let body = json!({"kind": "HelmRepository", "namespace": "flux-system", "name": "podinfo",
        "revision": "sha256:bad", "ready": false, "message": "timed out waiting for the condition"});
    assert_eq!(push(&sim, "cluster-000", body).await.0, 202);
    let failed = eventually("upgrade fails and stalls", || async {
        let o = hr()?;
        let stalled = condition(&o, "Stalled")?;
        (o["status"]["lastAttemptedRevision"] == "1.0.1" && stalled["status"] == "True")
            .then_some(o)
    })
    .await;
    let ready = condition(&failed, "Ready").unwrap();
    assert_eq!(
        (ready["status"].as_str(), ready["reason"].as_str()),
        (Some("False"), Some("UpgradeFailed"))
    );
    assert_eq!(
        ready["message"],
        "Upgrade of release apps/podinfo-002 with chart podinfo@1.0.1 failed: timed out waiting for the condition"
    );
    let history = &failed["status"]["history"];
    assert_eq!(
        (
            history[0]["status"].as_str(),
            history[0]["chartVersion"].as_str()
        ),
        (Some("failed"), Some("1.0.1"))
    );
    assert_eq!(
        (
            history[1]["status"].as_str(),
            history[1]["chartVersion"].as_str()
        ),
        (Some("deployed"), Some("1.0.0"))
    );
    assert_eq!(
        condition(&failed, "Stalled").unwrap()["reason"],
        "NoRemainingRetries"
    );

    let good = json!({"kind": "HelmRepository", "namespace": "flux-system", "name": "podinfo",
        "revision": "sha256:good"});
    assert_eq!(push(&sim, "cluster-000", good).await.0, 202);
    let ok = eventually("upgrade to 1.0.2 succeeds", || async {
        let o = hr()?;
        (o["status"]["history"][0]["chartVersion"] == "1.0.2"
            && condition(&o, "Ready")?["status"] == "True")
            .then_some(o)
    })
    .await;
    assert!(condition(&ok, "Stalled").is_none());
    assert_eq!(condition(&ok, "Released").unwrap()["status"], "True");
    assert!(ok["status"].get("failures").is_none());
    sim.shutdown().await;
}

#[tokio::test]
async fn failure_fields_without_ready_false_are_rejected() {
    let sim = start(SimConfig::with_clusters(1)).await;
    sim.seed_fleet(1).await.unwrap();
    for (extra, field) in [
        (json!({"failOn": ["cluster-000"]}), "failOn"),
        (json!({"message": "x", "ready": true}), "message"),
        (json!({"failOn": [], "ready": false}), "failOn"),
        (json!({"failAfter": "5s"}), "failAfter"),
        (json!({"failAfter": "soon", "ready": false}), "failAfter"),
        (json!({"failFor": "5s", "ready": false}), "failFor"),
        (
            json!({"failAfter": "1s", "failFor": "x", "ready": false}),
            "failFor",
        ),
    ] {
        let mut body = git_push(9);
        for (k, v) in extra.as_object().unwrap() {
            body[k] = v.clone();
        }
        let (status, resp) = push(&sim, "cluster-000", body).await;
        assert_eq!(status, 400);
        let msg = resp["message"].as_str().unwrap();
        assert!(msg.contains(field), "{msg}");
    }
    sim.shutdown().await;
}
