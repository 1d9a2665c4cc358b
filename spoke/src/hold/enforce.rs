//! Applies planned holds: one JSON merge patch of the metadata per object,
//! carrying the observed resourceVersion (409 → re-read the metadata and
//! re-plan that object), then one `reconcile.fluxcd.io/requestedAt` per owning
//! Kustomization whose objects were released, and `ObjectsHeld` /
//! `ObjectsReleased` Events on those Kustomizations.

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex, PoisonError},
};

use chrono::{SecondsFormat, Utc};
use fleetgate_policy::FluxKind;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::api::{Patch, PatchParams};
use serde_json::json;

use super::{
    marks,
    observed::{AppliedObject, HeldKey, Interner},
    plan::{HoldAction, HoldPlanner, HoldStep},
};
use crate::{
    cluster::observed::ObjectKey, context::Context, error::Error,
    suspend::annotations::REQUESTED_AT, suspend::enforce::FIELD_MANAGER, suspend::plan::GateView,
};

const MAX_ATTEMPTS: usize = 4;

/// An object the spoke changed, as the patch left it.
#[derive(Debug)]
pub struct HeldApplied {
    pub step: HoldStep,
    pub stale_rv: Option<String>,
    pub fresh: AppliedObject,
}

fn body(step: &HoldStep) -> serde_json::Value {
    let rv = step.resource_version.as_deref();
    match &step.action {
        HoldAction::Mark { gates, revision } => {
            marks::mark_patch(rv, gates, revision.as_deref(), Utc::now())
        }
        HoldAction::Relabel { gates } => marks::relabel_patch(rv, gates),
        HoldAction::Release { .. } => marks::release_patch(rv),
    }
}

/// Applies every step with bounded concurrency, then requests reconciles and
/// publishes events. Returns what changed.
pub async fn apply(
    ctx: &Arc<Context>,
    planner: &HoldPlanner<'_>,
    gates: &[GateView],
    steps: Vec<HoldStep>,
) -> Vec<HeldApplied> {
    // Patched copies share their repeated values until the watch catches up.
    let interner = Mutex::new(Interner::default());
    let applied: Vec<HeldApplied> = futures::stream::iter(steps)
        .map(|step| apply_one(ctx, planner, step, &interner))
        .buffer_unordered(ctx.config.patch_concurrency.max(1))
        .filter_map(|a| async move { a })
        .collect()
        .await;
    let mut held: BTreeMap<ObjectKey, Vec<&HeldApplied>> = BTreeMap::new();
    let mut released: BTreeMap<ObjectKey, Vec<&HeldApplied>> = BTreeMap::new();
    for a in &applied {
        let Some(owner) = &a.step.owner else { continue };
        match a.step.action {
            HoldAction::Mark { .. } => held.entry(ObjectKey::clone(owner)).or_default().push(a),
            HoldAction::Release { .. } => {
                released.entry(ObjectKey::clone(owner)).or_default().push(a)
            }
            HoldAction::Relabel { .. } => {}
        }
    }
    // Released objects roll out at once: ask each owner to reconcile now.
    let requests = released.keys().map(|owner| request_reconcile(ctx, owner));
    futures::future::join_all(requests).await;
    for (owner, list) in held {
        publish(ctx, &owner, "ObjectsHeld", "Hold", &list, gates).await;
    }
    for (owner, list) in released {
        publish(ctx, &owner, "ObjectsReleased", "Release", &list, gates).await;
    }
    applied
}

#[tracing::instrument(name = "hold_patch", skip_all, fields(object = %step.key, action = step.action.label()))]
async fn apply_one(
    ctx: &Arc<Context>,
    planner: &HoldPlanner<'_>,
    mut step: HoldStep,
    interner: &Mutex<Interner>,
) -> Option<HeldApplied> {
    let copy = |meta: &kube::core::ObjectMeta, key: &HeldKey| {
        let mut interner = interner.lock().unwrap_or_else(PoisonError::into_inner);
        let mut fresh = AppliedObject::from_meta_in(&key.kind, meta, &mut interner);
        fresh.key = key.clone();
        fresh
    };
    let key = step.key.clone();
    let stale_rv = step.resource_version.as_deref().map(str::to_owned);
    let api = ctx.held.api(&key.kind, &key.namespace).await?;
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    for _ in 0..MAX_ATTEMPTS {
        let result = {
            let _timer = ctx.metrics.time_patch();
            api.patch_metadata(&key.name, &params, &Patch::Merge(&body(&step)))
                .await
        };
        match result.map_err(Error::from) {
            Ok(meta) => {
                ctx.metrics.patched(step.action.label());
                tracing::info!("patched");
                return Some(HeldApplied {
                    fresh: copy(&meta.metadata, &key),
                    step,
                    stale_rv,
                });
            }
            Err(e) if e.is_conflict() => {
                ctx.metrics.error(&e);
                tracing::debug!("conflict; re-reading and re-planning");
                let fresh = match api.get_metadata_opt(&key.name).await {
                    Ok(Some(meta)) => copy(&meta.metadata, &key),
                    Ok(None) => return None,
                    Err(e) => {
                        let e = Error::from(e);
                        ctx.metrics.error(&e);
                        tracing::warn!(error = %e, "re-read after conflict failed");
                        return None;
                    }
                };
                match planner.plan_object(&fresh).0 {
                    Some(next) => step = next,
                    None => return None,
                }
            }
            Err(e) if e.is_not_found() => return None,
            Err(e) => {
                ctx.metrics.error(&e);
                tracing::warn!(error = %e, "hold patch failed; retried on the next pass");
                return None;
            }
        }
    }
    tracing::warn!("gave up after repeated conflicts; retried on the next pass");
    None
}

