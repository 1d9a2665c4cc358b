//! Revisions that fail late: a Kustomization applies the revision and its health checks pass
//! (Ready=True, `lastAppliedRevision` advanced), then, `after` it was applied, the workload
//! degrades and the next reconcile's health check fails: Ready=False `HealthCheckFailed`
//! while `lastAppliedRevision` stays at the revision — for `lasting`, then healthy again, or
//! until a newer revision. Pushed with `"ready": false, "failAfter": "20s"` (and optionally
//! `"failFor"`), so a test can tell "Ready=False for failureGrace" from "Ready=False at some
//! point after the release" (issue 32).
//!
//! After fluxcd/kustomize-controller `internal/controller/kustomization_controller.go`:
//! `reconcile()` runs `checkHealth()` on every reconcile of a Kustomization with `spec.wait`
//! or `spec.healthChecks`, not only for a new revision; `checkHealth()` waits up to
//! `spec.timeout` (`GetTimeout()`) for the applied objects (fluxcd/pkg `ssa` `WaitForSet`)
//! and on failure marks Ready=False and Healthy=False with `HealthCheckFailedReason`
//! (fluxcd/pkg `runtime/conditions` `MarkFalse`), "health check failed after …"; the
//! controller sets `lastAppliedRevision` only after a passing health check, so a revision
//! that passed once keeps it. The simulator turns the failure on at the instant (a pass is
//! scheduled for it) rather than waiting out `spec.timeout`.

use serde_json::Value;
use tokio::time::Instant;

pub use crate::cluster::LateFailure;
use crate::cluster::{Cluster, SourceKey};

fn key(ks: &Value) -> SourceKey {
    let m = &ks["metadata"];
    (
        "Kustomization".into(),
        m["namespace"].as_str().unwrap_or_default().into(),
        m["name"].as_str().unwrap_or_default().into(),
    )
}

/// The late failure of the revision `source` publishes, with when `ks` first applied it
/// (recorded now if it had not).
fn applied(
    cluster: &Cluster,
    ks: &Value,
    src: &SourceKey,
    source: &Value,
) -> Option<(LateFailure, Instant)> {
    let revision = source["status"]["artifact"]["revision"].as_str()?;
    let late = cluster.late_failure(src, revision)?;
    let at = *cluster
        .late_applied
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry((key(ks), revision.to_string()))
        .or_insert_with(Instant::now);
    Some((late, at))
}

/// The health check's failure message when `ks`, having applied the revision `source`
/// publishes, fails now; `None` when it is healthy now (or the revision fails no later).
pub fn failing(cluster: &Cluster, ks: &Value, src: &SourceKey, source: &Value) -> Option<String> {
    let (late, applied) = applied(cluster, ks, src, source)?;
    let since = Instant::now().saturating_duration_since(applied);
    let failing = since >= late.after && late.lasting.is_none_or(|l| since < late.after + l);
    failing.then_some(late.message)
}

/// The instants at which `ks`'s health changes (the failure starts, and ends), once it has
/// applied a late-failing revision: the reconcile loop runs a pass at each.
pub fn changes(cluster: &Cluster, ks: &Value, revision: Option<&str>) -> Vec<Instant> {
    let Some(revision) = revision else {
        return Vec::new();
    };
    let applied = cluster
        .late_applied
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&(key(ks), revision.to_string()))
        .copied();
    let Some(applied) = applied else {
        return Vec::new();
    };
    let marks = cluster
        .late_failures
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    let Some(late) = marks
        .iter()
        .find(|((_, r), _)| r == revision)
        .map(|(_, l)| l.clone())
    else {
        return Vec::new();
    };
    let start = applied + late.after;
    let mut out = vec![start];
    if let Some(l) = late.lasting {
        out.push(start + l);
    }
    out
}
