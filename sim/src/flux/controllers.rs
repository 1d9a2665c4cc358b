//! What one reconcile of each Flux kind does to its status, modelled on the real
//! controllers: sources publish their upstream's newest revision as
//! `status.artifact.revision`; Kustomizations and HelmReleases apply their source's
//! artifact into `lastAttemptedRevision`/`lastAppliedRevision` with a Ready condition
//! (HelmRelease v2: `lastAttemptedRevision` and `history[0].chartVersion`).

use serde_json::{Value, json};

use super::status::{digest_hex, initial_revision, set_condition};
use crate::cluster::Cluster;

/// The annotation `flux reconcile` sets to request an immediate reconcile.
pub const REQUESTED_AT: &str = "reconcile.fluxcd.io/requestedAt";

pub const SOURCE_KINDS: &[&str] = &[
    "GitRepository",
    "OCIRepository",
    "HelmRepository",
    "Bucket",
    "HelmChart",
];

pub fn is_source(kind: &str) -> bool {
    SOURCE_KINDS.contains(&kind)
}

/// Controller (field manager) that owns a kind's status.
pub fn controller(kind: &str) -> &'static str {
    match kind {
        "Kustomization" => "kustomize-controller",
        "HelmRelease" => "helm-controller",
        "ImageUpdateAutomation" => "image-automation-controller",
        _ => "source-controller",
    }
}

fn meta_str<'a>(obj: &'a Value, f: &str) -> &'a str {
    obj["metadata"][f].as_str().unwrap_or_default()
}

pub fn requested_at(obj: &Value) -> Option<&str> {
    obj["metadata"]["annotations"][REQUESTED_AT].as_str()
}

/// Common bookkeeping: observedGeneration and lastHandledReconcileAt.
fn observe(obj: &Value, status: &mut Value) {
    status["observedGeneration"] = obj["metadata"]["generation"].clone();
    if let Some(r) = requested_at(obj) {
        status["lastHandledReconcileAt"] = json!(r);
    }
}

