//! Gate objects in the cluster (`gates.fleetgate.io`, cluster-scoped). One
//! loop watches them and, on every change, snapshot, report or transition:
//! - standalone (`--standalone`): builds the snapshot from the valid Gate
//!   objects selecting this cluster (an invalid edit keeps the last valid
//!   version in force);
//! - with a hub: mirrors the hub's gates into Gate objects and reverts edits;
//! - turns open/close request annotations into local overrides (offline too);
//! - keeps every Gate's status (Opened, Ready, counts) and publishes an Event
//!   at each transition.

mod local;
mod mirror;
pub mod requests;
pub mod status;

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
    time::Duration,
};

use chrono::{DateTime, Utc};
use fleetgate_policy::{Evaluation, Override, Rule};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::{
    Api, ResourceExt,
    api::{DynamicObject, Patch, PatchParams},
    core::{ApiResource, GroupVersionKind},
    discovery::pinned_kind,
    runtime::{WatchStreamExt, reflector, watcher},
};
use serde_json::Value;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::{context::Context, report::Report, snapshot::CompiledSnapshot};
use requests::{Action, Handled, Judge, LOCAL_ID_PREFIX};
use status::{Extra, Facts, Verdict};

pub const GROUP: &str = "fleetgate.io";
pub const VERSION: &str = "v1";
pub const KIND: &str = "Gate";
/// `hub` on Gate objects the spoke mirrors from the hub.
pub const ORIGIN_LABEL: &str = "fleetgate.io/origin";
/// The hub's version of a mirrored gate (tells a person's edit from the hub's).
pub const HUB_VERSION_ANNOTATION: &str = "fleetgate.io/hub-version";

/// Watch bursts (a status write echoing back) are coalesced this long.
const COALESCE: Duration = Duration::from_millis(20);

/// The API resource of Gate objects.
pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(GROUP, VERSION, KIND), "gates")
}

/// Whether a Gate object is one the spoke mirrors from the hub.
pub fn is_from_hub(obj: &DynamicObject) -> bool {
    obj.labels().get(ORIGIN_LABEL).map(String::as_str) == Some("hub")
}

/// A reference to a Gate object for Events.
fn reference(obj: &DynamicObject) -> ObjectReference {
    ObjectReference {
        api_version: Some(format!("{GROUP}/{VERSION}")),
        kind: Some(KIND.to_owned()),
        name: Some(obj.name_any()),
        uid: obj.uid(),
        resource_version: obj.resource_version(),
        ..ObjectReference::default()
    }
}

/// What the loop remembers between passes.
#[derive(Default)]
struct State {
    /// Standalone: the last valid version of each gate.
    in_force: local::InForce,
    /// Requests decided, per gate (seeded from the Gate's status).
    handled: HashMap<String, BTreeMap<Action, Handled>>,
    /// Mirrored objects as the spoke last wrote them (name → resourceVersion).
    mirror: mirror::Written,
}

/// Waits until the Gate CRD is served; `None` on shutdown.
async fn wait_for_crd(ctx: &Context, shutdown: &CancellationToken) -> Option<Api<DynamicObject>> {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, KIND);
    let mut logged = false;
    loop {
        match pinned_kind(ctx.watches.client(), &gvk).await {
            Ok((resource, _)) => {
                return Some(Api::all_with(ctx.watches.client().clone(), &resource));
            }
            Err(e) => {
                if !logged {
                    tracing::warn!(error = %e, "Gate CRD (gates.fleetgate.io) not served; Gate objects are skipped until it is installed");
                    logged = true;
                }
            }
        }
        let period = ctx
            .config
            .discovery_interval
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(period) => {}
        }
    }
}

/// Runs until `shutdown`.
pub async fn run(ctx: Arc<Context>, shutdown: CancellationToken) {
    let Some(api) = wait_for_crd(&ctx, &shutdown).await else {
        return;
    };
    let writer = reflector::store::Writer::new(resource());
    let store = writer.as_reader();
    let changed = Arc::new(Notify::new());
    let (notify, sd) = (changed.clone(), shutdown.clone());
    let stream =
        reflector(writer, watcher(api.clone(), watcher::Config::default())).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                _ = sd.cancelled() => break,
                event = stream.next() => match event {
                    Some(Ok(_)) => notify.notify_one(),
                    Some(Err(e)) => tracing::warn!(error = %e, "Gate watch error; retrying with backoff"),
                    None => break,
                },
            }
        }
    });
    tokio::select! {
        _ = shutdown.cancelled() => return,
        r = store.wait_until_ready() => if r.is_err() { return },
    }
    tracing::info!(standalone = ctx.config.standalone, "watching Gate objects");
    let mut state = State::default();
    let mut snapshot_rx = ctx.snapshot.subscribe();
    let mut report_rx = ctx.report.subscribe();
    loop {
        snapshot_rx.borrow_and_update();
        report_rx.borrow_and_update();
        let objects = store.state();
        let next = pass(&ctx, &api, &objects, &mut state).await;
        let resync = tokio::time::Instant::now() + ctx.config.resync_interval;
        let wake = next.map_or(resync, |t| resync.min(crate::controller::instant_of(t)));
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = changed.notified() => tokio::time::sleep(COALESCE).await,
            r = snapshot_rx.changed() => if r.is_err() { return },
            r = report_rx.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}

/// What one Gate object is, before the evaluation.
enum Spec {
    Enforced,
    Invalid(String),
    Skipped {
        ready: bool,
        reason: &'static str,
        message: String,
    },
}

