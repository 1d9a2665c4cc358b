//! Bad revisions made real: a revision pushed with `"ready": false` fails in the consumers
//! that apply it, with the status the Flux controllers write for a failed reconcile, and a
//! good revision pushed after it recovers them.
//!
//! Kustomization, after fluxcd/kustomize-controller
//! `internal/controller/kustomization_controller.go`: `reconcile()` sets
//! `lastAttemptedRevision` before building; a failed apply marks Ready=False
//! `ReconciliationFailed` (nothing applied); with health checks (`spec.wait` or
//! `spec.healthChecks`) the objects are applied and `checkHealth()` failing marks Ready=False
//! `HealthCheckFailed` (and `Healthy=False`); in both cases `lastAppliedRevision` is not
//! advanced (it is set only after the health checks pass), and `finalizeStatus()` advances
//! `status.observedGeneration` only when Ready is True, leaving `Reconciling` with reason
//! `ProgressingWithRetry` otherwise. The conditions themselves carry the current generation.
//!
//! HelmRelease, after fluxcd/helm-controller `internal/reconcile/install.go` / `upgrade.go`
//! (`failure()`: Released=False `InstallFailed`/`UpgradeFailed`, "Install|Upgrade of release
//! ns/name with chart c@v failed: …", `status.failures`), `atomic_release.go` (`summarize()`
//! mirrors it to Ready; with the default remediation of 0 retries the next reconcile marks
//! `Stalled` `NoRemainingRetries`). Helm records the failed release, so `history[0]` is the
//! failed attempt (status `failed`) and the deployed one stays below it.

use serde_json::{Value, json};

use super::controllers;
use super::status::{digest_hex, set_condition};
use crate::cluster::{Cluster, SourceKey};

/// How far a Kustomization gets with a bad revision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// No health checks: the apply itself is rejected (`ReconciliationFailed`).
    Apply,
    /// `spec.wait` or `spec.healthChecks`: applied, then unhealthy (`HealthCheckFailed`).
    HealthCheck,
}

/// Where a bad revision fails this Kustomization.
pub fn stage(ks: &Value) -> Stage {
    let checks = ks["spec"]["healthChecks"]
        .as_array()
        .is_some_and(|a| !a.is_empty());
    if ks["spec"]["wait"] == Value::Bool(true) || checks {
        Stage::HealthCheck
    } else {
        Stage::Apply
    }
}

/// The failure message when the artifact `source` publishes was pushed as bad on this
/// cluster. A HelmChart also fails when built from a bad revision of its own source (a
/// pushed HelmRepository index or Git commit).
pub fn bad(cluster: &Cluster, src: &SourceKey, source: &Value) -> Option<String> {
    let revision = source["status"]["artifact"]["revision"].as_str()?;
    if let Some(message) = cluster.bad_revision(src, revision) {
        return Some(message);
    }
    if src.0 == "HelmChart" {
        let upstream = controllers::source_ref("HelmChart", source)?;
        let from = source["status"]["observedSourceArtifactRevision"].as_str()?;
        return cluster.bad_revision(&upstream, from);
    }
    None
}

fn generation(obj: &Value) -> i64 {
    obj["metadata"]["generation"].as_i64().unwrap_or(1)
}

/// Keeps `field` as it was before this reconcile (removed if it was absent).
fn keep_previous(obj: &Value, status: &mut Value, field: &str) {
    match obj["status"].get(field) {
        Some(prev) => status[field] = prev.clone(),
        None => {
            if let Some(m) = status.as_object_mut() {
                m.remove(field);
            }
        }
    }
}

fn remove_condition(status: &mut Value, type_: &str) {
    if let Some(conds) = status["conditions"].as_array_mut() {
        conds.retain(|c| c["type"] != type_);
    }
}

/// The Kustomization's `spec.timeout` (defaulting to `spec.interval`, as `GetTimeout()`).
fn timeout(ks: &Value) -> &str {
    ks["spec"]["timeout"]
        .as_str()
        .or(ks["spec"]["interval"].as_str())
        .unwrap_or("5m")
}

