//! One pass over every Gate object: decide what each is, mirror the hub's
//! gates, judge requests, then write each Gate's status (and an Event when
//! its Opened condition flips) from the spoke's own evaluation.

use std::{collections::BTreeMap, sync::Arc};

use chrono::{DateTime, Utc};
use fleetgate_policy::{Evaluation, Override, Rule};
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams},
};
use serde_json::Value;

use super::judge::judge_requests;
use super::object::{is_from_hub, reference};
use super::requests::{Action, LOCAL_ID_PREFIX};
use super::specs::{Spec, hub_specs, standalone_specs};
use super::state::State;
use super::status::{self, Extra, Facts, Verdict};
use super::{mirror, report};
use crate::{context::Context, hub::report::Report, hub::snapshot::CompiledSnapshot};

/// One pass over every Gate object. Returns the next instant a gate changes.
pub(super) async fn pass(
    ctx: &Context,
    api: &Api<DynamicObject>,
    objects: &[Arc<DynamicObject>],
    state: &mut State,
) -> Option<DateTime<Utc>> {
    let now = ctx.config.clock.now();
    let standalone = ctx.config.standalone;
    let specs = if standalone {
        standalone_specs(ctx, objects, state).await
    } else {
        let snapshot = ctx.snapshot.borrow().clone();
        mirror::sync(ctx, api, objects, snapshot.as_deref(), &mut state.mirror).await;
        hub_specs(ctx, objects, snapshot.as_deref()).await
    };
    let snapshot = ctx.snapshot.borrow().clone();
    judge_requests(ctx, objects, snapshot.as_deref(), &specs, state, now).await;

    let local = ctx.local_overrides_now();
    let report = ctx.report.borrow().clone();
    let mut next: Option<DateTime<Utc>> = None;
    let mut local_gates = Vec::new();
    for obj in objects {
        let name = obj.name_any();
        let facts = snapshot
            .as_deref()
            .and_then(|s| facts(s, &name, now, &local, report.as_deref()));
        let verdict = match (specs.get(&name), facts) {
            (Some(Spec::Enforced), Some(f)) => Verdict::Enforced(f),
            (Some(Spec::Invalid(message)), previous) => Verdict::Invalid {
                message: message.clone(),
                previous,
            },
            (
                Some(Spec::Skipped {
                    ready,
                    reason,
                    message,
                }),
                _,
            ) => Verdict::Skipped {
                ready: *ready,
                reason,
                message: message.clone(),
            },
            // Enforced but not in the snapshot (yet): the next pass sees it.
            (Some(Spec::Enforced), None) | (None, _) => continue,
        };
        if let Verdict::Enforced(f)
        | Verdict::Invalid {
            previous: Some(f), ..
        } = &verdict
            && let Some(t) = f.next_transition
        {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let no_requests = BTreeMap::new();
        let extra = Extra {
            generation: obj.metadata.generation,
            revision: snapshot.as_ref().map_or(0, |s| s.revision()),
            origin: if is_from_hub(obj) { "hub" } else { "local" },
            requests: state.handled.get(&name).unwrap_or(&no_requests),
        };
        let status = write_status(ctx, api, obj, &verdict, &extra, now).await;
        if !standalone && !is_from_hub(obj) {
            local_gates.push(report::local_gate(&name, &verdict, &status));
        }
    }
    local_gates.sort_by(|a, b| a.name.cmp(&b.name));
    ctx.local_gates.send_if_modified(|cur| {
        let changed = **cur != local_gates;
        if changed {
            *cur = Arc::new(local_gates);
        }
        changed
    });
    next
}

/// The condition reason for an evaluation: the rule, with overrides made by a
/// request in the cluster named as such.
fn reason_of(eval: &Evaluation, overrides: &[Override], now: DateTime<Utc>) -> &'static str {
    // Open by its rules, closed by a rollout that has not released this cluster.
    if !eval.state.is_open()
        && eval
            .reason
            .starts_with(crate::hub::snapshot::WAITING_FOR_WAVE)
    {
        return "WaitingForWave";
    }
    match eval.rule() {
        Rule::Override => {
            let newest = overrides
                .iter()
                .filter(|o| o.is_active(now))
                .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
            match newest {
                Some(o) if o.id.starts_with(LOCAL_ID_PREFIX) => {
                    if o.state.is_open() {
                        Action::Open.condition_reason()
                    } else {
                        Action::Close.condition_reason()
                    }
                }
                _ => Rule::Override.as_str(),
            }
        }
        rule => rule.as_str(),
    }
}