/// One pass over every Gate object. Returns the next instant a gate changes.
async fn pass(
    ctx: &Context,
    api: &Api<DynamicObject>,
    objects: &[Arc<DynamicObject>],
    state: &mut State,
) -> Option<DateTime<Utc>> {
    let now = Utc::now();
    let standalone = ctx.config.standalone;
    let specs = if standalone {
        standalone_specs(ctx, objects, state)
    } else {
        let snapshot = ctx.snapshot.borrow().clone();
        mirror::sync(ctx, api, objects, snapshot.as_deref(), &mut state.mirror).await;
        hub_specs(objects, snapshot.as_deref())
    };
    let snapshot = ctx.snapshot.borrow().clone();
    judge_requests(ctx, objects, snapshot.as_deref(), &specs, state, now).await;

    let local = ctx.local_overrides.borrow().clone();
    let report = ctx.report.borrow().clone();
    let mut next: Option<DateTime<Utc>> = None;
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
        write_status(ctx, api, obj, &verdict, &extra, now).await;
    }
    next
}

/// Standalone: validates every Gate object, keeps the valid ones selecting
/// this cluster in force and enforces the snapshot they make.
fn standalone_specs(
    ctx: &Context,
    objects: &[Arc<DynamicObject>],
    state: &mut State,
) -> HashMap<String, Spec> {
    let cluster = &ctx.config.cluster;
    let names: BTreeSet<String> = objects.iter().map(|o| o.name_any()).collect();
    state
        .in_force
        .retain(&names.iter().map(String::as_str).collect());
    let mut specs = HashMap::new();
    for obj in objects {
        let name = obj.name_any();
        let spec = &obj.data["spec"];
        let verdict = match local::validate(&name, spec) {
            Ok(gate) if gate.spec.clusters.matches(cluster, &BTreeMap::new()) => {
                let generation = obj.metadata.generation.and_then(|g| u64::try_from(g).ok());
                state.in_force.set(&name, generation.unwrap_or(0), spec);
                Spec::Enforced
            }
            Ok(_) => {
                state.in_force.remove(&name);
                Spec::Skipped {
                    ready: true,
                    reason: "OtherCluster",
                    message: format!(
                        "spec.clusters does not select cluster '{cluster}': not enforced here"
                    ),
                }
            }
            Err(message) => Spec::Invalid(message),
        };
        specs.insert(name, verdict);
    }
    let current = ctx.snapshot.borrow().clone();
    if let Some(snapshot) = state
        .in_force
        .snapshot(cluster, current.as_deref().map(|c| &c.snapshot))
    {
        match CompiledSnapshot::compile(snapshot) {
            Ok(c) => ctx.enforce_local(Arc::new(c)),
            Err(e) => {
                tracing::error!(error = %e, "Gate objects did not compile; the previous snapshot stays in force")
            }
        }
    }
    specs
}

/// With a hub: mirrored Gate objects stand for the hub's gates; others are
/// reported as not enforced.
fn hub_specs(
    objects: &[Arc<DynamicObject>],
    snapshot: Option<&CompiledSnapshot>,
) -> HashMap<String, Spec> {
    let mut specs = HashMap::new();
    for obj in objects {
        let name = obj.name_any();
        let in_snapshot = snapshot.is_some_and(|s| s.gate(&name).is_some());
        let spec = match (is_from_hub(obj), in_snapshot) {
            (true, true) => Spec::Enforced,
            (true, false) => Spec::Skipped {
                ready: false,
                reason: "NotInSnapshot",
                message: "the hub no longer sends this gate for this cluster".into(),
            },
            (false, _) => Spec::Skipped {
                ready: false,
                reason: "NotEnforced",
                message: "this cluster takes its gates from the hub; Gate objects made in the cluster are enforced by a standalone spoke only (--standalone)".into(),
            },
        };
        specs.insert(name, spec);
    }
    specs
}

/// Decides new open/close requests and publishes the local overrides.
async fn judge_requests(
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

/// The condition reason for an evaluation: the rule, with overrides made by a
/// request in the cluster named as such.
fn reason_of(eval: &Evaluation, overrides: &[Override], now: DateTime<Utc>) -> &'static str {
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
    let (mut governed, mut held, mut suspended) = (0, 0, 0);
    for o in report.map(|r| r.objects.as_slice()).unwrap_or_default() {
        if !o.gates.iter().any(|g| g == name) {
            continue;
        }
        governed += 1;
        held += usize::from(o.held && !open);
        suspended += usize::from(o.suspended_by.iter().any(|g| g == name));
    }
    Some(Facts {
        open,
        reason: reason_of(&eval, &overrides, now),
        message: eval.reason,
        next_transition: eval.next_transition,
        governed,
        held,
        suspended,
    })
}

/// Writes a Gate's status when it differs; an Event when Opened flips.
async fn write_status(
    ctx: &Context,
    api: &Api<DynamicObject>,
    obj: &DynamicObject,
    verdict: &Verdict,
    extra: &Extra<'_>,
    now: DateTime<Utc>,
) {
    let current = &obj.data["status"];
    let desired = status::desired(current, verdict, extra, now);
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
    let was = status::find_condition(current, "Opened").map(|c| c["status"].clone());
    let Some(now_c) = status::find_condition(&desired, "Opened") else {
        return;
    };
    if was.as_ref() == Some(&now_c["status"]) {
        return;
    }
    let open = now_c["status"] == "True";
    let reason = if open { "GateOpened" } else { "GateClosed" };
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