/// Turns the status of a reconcile of `revision` into a failed one. `message` is the apply
/// error (`Stage::Apply`) or what the health check waited for (`Stage::HealthCheck`).
pub fn fail_kustomization(
    obj: &Value,
    status: &mut Value,
    revision: &str,
    message: &str,
    at: Stage,
) {
    let generation = generation(obj);
    status["lastAttemptedRevision"] = json!(revision);
    keep_previous(obj, status, "lastAppliedRevision");
    keep_previous(obj, status, "observedGeneration");
    let (reason, message, progress) = match at {
        Stage::Apply => (
            "ReconciliationFailed",
            message.to_string(),
            format!(
                "Detecting drift for revision {revision} with a timeout of {}",
                timeout(obj)
            ),
        ),
        Stage::HealthCheck => {
            let message = format!("health check failed after {}: {message}", timeout(obj));
            set_condition(
                status,
                "Healthy",
                false,
                "HealthCheckFailed",
                &message,
                generation,
            );
            (
                "HealthCheckFailed",
                message,
                format!(
                    "Running health checks for revision {revision} with a timeout of {}",
                    timeout(obj)
                ),
            )
        }
    };
    set_condition(status, "Ready", false, reason, &message, generation);
    set_condition(
        status,
        "Reconciling",
        true,
        "ProgressingWithRetry",
        &progress,
        generation,
    );
}