/// `reconcile.fluxcd.io/requestedAt` on the owning Kustomization (nanoseconds,
/// so two releases within a second still differ; Flux reacts to a change).
async fn request_reconcile(ctx: &Context, owner: &ObjectKey) {
    let Some((api, _)) = ctx
        .watches
        .api(FluxKind::Kustomization, &owner.namespace)
        .await
    else {
        return;
    };
    let now = Utc::now().to_rfc3339_opts(SecondsFormat::Nanos, true);
    let patch = json!({"metadata": {"annotations": {REQUESTED_AT: now}}});
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    match api.patch(&owner.name, &params, &Patch::Merge(&patch)).await {
        Ok(_) => ctx.metrics.patched("request_reconcile"),
        Err(e) => {
            let e = Error::from(e);
            ctx.metrics.error(&e);
            tracing::warn!(kustomization = %owner, error = %e, "could not request a reconcile");
        }
    }
}

/// `'nginx-window': default (closed); 'b': deny window 'w' until 17:00 CET` — each closed
/// gate with its reason after a colon (a reason may hold brackets itself: `default (closed)`
/// in brackets read `(default (closed))`).
fn closed_gates(names: &[&String], gates: &[GateView]) -> String {
    names
        .iter()
        .map(|n| match gates.iter().find(|g| &&g.name == n) {
            Some(g) if !g.reason.is_empty() => format!("'{n}': {}", g.reason),
            _ => format!("'{n}'"),
        })
        .collect::<Vec<_>>()
        .join("; ")
}

async fn publish(
    ctx: &Context,
    owner: &ObjectKey,
    reason: &'static str,
    action: &'static str,
    list: &[&HeldApplied],
    gates: &[GateView],
) {
    let names: Vec<String> = list
        .iter()
        .take(10)
        .map(|a| a.step.key.to_string())
        .collect();
    let more = list.len().saturating_sub(names.len());
    let objects = if more > 0 {
        format!("{} and {more} more", names.join(", "))
    } else {
        names.join(", ")
    };
    let note = match reason {
        "ObjectsHeld" => {
            let mut gate_names: Vec<&String> = list
                .iter()
                .flat_map(|a| match &a.step.action {
                    HoldAction::Mark { gates, .. } => gates.iter().collect(),
                    _ => Vec::new(),
                })
                .collect();
            gate_names.sort();
            gate_names.dedup();
            format!(
                "fleetgate holds {} object(s) of this Kustomization (kustomize.toolkit.fluxcd.io/reconcile: disabled): {objects}; closed gate(s) {}",
                list.len(),
                closed_gates(&gate_names, gates)
            )
        }
        _ => format!(
            "fleetgate released {} object(s) and requested a reconcile: {objects}",
            list.len()
        ),
    };
    let kind = FluxKind::Kustomization;
    let reference = ObjectReference {
        api_version: Some(kind.api_version()),
        kind: Some(kind.as_str().into()),
        name: Some(owner.name.clone()),
        namespace: Some(owner.namespace.clone()),
        ..ObjectReference::default()
    };
    if let Err(e) = ctx.recorder.publish(reason, action, note, &reference).await {
        let e = Error::from(e);
        ctx.metrics.error(&e);
        tracing::warn!(error = %e, reason, "could not publish event");
    }
}

#[cfg(test)]
mod closed_gates_tests {
    use super::*;

    #[test]
    fn each_closed_gate_with_its_reason_without_doubled_brackets() {
        let view = |name: &str, reason: &str| GateView {
            name: name.into(),
            mode: fleetgate_policy::Mode::HoldObjects,
            targets: Default::default(),
            objects: None,
            open: false,
            reason: reason.into(),
            warn: false,
        };
        let gates = [view("nginx-window", "default (closed)"), view("freeze", "")];
        let (a, b) = ("nginx-window".to_string(), "freeze".to_string());
        assert_eq!(
            closed_gates(&[&a, &b], &gates),
            "'nginx-window': default (closed); 'freeze'"
        );
    }
}