/// A gate's state on this cluster now, with the objects it governs and holds.
fn facts(
    snapshot: &CompiledSnapshot,
    name: &str,
    now: DateTime<Utc>,
    local: &[Override],
    report: Option<&Report>,
) -> Option<Facts> {
    let eval = snapshot.evaluate_gate(name, now, local)?;
    let overrides = snapshot.overrides_of(name, local);
    let open = eval.state.is_open();
    let (mut governed, mut held, mut suspended, mut would_suspend) = (0, 0, 0, 0);
    for o in report.map(|r| r.objects.as_slice()).unwrap_or_default() {
        if !o.gates.iter().any(|g| g == name) {
            continue;
        }
        governed += 1;
        held += usize::from(o.held && !open);
        suspended += usize::from(o.suspended_by.iter().any(|g| g == name));
        would_suspend += usize::from(o.would_suspend_by.iter().any(|g| g == name));
    }
    let warn = snapshot
        .gate(name)
        .is_some_and(|g| g.gate().spec.enforcement.is_warn());
    Some(Facts {
        open,
        reason: reason_of(&eval, &overrides, now),
        message: eval.reason,
        next_transition: eval.next_transition,
        governed,
        held,
        suspended,
        warn,
        would_suspend,
    })
}

/// Writes a Gate's status when it differs; an Event when Opened flips.
/// Returns the desired status.
async fn write_status(
    ctx: &Context,
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    verdict: &Verdict,
    extra: &Extra<'_>,
    now: DateTime<Utc>,
) -> Value {
    let current = &obj.data["status"];
    let desired = status::desired(current, verdict, extra, now);
    publish_status(ctx, api, obj, &desired).await;
    desired
}

/// Patches the status to `desired` when it differs, with the Events that go
/// with the change.
async fn publish_status(
    ctx: &Context,
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    desired: &Value,
) {
    let current = &obj.data["status"];
    let desired = desired.clone();
    let Some(patch) = status::patch(current, &desired) else {
        return;
    };
    let name = obj.name_any();
    if let Err(e) = api
        .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        let e = crate::Error::from(e);
        ctx.metrics.error(&e);
        tracing::warn!(gate = %name, error = %e, "could not write the Gate status; retrying on the next pass");
        return;
    }
    not_ready_event(ctx, obj, current, &desired).await;
    let was = status::find_condition(current, "Opened").map(|c| c["status"].clone());
    let Some(now_c) = status::find_condition(&desired, "Opened") else {
        return;
    };
    if was.as_ref() == Some(&now_c["status"]) {
        return;
    }
    let open = now_c["status"] == "True";
    // A warn gate holds nothing: its transitions say what it would do.
    let warn = obj.data["spec"]["enforcement"] == "warn";
    let reason = match (open, warn) {
        (true, false) => "GateOpened",
        (false, false) => "GateClosed",
        (true, true) => "GateWouldOpen",
        (false, true) => "GateWouldClose",
    };
    let note = format!(
        "{} ({}): {}",
        if open { "open" } else { "closed" },
        now_c["reason"].as_str().unwrap_or_default(),
        now_c["message"].as_str().unwrap_or_default()
    );
    if let Err(e) = ctx
        .recorder
        .publish(reason, "Evaluate", note, &reference(obj))
        .await
    {
        tracing::warn!(gate = %name, error = %e, "could not publish the transition event");
    }
}

/// A Warning Event when a Gate becomes not Ready (an invalid spec, a Gate made
/// in the cluster that a hub-connected spoke does not enforce, a name taken by
/// the hub's gate), so `kubectl describe` and event-based alerting say why
/// it is ignored; once per change of the Ready reason.
async fn not_ready_event(ctx: &Context, obj: &DynamicObject, current: &Value, desired: &Value) {
    let Some(ready) = status::find_condition(desired, "Ready") else {
        return;
    };
    if ready["status"] != "False" {
        return;
    }
    let key = |c: &Value| (c["status"].clone(), c["reason"].clone());
    if status::find_condition(current, "Ready").map(key) == Some(key(ready)) {
        return;
    }
    // Event reasons are static (the recorder keys series by them).
    let reason = match ready["reason"].as_str() {
        Some("InvalidSpec") => "InvalidSpec",
        Some("NotEnforced") => "NotEnforced",
        Some("NameConflict") => "NameConflict",
        Some("NotInSnapshot") => "NotInSnapshot",
        _ => "NotReady",
    };
    let message = ready["message"].as_str().unwrap_or_default().to_owned();
    if let Err(e) = ctx
        .recorder
        .publish_typed(true, reason, "Validate", message, &reference(obj))
        .await
    {
        tracing::warn!(gate = %obj.name_any(), error = %e, "could not publish the not-ready event");
    }
}
