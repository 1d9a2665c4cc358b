//! The Flux simulator: one task per cluster reconciling every Flux object the way the
//! controllers would, in fast-forward time. A pass runs on any Flux object change (new
//! generation, `requestedAt`, a source's new artifact, a push) and when the earliest
//! `spec.interval` (or `SimConfig::reconcile_interval`) falls due. Suspended objects are
//! skipped entirely, as the controllers skip them.

pub mod controllers;
pub mod failure;
pub mod helm;
pub mod kustomize;
pub mod late;
pub mod seed;
pub mod status;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::time::Instant;

use crate::cluster::{Cluster, SourceKey};
use crate::crd::ResourceType;
use crate::ops::{self, Sub, Track, WriteOpts};
use controllers::{is_source, requested_at};

/// How long a pass waits after a change for the rest of a burst of writes. A pass looks
/// at every Flux object of the cluster; run once per write, passes were ~40 % of the
/// simulator's CPU while a gate flip patched every object (8 patches at a time per
/// cluster). The controllers' work queues batch the same way: a key queued many times
/// is reconciled once.
const COALESCE: Duration = Duration::from_millis(5);

/// Runs until the cluster shuts down.
pub async fn run(cluster: Arc<Cluster>) {
    let mut last: HashMap<SourceKey, Instant> = HashMap::new();
    loop {
        let next = pass(&cluster, &mut last);
        tokio::select! {
            _ = cluster.shutdown.cancelled() => return,
            _ = cluster.store.flux_changed.notified() => {
                tokio::select! {
                    _ = cluster.shutdown.cancelled() => return,
                    _ = tokio::time::sleep(COALESCE) => {}
                }
            }
            _ = tokio::time::sleep_until(next) => {}
        }
    }
}

fn interval(cluster: &Cluster, obj: &Value) -> Duration {
    cluster
        .reconcile_interval
        .or_else(|| {
            obj["spec"]["interval"]
                .as_str()
                .and_then(status::parse_duration)
        })
        .unwrap_or(Duration::from_secs(600))
        .max(Duration::from_millis(10))
}

fn id(kind: &str, obj: &Value) -> SourceKey {
    let m = &obj["metadata"];
    (
        kind.to_string(),
        m["namespace"].as_str().unwrap_or_default().to_string(),
        m["name"].as_str().unwrap_or_default().to_string(),
    )
}

/// One sweep over all Flux objects (sources first, so appliers see fresh artifacts);
/// returns when the next one falls due.
fn pass(cluster: &Cluster, last: &mut HashMap<SourceKey, Instant>) -> Instant {
    helm::collect_orphan_charts(cluster);
    let now = Instant::now();
    let mut next = now + Duration::from_secs(3600);
    let mut types: Vec<Arc<ResourceType>> = cluster
        .registry()
        .types()
        .iter()
        .filter(|t| t.is_flux())
        .cloned()
        .collect();
    types.sort_by_key(|t| !is_source(&t.kind));
    for rt in types {
        let objects = cluster.store.with(|s| s.list(&rt.key(), None, None));
        for obj in objects {
            // Checked first: a pass runs after every Flux write, and during a gate flip
            // most objects it sees are suspended.
            if obj["spec"]["suspend"] == Value::Bool(true)
                || obj["metadata"].get("deletionTimestamp").is_some()
            {
                continue;
            }
            let key = id(&rt.kind, &obj);
            let every = interval(cluster, &obj);
            let due = last.get(&key).is_none_or(|t| now >= *t + every);
            // A late-failing revision's health changes at set instants: a pass runs at each.
            let changes = if rt.kind == "Kustomization" {
                late::changes(
                    cluster,
                    &obj,
                    obj["status"]["lastAttemptedRevision"].as_str(),
                )
            } else {
                Vec::new()
            };
            let changed = changes
                .iter()
                .any(|c| *c <= now && last.get(&key).is_some_and(|t| t < c));
            if let Some(c) = changes.iter().filter(|c| **c > now).min() {
                next = next.min(*c);
            }
            let wanted = due || changed || triggered(cluster, &rt, &obj);
            if wanted {
                // Counted before the status write, so a visible result implies the count.
                *cluster
                    .reconciles
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .entry(key.clone())
                    .or_default() += 1;
                reconcile(cluster, &rt, &obj);
                last.insert(key.clone(), now);
            }
            let at = last.get(&key).map_or(now, |t| *t + every);
            next = next.min(at);
        }
    }
    last.retain(|_, t| now.duration_since(*t) < Duration::from_secs(86400));
    next
}

/// Event-driven triggers: new generation, a reconcile request, or new input revisions.
fn triggered(cluster: &Cluster, rt: &ResourceType, obj: &Value) -> bool {
    let st = &obj["status"];
    if st["observedGeneration"] != obj["metadata"]["generation"] {
        return true;
    }
    if requested_at(obj).is_some_and(|r| st["lastHandledReconcileAt"] != r) {
        return true;
    }
    if is_source(&rt.kind) {
        // A push is delivered like a webhook Receiver: reconcile the source now.
        return target_revision(cluster, &rt.kind, obj)
            .is_some_and(|(r, _)| st["artifact"]["revision"] != r.as_str());
    }
    match controllers::source_ref(&rt.kind, obj) {
        Some(src) => {
            let rev = source_revision(cluster, &src);
            let seen = if rt.kind == "ImageUpdateAutomation" {
                &st["lastPushCommit"]
            } else {
                &st["lastAttemptedRevision"]
            };
            rev.as_deref().is_some_and(|r| seen != r)
        }
        None => false,
    }
}

