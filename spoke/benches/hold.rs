//! Benchmark (prints numbers, asserts nothing): a holdObjects gate over ONE
//! Kustomization that applied N Deployments (default 1,000;
//! `FLEETGATE_BENCH_OBJECTS`): time from the gate closing until every
//! Deployment carries the mark, and from opening until every mark is removed
//! (plus the owner's reconcile request), versus one client making the same
//! metadata merge patches directly with the same concurrency (the floor).
//! Run: `cargo bench -p fleetgate-spoke --bench hold`.

use std::{collections::BTreeMap, sync::Arc, time::Duration};

use fleetgate_sim::{Sim, SimConfig};
use fleetgate_spoke::{
    Config, SnapshotSource, Spoke,
    hub::report::Report,
    hub::snapshot::{GateRule, Snapshot},
};
use futures::StreamExt;
use kube::{
    Api,
    api::{DynamicObject, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod support;
use support::{CLUSTER, bench_main, client_for};

const NS: &str = "flux-system";

fn main() -> anyhow::Result<()> {
    bench_main("hold", "FLEETGATE_BENCH_OBJECTS", 1000, run)
}

fn gate(default: &str) -> Snapshot {
    Snapshot {
        revision: if default == "closed" { 1 } else { 2 },
        cluster: CLUSTER.into(),
        gates: vec![GateRule {
            name: "window".into(),
            version: 1,
            manifest: json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "window"},
                "spec": {"clusters": {"names": [CLUSTER]}, "mode": "holdObjects",
                         "targets": {"names": ["apps"]},
                         "objects": {"kinds": [{"group": "apps", "kind": "Deployment"}]},
                         "default": default}}),
            release: None,
            waiting: None,
            opening_fence: None,
            calendars: vec![],
        }],
        overrides: vec![],
        local_gates_enforced: false,
        local_gates: vec![],
        hub_time: None,
    }
}

fn held(r: &Option<Arc<Report>>) -> Option<usize> {
    r.as_ref().map(|r| {
        r.held_objects
            .iter()
            .filter(|h| !h.held_by.is_empty())
            .count()
    })
}

async fn run(n: usize) -> anyhow::Result<()> {
    let sim = Sim::start(SimConfig {
        clusters: vec![CLUSTER.into()],
        ..SimConfig::default()
    })
    .await?;
    let client = client_for(&sim).await?;
    for obj in [
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleetgate-system"}}),
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "repo", "namespace": NS},
               "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
        json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
               "metadata": {"name": "apps", "namespace": NS},
               "spec": {"interval": "10m", "path": "./apps", "prune": true, "targetNamespace": "web",
                        "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
    ] {
        sim.create_object(CLUSTER, obj).await?;
    }
    let mut yaml = String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n");
    for i in 0..n {
        yaml.push_str(&format!(
            "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: web-{i:04}}}\nspec: {{replicas: 1, template: {{spec: {{containers: [{{name: web, image: \"nginx:1.25\"}}]}}}}}}\n"
        ));
    }
    let revision = "main@sha1:0000000000000000000000000000000000000001";
    sim.push_manifests(
        CLUSTER,
        ("GitRepository", NS, "repo"),
        revision,
        &BTreeMap::from([("apps".to_string(), yaml)]),
    )
    .await?;
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("apps", "v1", "Deployment"));
    let deployments: Api<DynamicObject> = Api::namespaced_with(client.clone(), "web", &ar);
    let deadline = Instant::now() + Duration::from_secs(120);
    while deployments.list(&Default::default()).await?.items.len() < n {
        anyhow::ensure!(Instant::now() < deadline, "Deployments not applied");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let mut config = Config::for_cluster(CLUSTER)?;
    let in_flight = config.patch_concurrency;
    config.hub_url = None;
    config.namespace = "fleetgate-system".into();
    config.http_addr = "127.0.0.1:0".parse()?;
    config.held_kinds = vec!["apps/v1/Deployment".parse().map_err(anyhow::Error::msg)?];
    let shutdown = CancellationToken::new();
    let spoke = Spoke::start(client_for(&sim).await?, config, shutdown.clone()).await?;
    let ctx = spoke.ctx.clone();
    let mut reports = ctx.report.subscribe();
    reports.wait_for(|r| r.is_some()).await?;
    let wait = Duration::from_secs(600);

    let start = Instant::now();
    ctx.accept(gate("closed"), SnapshotSource::ConfigMap)
        .await?;
    tokio::time::timeout(wait, reports.wait_for(|r| held(r) == Some(n))).await??;
    let mark_time = start.elapsed();
    let start = Instant::now();
    ctx.accept(gate("open"), SnapshotSource::ConfigMap).await?;
    tokio::time::timeout(wait, reports.wait_for(|r| held(r) == Some(0))).await??;
    let release_time = start.elapsed();
    spoke.stop().await;

    // --- the floor: one client, the same merge patches, the same concurrency ---
    let patch_all = |body: serde_json::Value| {
        let deployments = deployments.clone();
        async move {
            futures::stream::iter(0..n)
                .map(|i| {
                    let (d, body) = (deployments.clone(), body.clone());
                    async move {
                        d.patch_metadata(
                            &format!("web-{i:04}"),
                            &PatchParams::default(),
                            &Patch::Merge(&body),
                        )
                        .await
                    }
                })
                .buffer_unordered(in_flight)
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
        }
    };
    let start = Instant::now();
    patch_all(json!({"metadata": {"annotations": {
        "kustomize.toolkit.fluxcd.io/reconcile": "disabled", "fleetgate.io/held-by": "window",
        "fleetgate.io/held-at": "2026-11-27T07:00:00Z", "fleetgate.io/held-at-revision": revision}}}))
    .await?;
    let floor_mark = start.elapsed();
    let start = Instant::now();
    patch_all(json!({"metadata": {"annotations": {
        "kustomize.toolkit.fluxcd.io/reconcile": null, "fleetgate.io/held-by": null,
        "fleetgate.io/held-at": null, "fleetgate.io/held-at-revision": null}}}))
    .await?;
    let floor_release = start.elapsed();
    sim.shutdown().await;

    println!(
        "holdObjects over one Kustomization applying {n} Deployments (same simulated API server):"
    );
    for (what, spoke, floor) in [
        ("mark after close  ", mark_time, floor_mark),
        ("release after open", release_time, floor_release),
    ] {
        println!(
            "  {what}: spoke {:>7.3} s (until its report shows it) | one client, same patches, {in_flight} in flight {:>7.3} s | ratio {:.2}x",
            spoke.as_secs_f64(),
            floor.as_secs_f64(),
            spoke.as_secs_f64() / floor.as_secs_f64()
        );
    }
    Ok(())
}