/// The (kind, namespace, name) of the source an applier consumes.
pub fn source_ref(kind: &str, obj: &Value) -> Option<(String, String, String)> {
    let r = match kind {
        "Kustomization" | "ImageUpdateAutomation" => &obj["spec"]["sourceRef"],
        "HelmRelease" if obj["spec"]["chartRef"].is_object() => &obj["spec"]["chartRef"],
        // spec.chart: the release consumes the HelmChart helm-controller generates.
        "HelmRelease" => return super::helm::generated_chart_key(obj),
        "HelmChart" => &obj["spec"]["sourceRef"],
        _ => return None,
    };
    let ns = r["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(meta_str(obj, "namespace"));
    Some((
        r["kind"].as_str()?.to_string(),
        ns.to_string(),
        r["name"].as_str()?.to_string(),
    ))
}

/// The newest revision upstream of a source (seeded deterministically on first use).
pub fn upstream_revision(cluster: &Cluster, kind: &str, obj: &Value) -> String {
    let key = (
        kind.to_string(),
        meta_str(obj, "namespace").to_string(),
        meta_str(obj, "name").to_string(),
    );
    if let Some(r) = cluster.upstream_revision(&key) {
        return r;
    }
    let seed = format!("{}/{}/{}/{}", cluster.name, key.0, key.1, key.2);
    let rev = initial_revision(kind, obj, &seed);
    cluster.push(key, rev.clone());
    rev
}

/// New status of a source after fetching `revision`.
pub fn reconcile_source(
    kind: &str,
    plural: &str,
    obj: &Value,
    revision: &str,
    observed_source: Option<&str>,
) -> Value {
    let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    if status["artifact"]["revision"] != revision {
        let name = meta_str(obj, "name");
        let ns = meta_str(obj, "namespace");
        let digest = format!("sha256:{}", digest_hex(revision, 64));
        let file = format!("{}.tar.gz", digest_hex(revision, 40));
        status["artifact"] = json!({
            "revision": revision,
            "digest": digest,
            "path": format!("{plural}/{ns}/{name}/{file}"),
            "url": format!("http://source-controller.flux-system.svc.cluster.local./{plural}/{ns}/{name}/{file}"),
            "size": 1024,
            "lastUpdateTime": crate::managed::now(),
        });
    }
    let message = match kind {
        "HelmRepository" => format!("stored artifact: revision '{revision}'"),
        "OCIRepository" => format!("stored artifact for digest '{revision}'"),
        "HelmChart" => format!(
            "pulled '{}' chart with version '{revision}'",
            obj["spec"]["chart"].as_str().unwrap_or("chart")
        ),
        _ => format!("stored artifact for revision '{revision}'"),
    };
    if let Some(src) = observed_source {
        status["observedSourceArtifactRevision"] = json!(src);
        status["observedChartName"] = obj["spec"]["chart"].clone();
    }
    set_condition(
        &mut status,
        "Ready",
        true,
        "Succeeded",
        &message,
        generation,
    );
    set_condition(
        &mut status,
        "ArtifactInStorage",
        true,
        "Succeeded",
        &message,
        generation,
    );
    observe(obj, &mut status);
    status
}

/// New status of an applier given its source object (None: not found).
pub fn reconcile_applier(
    kind: &str,
    obj: &Value,
    source: Option<&Value>,
    src: &(String, String, String),
) -> Value {
    let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = obj["metadata"]["generation"].as_i64().unwrap_or(1);
    observe(obj, &mut status);
    let revision = source.and_then(|s| s["status"]["artifact"]["revision"].as_str());
    let Some(revision) = revision else {
        let message = match source {
            None => format!("Source '{}/{}/{}' not found", src.0, src.1, src.2),
            Some(_) => format!(
                "Source '{}/{}/{}' is not ready, artifact not found",
                src.0, src.1, src.2
            ),
        };
        set_condition(
            &mut status,
            "Ready",
            false,
            "ArtifactFailed",
            &message,
            generation,
        );
        return status;
    };
    match kind {
        "HelmRelease" => {
            let name = meta_str(obj, "name");
            let ns = meta_str(obj, "namespace");
            let chart = obj["spec"]["chart"]["spec"]["chart"]
                .as_str()
                .unwrap_or(name);
            let changed = status["lastAttemptedRevision"] != revision;
            let prev_version = status["history"][0]["version"].as_i64().unwrap_or(0);
            let version = if changed {
                prev_version + 1
            } else {
                prev_version.max(1)
            };
            let (reason, verb) = if version == 1 {
                ("InstallSucceeded", "install")
            } else {
                ("UpgradeSucceeded", "upgrade")
            };
            if changed {
                let now = crate::managed::now();
                status["history"] = json!([{
                    "name": name, "namespace": ns, "version": version,
                    "chartName": chart, "chartVersion": revision, "status": "deployed",
                    "firstDeployed": now, "lastDeployed": now,
                    "digest": format!("sha256:{}", digest_hex(&format!("{ns}/{name}/{revision}"), 64)),
                    "configDigest": format!("sha256:{}", digest_hex(revision, 64)),
                }]);
            }
            let message = format!(
                "Helm {verb} succeeded for release {ns}/{name}.v{version} with chart {chart}@{revision}"
            );
            // helm-controller v2 has no lastAppliedRevision: the deployed chart version is
            // history[0].chartVersion.
            status["lastAttemptedRevision"] = json!(revision);
            status["lastAttemptedReleaseAction"] = json!(verb);
            set_condition(&mut status, "Ready", true, reason, &message, generation);
        }
        "ImageUpdateAutomation" => {
            status["lastPushCommit"] = json!(revision);
            set_condition(
                &mut status,
                "Ready",
                true,
                "Succeeded",
                "repository up-to-date",
                generation,
            );
        }
        _ => {
            status["lastAttemptedRevision"] = json!(revision);
            status["lastAppliedRevision"] = json!(revision);
            let message = format!("Applied revision: {revision}");
            set_condition(
                &mut status,
                "Ready",
                true,
                "ReconciliationSucceeded",
                &message,
                generation,
            );
        }
    }
    status
}
