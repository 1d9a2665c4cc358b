//! Applies planned steps: one JSON merge patch per object, carrying the
//! observed resourceVersion. On 409 the object is re-read and re-planned, so a
//! concurrent human edit is never overwritten blindly. Publishes a Kubernetes
//! Event (`GateClosed` / `GateOpened`) for each suspend and resume, once the
//! pass's patches are done: an Event is one more API request, and sending it
//! in the patch's slot delayed the next object's patch by that much.

use std::sync::Arc;

use chrono::Utc;
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Resource,
    api::{Patch, PatchParams},
    core::ApiResource,
};

use crate::{
    cluster::flux_object::FluxObject,
    cluster::observed::{ObservedObject, Shared},
    context::Context,
    error::Error,
    suspend::annotations,
    suspend::plan::{Action, GateView, Planner, Step},
};

/// The field manager named in patches and managedFields.
pub const FIELD_MANAGER: &str = "fleetgate-spoke";
/// Re-read/re-plan rounds after a 409 before giving up until the next pass.
const MAX_ATTEMPTS: usize = 4;

/// An object the spoke changed: the watch store may still hold `stale_rv`
/// for a moment; `fresh` is the object as the patch left it.
#[derive(Debug)]
pub struct Applied {
    pub stale_rv: Option<String>,
    pub fresh: ObservedObject,
}

impl Action {
    /// A short label for metrics and logs.
    pub fn label(&self) -> &'static str {
        match self {
            Action::Suspend { .. } => "suspend",
            Action::Relabel { .. } => "relabel",
            Action::Resume { .. } => "resume",
            Action::ClearMark => "clear_mark",
        }
    }
}

fn patch_body(step: &Step) -> serde_json::Value {
    let rv = step.resource_version.as_deref();
    let now = Utc::now();
    let freeze = step.freeze_reason.as_deref();
    let patch = match &step.action {
        Action::Suspend { gates } => {
            annotations::with_freeze(annotations::suspend_patch(rv, gates, now), freeze)
        }
        Action::Relabel { gates } => {
            annotations::with_freeze(annotations::relabel_patch(rv, gates), freeze)
        }
        Action::Resume { .. } => annotations::resume_patch(rv, now),
        Action::ClearMark => annotations::clear_patch(rv),
    };
    match step.pin {
        Some(pin) => annotations::with_pin(patch, pin),
        None => patch,
    }
}

/// An Event to publish about a patched object.
struct Notice {
    reason: &'static str,
    action: &'static str,
    note: String,
    regarding: ObjectReference,
    /// The object's last applied revision (for Flux's notification-controller).
    revision: Option<String>,
}

/// Applies every step with bounded concurrency, then publishes each suspend's
/// and resume's Event (with the same concurrency); returns what changed.
pub async fn apply(
    ctx: &Arc<Context>,
    planner: &Planner<'_>,
    gates: &[GateView],
    steps: Vec<Step>,
) -> Vec<Applied> {
    let done: Vec<(Applied, Option<Notice>)> = futures::stream::iter(steps)
        .map(|step| apply_one(ctx, planner, gates, step))
        .buffer_unordered(ctx.config.patch_concurrency.max(1))
        .filter_map(|applied| async move { applied })
        .collect()
        .await;
    let (applied, notices): (Vec<Applied>, Vec<Option<Notice>>) = done.into_iter().unzip();
    futures::stream::iter(notices.into_iter().flatten())
        .for_each_concurrent(ctx.config.patch_concurrency.max(1), |n| {
            publish_event(ctx, n)
        })
        .await;
    applied
}

