//! Benchmark (prints numbers, asserts nothing): how long after a window edge
//! a Gate object's `Opened` condition changes, and when `kubectl wait
//! --for=condition=Opened` returns — a standalone spoke, its Gate objects and
//! the real kubectl against the simulated API server, with 100 governed
//! Kustomizations. Target: status within 1 s of the edge.
//! Run: `cargo bench -p fleetgate-spoke --bench gate_edge`
//! (`FLEETGATE_BENCH_EDGES` edges, default 5).

use std::process::Stdio;

use chrono::{SubsecRound, Utc};
use fleetgate_sim::{Sim, SimConfig};
use fleetgate_spoke::{Config, Spoke};
use futures::StreamExt;
use kube::{
    Api,
    api::{DynamicObject, PostParams},
    runtime::watcher,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

mod support;
use support::{CLUSTER, bench_main, client_for};

const NS: &str = "flux-system";

fn main() -> anyhow::Result<()> {
    bench_main("gate_edge", "FLEETGATE_BENCH_EDGES", 5, run)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

async fn run(edges: usize) -> anyhow::Result<()> {
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
        let _ = api.create(&PostParams::default(), &obj).await;
    }
    sim.create_object(
        CLUSTER,
        json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
               "metadata": {"name": "repo", "namespace": NS},
               "spec": {"interval": "1m", "url": "https://example.com/repo.git"}}),
    )
    .await?;
    for i in 0..100 {
        sim.create_object(
            CLUSTER,
            json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                   "metadata": {"name": format!("app-{i:03}"), "namespace": NS},
                   "spec": {"interval": "1m", "path": "./", "prune": true,
                            "sourceRef": {"kind": "GitRepository", "name": "repo"}}}),
        )
        .await?;
    }
    let mut config = Config::for_cluster(CLUSTER)?;
    config.standalone = true;
    config.http_addr = "127.0.0.1:0".parse()?;
    config.namespace = "fleetgate-system".into();
    let shutdown = CancellationToken::new();
    let spoke = Spoke::start(client.clone(), config, shutdown.clone()).await?;
    let dir = tempfile::tempdir()?;
    let kubeconfig = dir.path().join("kubeconfig");
    sim.write_kubeconfig(CLUSTER, &kubeconfig)?;
    let gates: Api<DynamicObject> =
        Api::all_with(client.clone(), &fleetgate_spoke::gates::resource());

    let (mut status_ms, mut wait_ms) = (Vec::new(), Vec::new());
    for e in 0..edges {
        let name = format!("edge-{e}");
        // The edge: a whole second 3 s ahead, so the Gate is seen closed first.
        let edge = (Utc::now() + chrono::Duration::seconds(3)).trunc_subsecs(0);
        let fmt = |t: chrono::DateTime<Utc>| t.format("%Y-%m-%dT%H:%M:%S").to_string();
        let gate = json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
            "spec": {"clusters": {"selector": {}}, "targets": {"kinds": ["Kustomization"]},
                     "default": "closed",
                     "windows": [{"name": "w", "kind": "allow", "start": fmt(edge),
                                  "end": fmt(edge + chrono::Duration::hours(1))}]}
        });
        gates
            .create(&PostParams::default(), &serde_json::from_value(gate)?)
            .await?;
        let wait = tokio::process::Command::new("kubectl")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args([
                "wait",
                "--for=condition=Opened",
                &format!("gate/{name}"),
                "--timeout=60s",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()?;
        let waited = tokio::spawn(async move {
            let mut wait = wait;
            let _ = wait.wait().await;
            Utc::now()
        });
        let opened_at = {
            let mut stream = std::pin::pin!(watcher::watch_object(gates.clone(), &name).boxed());
            loop {
                let Some(ev) = stream.next().await else {
                    anyhow::bail!("watch ended");
                };
                let open = ev.ok().flatten().is_some_and(|o| {
                    o.data["status"]["conditions"].as_array().is_some_and(|c| {
                        c.iter()
                            .any(|c| c["type"] == "Opened" && c["status"] == "True")
                    })
                });
                if open {
                    break Utc::now();
                }
            }
        };
        let waited_at = waited.await?;
        status_ms.push((opened_at - edge).num_milliseconds() as f64);
        wait_ms.push((waited_at - edge).num_milliseconds() as f64);
        gates.delete(&name, &Default::default()).await?;
    }
    status_ms.sort_by(f64::total_cmp);
    wait_ms.sort_by(f64::total_cmp);
    println!(
        "gate_edge: {edges} window edges, 100 governed Kustomizations\n  Opened status after the edge: p50 {:.0} ms, max {:.0} ms (target <= 1000 ms)\n  kubectl wait returned after the edge: p50 {:.0} ms, max {:.0} ms",
        percentile(&status_ms, 0.5),
        percentile(&status_ms, 1.0),
        percentile(&wait_ms, 0.5),
        percentile(&wait_ms, 1.0),
    );
    shutdown.cancel();
    spoke.join().await;
    sim.shutdown().await;
    Ok(())
}
