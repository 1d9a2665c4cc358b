//! Turns the open/close request annotations on Gate objects into decisions
//! (an Event each), the local overrides the spoke enforces at once, and the
//! accepted requests on hub gates still to be reported to the hub.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use kube::{ResourceExt, api::DynamicObject};
use serde_json::Value;

use super::object::{is_from_hub, reference};
use super::requests::{self, Action, Handled, Judge};
use super::specs::Spec;
use super::state::State;
use super::status;
use crate::{context::Context, hub::snapshot::CompiledSnapshot};

/// Decides new open/close requests and publishes the local overrides.
pub(super) async fn judge_requests(
    ctx: &Context,
    objects: &[Arc<DynamicObject>],
    snapshot: Option<&CompiledSnapshot>,
    specs: &HashMap<String, Spec>,
    state: &mut State,
    now: DateTime<Utc>,
) {
    let mut overrides = Vec::new();
    let mut to_hub = Vec::new();
    let standalone = ctx.config.standalone;
    let mut seen = BTreeSet::new();
    for obj in objects {
        let name = obj.name_any();
        let Some(gate) = snapshot.and_then(|s| s.gate(&name)) else {
            continue;
        };
        if matches!(specs.get(&name), Some(Spec::Skipped { .. }) | None) {
            continue;
        }
        seen.insert(name.clone());
        let status = &obj.data["status"];
        let handled = state.handled.entry(name.clone()).or_default();
        for action in Action::ALL {
            if !handled.contains_key(&action)
                && let Ok(h) =
                    serde_json::from_value::<Handled>(status[action.status_field()].clone())
            {
                handled.insert(action, h);
            }
        }
        let managed: Vec<Value> = obj
            .metadata
            .managed_fields
            .iter()
            .flatten()
            .filter_map(|m| serde_json::to_value(m).ok())
            .collect();
        let reqs = requests::read(obj.annotations(), &managed);
        let last_transition = status::find_condition(status, "Opened")
            .and_then(|c| c["lastTransitionTime"].as_str())
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.to_utc());
        for req in &reqs {
            if handled
                .get(&req.action)
                .is_some_and(|h| h.requested_at == req.requested_at)
            {
                continue;
            }
            let judge = Judge {
                gate: &name,
                spec: &gate.gate().spec,
                from_hub: is_from_hub(obj),
                last_transition,
                now,
            };
            let h = requests::judge(req, &judge);
            ctx.metrics.request(req.action.as_str(), h.accepted);
            let (warning, reason) = if h.accepted {
                (
                    false,
                    if req.action == Action::Open {
                        "OpenRequested"
                    } else {
                        "CloseRequested"
                    },
                )
            } else {
                (true, "RequestIgnored")
            };
            tracing::info!(gate = %name, action = req.action.as_str(), accepted = h.accepted, message = %h.message, "request on Gate");
            if let Err(e) = ctx
                .recorder
                .publish_typed(
                    warning,
                    reason,
                    "Request",
                    h.message.clone(),
                    &reference(obj),
                )
                .await
            {
                tracing::warn!(error = %e, gate = %name, "could not publish the request event");
            }
            handled.insert(req.action, h);
        }
        let from_hub = is_from_hub(obj);
        let hub_overrides = snapshot
            .map(|s| s.snapshot.overrides.as_slice())
            .unwrap_or_default();
        for (action, h) in handled.iter_mut() {
            // A request lasts while its annotation stays: removing it cancels.
            let current = reqs
                .iter()
                .any(|r| r.action == *action && r.requested_at == h.requested_at);
            if !current || !h.accepted || h.cancelled {
                continue;
            }
            if from_hub && !standalone {
                let recorded = hub_overrides
                    .iter()
                    .any(|o| o.gate == name && h.recorded_as(*action, o));
                if recorded {
                    h.acknowledged = true;
                } else if h.acknowledged {
                    // The hub recorded it and no longer sends it: cancelled there.
                    h.cancelled = true;
                    h.message = format!("{}; cancelled at the hub", h.message);
                    if let Err(e) = ctx
                        .recorder
                        .publish_typed(
                            true,
                            "RequestCancelled",
                            "Request",
                            h.message.clone(),
                            &reference(obj),
                        )
                        .await
                    {
                        tracing::warn!(error = %e, gate = %name, "could not publish the cancel event");
                    }
                    continue;
                } else if let Some(m) = h.to_proto(&name, *action) {
                    to_hub.push(m);
                }
            }
            if let Some(o) = requests::to_override(&name, *action, h) {
                overrides.push(o);
            }
        }
    }
    state.handled.retain(|name, _| seen.contains(name));
    ctx.local_overrides.send_if_modified(|cur| {
        if **cur == overrides {
            false
        } else {
            *cur = Arc::new(overrides);
            true
        }
    });
    ctx.local_requests.send_if_modified(|cur| {
        if **cur == to_hub {
            false
        } else {
            *cur = Arc::new(to_hub);
            true
        }
    });
}