#[tracing::instrument(name = "patch", skip_all, fields(object = %step.key, action = step.action.label()))]
async fn apply_one(
    ctx: &Arc<Context>,
    planner: &Planner<'_>,
    gates: &[GateView],
    mut step: Step,
) -> Option<(Applied, Option<Notice>)> {
    let key = step.key.clone();
    let stale_rv = step.resource_version.clone();
    let (api, resource) = ctx.watches.api(key.kind, &key.namespace).await?;
    let params = PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    };
    for _ in 0..MAX_ATTEMPTS {
        let body = patch_body(&step);
        let result = {
            let _timer = ctx.metrics.time_patch();
            api.patch(&key.name, &params, &Patch::Merge(&body)).await
        };
        match result.map_err(Error::from) {
            Ok(obj) => {
                ctx.metrics.patched(step.action.label());
                tracing::info!(action = step.action.label(), "patched");
                let notice = notice(&resource, &obj, &step, gates);
                let applied = Applied {
                    stale_rv,
                    fresh: ObservedObject::from_flux(step.key.kind, obj, &mut Shared::default()),
                };
                return Some((applied, notice));
            }
            Err(e) if e.is_conflict() => {
                ctx.metrics.error(&e);
                tracing::debug!("conflict; re-reading and re-planning");
                let fresh = match api.get_opt(&key.name).await {
                    Ok(Some(obj)) => {
                        ObservedObject::from_flux(key.kind, obj, &mut Shared::default())
                    }
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
                    // Someone else already did it (or made it a person's suspend).
                    None => {
                        let applied = Applied { stale_rv, fresh };
                        return Some((applied, None));
                    }
                }
            }
            Err(e) if e.is_not_found() => return None,
            Err(e) => {
                ctx.metrics.error(&e);
                tracing::warn!(action = step.action.label(), error = %e, "patch failed; retried on the next pass");
                return None;
            }
        }
    }
    tracing::warn!("gave up after repeated conflicts; retried on the next pass");
    None
}

fn describe(names: &[String], gates: &[GateView]) -> String {
    names
        .iter()
        .map(|n| match gates.iter().find(|g| &g.name == n) {
            Some(g) if !g.reason.is_empty() => format!("'{n}' ({})", g.reason),
            _ => format!("'{n}'"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether a fleet freeze closed any of the gates `names` (the Event says `Frozen`).
fn frozen(names: &[String], gates: &[GateView]) -> bool {
    gates
        .iter()
        .any(|g| names.contains(&g.name) && !g.open && g.reason.starts_with("fleet freeze"))
}

/// The Event a patch earns: suspends and resumes only.
fn notice(
    resource: &ApiResource,
    obj: &FluxObject,
    step: &Step,
    gates: &[GateView],
) -> Option<Notice> {
    let pinned = if step.pin == Some(true) {
        "; a parent Kustomization applies it, so it also carries kustomize.toolkit.fluxcd.io/reconcile: disabled (fleetgate.io/pinned) and the parent cannot revert the suspend"
    } else {
        ""
    };
    let (reason, action_name, note) = match &step.action {
        Action::Suspend { gates: names } => (
            if frozen(names, gates) {
                "Frozen"
            } else {
                "GateClosed"
            },
            "Suspend",
            format!(
                "fleetgate suspended this object: closed gate(s) {}{pinned}",
                describe(names, gates)
            ),
        ),
        Action::Resume { gates: names } => (
            "GateOpened",
            "Resume",
            format!(
                "fleetgate resumed this object and requested a reconcile: gate(s) {} no longer hold it",
                describe(names, gates)
            ),
        ),
        Action::Relabel { .. } | Action::ClearMark => return None,
    };
    Some(Notice {
        reason,
        action: action_name,
        // The recorder fits it to the API server's 1024 bytes (`events::fit_text`).
        note,
        regarding: obj.object_ref(resource),
        // What the spoke reports as applied: a HelmRelease v2 has no lastAppliedRevision,
        // its deployed chart version is in `status.history`.
        revision: crate::cluster::observed::last_applied(step.key.kind, obj).map(str::to_owned),
    })
}

async fn publish_event(ctx: &Context, n: Notice) {
    let reason = n.reason;
    if let Err(e) = ctx
        .recorder
        .publish_revision(
            reason,
            n.action,
            n.note,
            &n.regarding,
            n.revision.as_deref(),
        )
        .await
    {
        let e = Error::from(e);
        ctx.metrics.error(&e);
        tracing::warn!(error = %e, reason, "could not publish event");
    }
}