/// A successful reconcile (Ready True) after failures: `Reconciling` and `Stalled` go, `Healthy` and
/// `Released` (when present) turn True, helm-controller's failure counters are cleared.
pub fn recovered(obj: &Value, status: &mut Value) {
    let generation = generation(obj);
    let ready = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .filter(|c| c["status"] == "True")
        .cloned();
    let Some(ready) = ready else { return };
    remove_condition(status, "Reconciling");
    remove_condition(status, "Stalled");
    let (reason, message) = (
        ready["reason"].as_str().unwrap_or("Succeeded"),
        ready["message"].as_str().unwrap_or_default(),
    );
    let has = |s: &Value, t: &str| {
        s["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == t))
    };
    if has(status, "Healthy") {
        set_condition(
            status,
            "Healthy",
            true,
            "Succeeded",
            "Health check passed",
            generation,
        );
    }
    if has(status, "Released") {
        set_condition(status, "Released", true, reason, message, generation);
    }
    if let Some(m) = status.as_object_mut() {
        for counter in ["failures", "installFailures", "upgradeFailures"] {
            m.remove(counter);
        }
    }
}

/// The status of a HelmRelease whose install or upgrade to chart `revision` failed, from its
/// status before this reconcile. A repeated reconcile of the same failure only marks it
/// stalled (no retries left), so the status converges.
pub fn fail_helm_release(obj: &Value, revision: &str, message: &str) -> Value {
    let mut status = obj.get("status").cloned().unwrap_or_else(|| json!({}));
    let generation = generation(obj);
    let m = &obj["metadata"];
    let (ns, name) = (
        m["namespace"].as_str().unwrap_or_default(),
        m["name"].as_str().unwrap_or_default(),
    );
    let chart = obj["spec"]["chart"]["spec"]["chart"]
        .as_str()
        .unwrap_or(name);
    let history = status["history"].as_array().cloned().unwrap_or_default();
    let deployed = history.iter().any(|h| h["status"] != "failed");
    let (reason, verb, counter) = if deployed {
        ("UpgradeFailed", "Upgrade", "upgradeFailures")
    } else {
        ("InstallFailed", "Install", "installFailures")
    };
    let repeated = status["lastAttemptedRevision"] == revision
        && history
            .first()
            .is_some_and(|h| h["status"] == "failed" && h["chartVersion"] == revision);
    if repeated {
        set_condition(
            &mut status,
            "Stalled",
            true,
            "NoRemainingRetries",
            "Attempted 0 times but failed",
            generation,
        );
        // Stalled is a final state for this generation: observed.
        status["observedGeneration"] = json!(generation);
        return status;
    }
    // Helm stores the failed attempt as a new release version.
    let version = history
        .first()
        .and_then(|h| h["version"].as_i64())
        .unwrap_or(0)
        + 1;
    let now = crate::managed::now();
    let mut entries = vec![json!({
        "name": name, "namespace": ns, "version": version,
        "chartName": chart, "chartVersion": revision, "status": "failed",
        "firstDeployed": now, "lastDeployed": now,
        "digest": format!("sha256:{}", digest_hex(&format!("{ns}/{name}/{revision}/failed"), 64)),
        "configDigest": format!("sha256:{}", digest_hex(revision, 64)),
    })];
    entries.extend(
        history
            .into_iter()
            .filter(|h| h["status"] != "failed")
            .take(4),
    );
    status["history"] = json!(entries);
    status["lastAttemptedRevision"] = json!(revision);
    status["lastAttemptedReleaseAction"] = json!(verb.to_lowercase());
    for c in ["failures", counter] {
        status[c] = json!(status[c].as_i64().unwrap_or(0) + 1);
    }
    if let Some(r) = controllers::requested_at(obj) {
        status["lastHandledReconcileAt"] = json!(r);
    }
    let message =
        format!("{verb} of release {ns}/{name} with chart {chart}@{revision} failed: {message}");
    set_condition(&mut status, "Released", false, reason, &message, generation);
    set_condition(&mut status, "Ready", false, reason, &message, generation);
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ready(status: &Value) -> (String, String) {
        let c = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .unwrap();
        (
            c["status"].as_str().unwrap().into(),
            c["reason"].as_str().unwrap().into(),
        )
    }

    #[test]
    fn kustomization_keeps_last_applied_and_observed_generation() {
        let ks = json!({"metadata": {"generation": 3}, "spec": {"interval": "1m"},
            "status": {"lastAppliedRevision": "good", "observedGeneration": 2}});
        assert_eq!(stage(&ks), Stage::Apply);
        let mut status = json!({"lastAppliedRevision": "bad", "observedGeneration": 3});
        fail_kustomization(&ks, &mut status, "bad", "denied", Stage::Apply);
        assert_eq!(status["lastAttemptedRevision"], "bad");
        assert_eq!(status["lastAppliedRevision"], "good");
        assert_eq!(status["observedGeneration"], 2);
        assert_eq!(
            ready(&status),
            ("False".into(), "ReconciliationFailed".into())
        );

        let waiting =
            json!({"metadata": {"generation": 1}, "spec": {"wait": true, "timeout": "30s"}});
        assert_eq!(stage(&waiting), Stage::HealthCheck);
        let mut status = json!({});
        fail_kustomization(
            &waiting,
            &mut status,
            "bad",
            "Deployment/apps/web not ready",
            Stage::HealthCheck,
        );
        assert!(status.get("lastAppliedRevision").is_none());
        assert_eq!(ready(&status), ("False".into(), "HealthCheckFailed".into()));
        let healthy = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Healthy")
            .unwrap();
        assert_eq!(
            healthy["message"],
            "health check failed after 30s: Deployment/apps/web not ready"
        );

        set_condition(
            &mut status,
            "Ready",
            true,
            "ReconciliationSucceeded",
            "Applied revision: good",
            1,
        );
        recovered(&waiting, &mut status);
        let types: Vec<&str> = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert!(!types.contains(&"Reconciling"));
        let healthy = status["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Healthy")
            .unwrap();
        assert_eq!(healthy["status"], "True");
    }

    #[test]
    fn helm_release_records_the_failed_attempt_then_stalls() {
        let hr = json!({"metadata": {"name": "web", "namespace": "apps", "generation": 1},
            "spec": {"chart": {"spec": {"chart": "podinfo"}}},
            "status": {"lastAttemptedRevision": "1.0.0", "observedGeneration": 1,
                "history": [{"version": 1, "chartVersion": "1.0.0", "status": "deployed"}]}});
        let status = fail_helm_release(&hr, "1.0.1", "timed out waiting for the condition");
        assert_eq!(ready(&status), ("False".into(), "UpgradeFailed".into()));
        assert_eq!(status["history"][0]["status"], "failed");
        assert_eq!(status["history"][0]["version"], 2);
        assert_eq!(status["history"][1]["chartVersion"], "1.0.0");
        assert_eq!(status["upgradeFailures"], 1);
        let msg = status["conditions"][0]["message"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(
            msg.starts_with("Upgrade of release apps/web with chart podinfo@1.0.1 failed:"),
            "{msg}"
        );
        let again = fail_helm_release(
            &json!({"metadata": hr["metadata"], "spec": hr["spec"], "status": status}),
            "1.0.1",
            "x",
        );
        assert_eq!(again["history"].as_array().unwrap().len(), 2);
        assert!(
            again["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["type"] == "Stalled" && c["status"] == "True")
        );

        let fresh = json!({"metadata": {"name": "web", "namespace": "apps"}, "spec": {}});
        assert_eq!(
            ready(&fail_helm_release(&fresh, "1.0.0", "x")),
            ("False".into(), "InstallFailed".into())
        );
    }
}
