//! Benchmark (prints numbers, asserts nothing): suspending N Kustomizations
//! (default 1,000; `FLEETGATE_BENCH_OBJECTS`) after a gate closes — the spoke
//! versus one `kubectl patch` per object (what a CronJob running
//! `flux suspend`/`kubectl patch` does), against the same simulated API server
//! in the same run. Run: `cargo bench -p fleetgate-spoke --bench suspend`.

use std::{process::Stdio, sync::Arc, time::Duration};

use fleetgate_sim::{Sim, SimConfig};
use fleetgate_spoke::{
    Config, SnapshotSource, Spoke,
    hub::snapshot::{GateRule, Snapshot},
};
use futures::StreamExt;
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams, PostParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod support;
use support::{CLUSTER, bench_main, client_for};

const NS: &str = "flux-system";

fn main() -> anyhow::Result<()> {
    bench_main("suspend", "FLEETGATE_BENCH_OBJECTS", 1000, run)
}

async fn run(n: usize) -> anyhow::Result<()> {
    let sim = Sim::start(SimConfig {
        clusters: vec![CLUSTER.into()],
        ..SimConfig::default()
    })
    .await?;
    let client = client_for(&sim).await?;
    for ns in [NS, "fleetgate-system"] {
        let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
        let obj = serde_json::from_value(
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        )?;
        match api.create(&PostParams::default(), &obj).await {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    sim.create_object(
        CLUSTER,
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "repo", "namespace": NS},
               "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
    )
    .await?;
    for i in 0..n {
        sim.create_object(
            CLUSTER,
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                   "metadata": {"name": format!("ks-{i:04}"), "namespace": NS},
                   "spec": {"interval": "10m", "path": "./", "prune": true,
                            "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
        )
        .await?;
    }

    // --- the spoke ---
    let mut config = Config::for_cluster(CLUSTER)?;
    let in_flight = config.patch_concurrency;
    config.hub_url = None;
    config.namespace = "fleetgate-system".into();
    config.http_addr = "127.0.0.1:0".parse()?;
    let shutdown = CancellationToken::new();
    let spoke = Spoke::start(client_for(&sim).await?, config, shutdown.clone()).await?;
    let ctx = spoke.ctx.clone();
    let mut reports = ctx.report.subscribe();
    reports.wait_for(|r| r.is_some()).await?;
    let snapshot = Snapshot {
        revision: 1,
        cluster: CLUSTER.into(),
        gates: vec![GateRule {
            name: "freeze".into(),
            version: 1,
            manifest: json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "freeze"},
                             "spec": {"clusters": {"names": [CLUSTER]}, "targets": {"kinds": ["Kustomization"]}, "default": "closed"}}),
            release: None,
            waiting: None,
            opening_fence: None,
            calendars: vec![],
        }],
        overrides: vec![],
        hub_time: None,
        local_gates_enforced: false,
        local_gates: vec![],
    };
    let start = Instant::now();
    ctx.accept(snapshot, SnapshotSource::ConfigMap).await?;
    let all_suspended = |r: &Option<Arc<fleetgate_spoke::hub::report::Report>>| {
        r.as_ref()
            .is_some_and(|r| r.objects.iter().filter(|o| o.suspended).count() == n)
    };
    tokio::time::timeout(Duration::from_secs(600), reports.wait_for(all_suspended)).await??;
    let spoke_time = start.elapsed();
    spoke.stop().await;

    // Reset: resume everything (not timed).
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "kustomize.toolkit.fluxcd.io",
        "v1",
        "Kustomization",
    ));
    let ks: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &ar);
    futures::stream::iter(0..n)
        .map(|i| {
            let ks = ks.clone();
            async move {
                let body = json!({"metadata": {"annotations": {"fleetgate.io/suspended-by": null, "fleetgate.io/suspended-at": null}},
                                  "spec": {"suspend": false}});
                ks.patch(&format!("ks-{i:04}"), &PatchParams::default(), &Patch::Merge(&body)).await
            }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?;

    // --- one kubectl patch per object, sequentially, as a CronJob script does ---
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(CLUSTER, &kubeconfig)?;
    let cache = dir.path().join("cache");
    let start = Instant::now();
    for i in 0..n {
        let status = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(&cache)
            .args([
                "-n",
                NS,
                "patch",
                "kustomization",
                &format!("ks-{i:04}"),
                "--type=merge",
                "-p",
                r#"{"spec":{"suspend":true}}"#,
            ])
            .env("HOME", dir.path())
            .stdout(Stdio::null())
            .status()
            .await?;
        anyhow::ensure!(status.success(), "kubectl patch failed for ks-{i:04}");
    }
    let kubectl_time = start.elapsed();
    let suspended = ks
        .list(&Default::default())
        .await?
        .items
        .iter()
        .filter(|o| o.data["spec"]["suspend"] == json!(true))
        .count();
    anyhow::ensure!(
        suspended == n,
        "kubectl left {} of {n} unsuspended",
        n - suspended
    );
    sim.shutdown().await;

    println!("suspend {n} Kustomizations after a gate closes (same simulated API server):");
    println!(
        "  fleetgate-spoke (merge patch + event per object, {in_flight:>2} in flight): {:>9.3} s",
        spoke_time.as_secs_f64()
    );
    println!(
        "  kubectl patch, one process per object (CronJob style):         {:>9.3} s",
        kubectl_time.as_secs_f64()
    );
    println!(
        "  ratio kubectl / spoke: {:.1}x",
        kubectl_time.as_secs_f64() / spoke_time.as_secs_f64()
    );
    Ok(())
}