fn source_object(cluster: &Cluster, src: &SourceKey) -> Option<Arc<Value>> {
    let rt = cluster
        .registry()
        .types()
        .iter()
        .find(|t| t.is_flux() && t.kind == src.0)?
        .clone();
    cluster.store.with(|s| s.get(&rt.key(), &src.1, &src.2))
}

fn source_revision(cluster: &Cluster, src: &SourceKey) -> Option<String> {
    source_object(cluster, src)?["status"]["artifact"]["revision"]
        .as_str()
        .map(String::from)
}

/// The revision a source should publish (plus, for a HelmChart, the source revision
/// its chart version comes from).
fn target_revision(cluster: &Cluster, kind: &str, obj: &Value) -> Option<(String, Option<String>)> {
    if kind == "HelmChart" {
        let from =
            controllers::source_ref(kind, obj).and_then(|src| source_revision(cluster, &src));
        return helm::chart_revision(cluster, obj, from.as_deref());
    }
    Some((controllers::upstream_revision(cluster, kind, obj), None))
}

/// A Kustomization whose source revision carries manifests applies them (see `kustomize`);
/// without manifests only the status revisions move, as before. Returns false when the
/// apply failed (the status says why).
fn apply_manifests(
    cluster: &Cluster,
    obj: &Value,
    source: Option<&Value>,
    src: &SourceKey,
    status: &mut Value,
) -> bool {
    let Some(revision) = source.and_then(|s| s["status"]["artifact"]["revision"].as_str()) else {
        return true;
    };
    let Some(bundle) = kustomize::bundle(cluster, src, revision) else {
        return true;
    };
    match kustomize::apply(cluster, obj, &bundle) {
        Ok(applied) => {
            status["inventory"] = serde_json::json!({"entries": applied.inventory});
            true
        }
        Err(message) => {
            failure::fail_kustomization(obj, status, revision, &message, failure::Stage::Apply);
            false
        }
    }
}

/// A Kustomization's reconcile of its source's artifact: a bad revision fails before the
/// apply, or after it when health checks are configured (see `failure`).
fn reconcile_kustomization(
    cluster: &Cluster,
    obj: &Value,
    source: Option<&Value>,
    src: &SourceKey,
    status: &mut Value,
) {
    let bad = source.and_then(|s| failure::bad(cluster, src, s).map(|m| (s, m)));
    let revision = |s: &Value| {
        s["status"]["artifact"]["revision"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    match bad {
        Some((s, message)) if failure::stage(obj) == failure::Stage::Apply => {
            failure::fail_kustomization(obj, status, &revision(s), &message, failure::Stage::Apply);
        }
        Some((s, message)) => {
            if apply_manifests(cluster, obj, source, src, status) {
                let at = failure::Stage::HealthCheck;
                failure::fail_kustomization(obj, status, &revision(s), &message, at);
            }
        }
        None => {
            if !apply_manifests(cluster, obj, source, src, status) {
                return;
            }
            match source.and_then(|s| late::failing(cluster, obj, src, s).map(|m| (s, m))) {
                Some((s, message)) => {
                    let at = failure::Stage::HealthCheck;
                    failure::fail_kustomization(obj, status, &revision(s), &message, at);
                }
                None => failure::recovered(obj, status),
            }
        }
    }
}

fn reconcile(cluster: &Cluster, rt: &ResourceType, obj: &Arc<Value>) {
    let status = if is_source(&rt.kind) {
        let Some((rev, observed)) = target_revision(cluster, &rt.kind, obj) else {
            return; // a HelmChart whose source has no artifact yet
        };
        controllers::reconcile_source(&rt.kind, &rt.plural, obj, &rev, observed.as_deref())
    } else {
        let Some(src) = controllers::source_ref(&rt.kind, obj) else {
            return;
        };
        let generated = rt.kind == "HelmRelease" && !obj["spec"]["chartRef"].is_object();
        if generated {
            helm::ensure_chart(cluster, obj);
        }
        let source = source_object(cluster, &src);
        let mut status = controllers::reconcile_applier(&rt.kind, obj, source.as_deref(), &src);
        if rt.kind == "Kustomization" {
            reconcile_kustomization(cluster, obj, source.as_deref(), &src, &mut status);
        } else if rt.kind == "HelmRelease" {
            let source = source.as_deref();
            match source.and_then(|s| failure::bad(cluster, &src, s).map(|m| (s, m))) {
                Some((s, message)) => {
                    let revision = s["status"]["artifact"]["revision"]
                        .as_str()
                        .unwrap_or_default();
                    status = failure::fail_helm_release(obj, revision, &message);
                }
                None => failure::recovered(obj, &mut status),
            }
        }
        if generated {
            status["helmChart"] = serde_json::json!(format!("{}/{}", src.1, src.2));
        }
        status
    };
    if obj.get("status") == Some(&status) {
        return;
    }
    let mut new = (**obj).clone();
    new["status"] = status;
    let opts = WriteOpts {
        manager: controllers::controller(&rt.kind).to_string(),
        ..WriteOpts::default()
    };
    let m = &obj["metadata"];
    let (ns, name) = (
        m["namespace"].as_str().unwrap_or_default(),
        m["name"].as_str().unwrap_or_default(),
    );
    // Conflicts (the object changed meanwhile) just mean another pass follows.
    if let Err(e) = ops::update(
        cluster,
        rt,
        ns,
        name,
        new,
        Sub::Status,
        &opts,
        Track::Update,
        Some(obj),
    ) {
        tracing::warn!(cluster = %cluster.name, kind = %rt.kind, %ns, %name, error = %e, "status write failed");
    }
}
