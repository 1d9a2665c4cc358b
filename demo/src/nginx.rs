//! The seeds' nginx app in ONE Kustomization (`flux-system/apps`, from its own
//! GitRepository `nginx`) on the demo's first staging cluster, behind the
//! `nginx-window` holdObjects gate of `examples/hold-objects.yaml`: the demo
//! closes that gate on the cluster, waits until the spoke holds the
//! Deployment, then pushes a revision changing the image and the ConfigMap —
//! the ConfigMap changes at once, the Deployment keeps its old image.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use fleetgate_api_types::ClusterStatus;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::blockers::{self, Blocker};
use crate::fleet::{DemoCluster, revision};
use fleetgate::client::{Client, seg};
use fleetgate::error::Result;

/// The gate of `examples/hold-objects.yaml`.
pub const GATE: &str = "nginx-window";

/// The cluster showing the nginx example: the first staging cluster.
pub fn cluster(clusters: &[DemoCluster]) -> Option<&DemoCluster> {
    first(clusters, "staging")
}

/// The cluster showing the same app behind the warn-mode gate of
/// `examples/warn-hold-objects.yaml`: the first dev cluster.
pub fn warn_cluster(clusters: &[DemoCluster]) -> Option<&DemoCluster> {
    first(clusters, "dev")
}

fn first<'a>(clusters: &'a [DemoCluster], env: &str) -> Option<&'a DemoCluster> {
    clusters
        .iter()
        .find(|c| c.labels.get("env").is_some_and(|e| e == env))
}

/// The app's source and its one Kustomization.
pub fn objects() -> Vec<Value> {
    vec![
        json!({
            "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
            "metadata": {"name": "nginx", "namespace": "flux-system"},
            "spec": {"interval": "1m", "url": "https://github.com/example/nginx", "ref": {"branch": "main"}},
        }),
        json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "apps", "namespace": "flux-system"},
            "spec": {"interval": "10m", "path": "./apps", "prune": true,
                     "sourceRef": {"kind": "GitRepository", "name": "nginx"}},
        }),
    ]
}

/// The app's folder at one revision: ConfigMap, Deployment and Service.
pub fn manifests(image: &str, color: &str) -> BTreeMap<String, String> {
    let yaml = format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: nginx}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: nginx-config, namespace: nginx}}\n\
         data: {{color: {color}}}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: nginx, namespace: nginx}}\n\
         spec:\n  replicas: 2\n  template: {{spec: {{containers: [{{name: nginx, image: \"{image}\"}}]}}}}\n---\n\
         apiVersion: v1\nkind: Service\nmetadata: {{name: nginx, namespace: nginx}}\n\
         spec: {{ports: [{{port: 80}}]}}\n"
    );
    BTreeMap::from([("apps".to_string(), yaml)])
}

/// Pushes revision `n` of the app to `cluster`.
pub async fn push(
    sim: &fleetgate_sim::Sim,
    cluster: &str,
    n: u32,
    image: &str,
    color: &str,
) -> std::result::Result<(), String> {
    // Its own revisions, never equal to the fleet's pushes of `flux-system`.
    sim.push_manifests(
        cluster,
        ("GitRepository", "flux-system", "nginx"),
        &revision(&format!("{cluster}/nginx"), n),
        &manifests(image, color),
    )
    .await
    .map_err(|e| e.to_string())
}

/// What the demo saw of the held Deployment.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The spoke holds the Deployment (hub status).
    pub held: bool,
    /// The Kustomization applied the new revision while it was held.
    pub waiting: bool,
    /// Other closed gates holding the `apps` Kustomization whole (no-deploy-friday at the
    /// weekend, holiday-freeze at the year's end): the new revision waits for them, so the
    /// demo does not wait for it.
    pub blocked: Vec<Blocker>,
}

impl Outcome {
    /// The demo's line about the nginx hold on `cluster`.
    pub fn describe(&self, cluster: &str) -> String {
        let what = if !self.blocked.is_empty() {
            format!(
                "revision 2 waits whole: {} holds the apps Kustomization",
                blockers::describe(&self.blocked)
            )
        } else if self.waiting {
            "revision 2 changed its ConfigMap at once, the new image waits".to_string()
        } else {
            "the Kustomization has not applied revision 2 yet".to_string()
        };
        format!(
            "on {cluster} gate {GATE} holds the nginx Deployment ({}); {what}",
            if self.held { "held" } else { "not held yet" },
        )
    }
}

/// Closes `nginx-window` on `cluster` (an audited override, 24 h), waits
/// until its spoke reports the Deployment held, then pushes revision 2 (new
/// image and config) and, unless another closed gate holds the `apps`
/// Kustomization whole (then nothing can apply it now), waits until the hub
/// shows the change waiting. Each wait is bounded and soft.
pub async fn hold(
    client: &Client,
    sim: &fleetgate_sim::Sim,
    cluster: &str,
    shutdown: &CancellationToken,
) -> Result<Outcome> {
    let _: Value = client
        .post(
            &format!("/gates/{GATE}/close"),
            &[],
            &json!({
                "for": "24h",
                "reason": "demo: hold the nginx Deployment while its ConfigMap stays real-time",
                "clusters": {"names": [cluster]},
            }),
        )
        .await?;
    let mut outcome = Outcome {
        held: wait(client, cluster, shutdown, |d| !d.held_by.is_empty()).await?,
        ..Outcome::default()
    };
    if outcome.held {
        if let Err(e) = push(sim, cluster, 2, "nginx:1.27", "green").await {
            eprintln!("warning: pushing the nginx revision: {e}");
            return Ok(outcome);
        }
        outcome.blocked = blockers::find(client, cluster, GATE, |o| {
            o.object.kind == "Kustomization"
                && o.object.namespace == "flux-system"
                && o.object.name == "apps"
        })
        .await?;
        if outcome.blocked.is_empty() {
            outcome.waiting = wait(client, cluster, shutdown, |d| d.newer_revision_applied).await?;
        }
    }
    Ok(outcome)
}

/// Waits (20 s at most) until the hub reports `cluster`'s nginx Deployment
/// satisfying `pred`.
pub(crate) async fn wait(
    client: &Client,
    cluster: &str,
    shutdown: &CancellationToken,
    pred: impl Fn(&fleetgate_api_types::HeldObject) -> bool,
) -> Result<bool> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let path = format!("/clusters/{}/status", seg(cluster));
    while Instant::now() < deadline && !shutdown.is_cancelled() {
        let st: ClusterStatus = client.get(&path, &[]).await?;
        let found = st
            .held_objects
            .iter()
            .any(|h| h.object.kind == "Deployment" && h.object.name == "nginx" && pred(&h.object));
        if found {
            return Ok(true);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(false)
}
