//! What each Gate object is before the evaluation: enforced, invalid (the
//! last valid version stays in force) or skipped with the reason. Standalone,
//! the valid Gate objects selecting this cluster make the enforced snapshot;
//! with a hub, the mirrored ones stand for the hub's gates and the ones made
//! in the cluster are enforced beside them only if the hub says so.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use kube::{ResourceExt, api::DynamicObject};

use super::local;
use super::object::is_from_hub;
use super::state::State;
use crate::{
    context::Context,
    hub::snapshot::{CompiledSnapshot, GateRule},
};

/// What one Gate object is, before the evaluation.
pub(super) enum Spec {
    Enforced,
    Invalid(String),
    Skipped {
        ready: bool,
        reason: &'static str,
        message: String,
    },
}

/// Standalone: validates every Gate object, keeps the valid ones selecting
/// this cluster in force and enforces (and persists) the snapshot they make.
pub(super) async fn standalone_specs(
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
        let spec = &local::in_cluster(&obj.data["spec"], cluster);
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
            Ok(c) => ctx.enforce_local(Arc::new(c)).await,
            Err(e) => {
                tracing::error!(error = %e, "Gate objects did not compile; the previous snapshot stays in force")
            }
        }
    }
    specs
}

/// With a hub: mirrored Gate objects stand for the hub's gates. Gate objects
/// made in the cluster are enforced beside them when the hub says so
/// (`--local-gates enforce`), validated as a standalone spoke does (an invalid
/// edit keeps the last valid version in force); otherwise they are reported as
/// not enforced. A name the hub's gate takes is a conflict: the hub's wins.
pub(super) async fn hub_specs(
    ctx: &Context,
    objects: &[Arc<DynamicObject>],
    snapshot: Option<&CompiledSnapshot>,
) -> HashMap<String, Spec> {
    let enforce = snapshot.is_some_and(|s| s.snapshot.local_gates_enforced);
    // The last valid versions in force (persisted with the hub's snapshot).
    let mut in_force: BTreeMap<String, GateRule> = snapshot
        .map(|s| s.snapshot.local_gates.iter())
        .into_iter()
        .flatten()
        .map(|r| (r.name.clone(), r.clone()))
        .collect();
    in_force.retain(|name, _| {
        objects
            .iter()
            .any(|o| !is_from_hub(o) && o.name_any() == *name)
    });
    let mut specs = HashMap::new();
    for obj in objects {
        let name = obj.name_any();
        let hub_gate = snapshot.is_some_and(|s| s.is_hub_gate(&name));
        let spec = match (is_from_hub(obj), hub_gate) {
            (true, true) => Spec::Enforced,
            (true, false) => Spec::Skipped {
                ready: false,
                reason: "NotInSnapshot",
                message: "the hub no longer sends this gate for this cluster".into(),
            },
            // Names are unique in the cluster and in the fleet: the hub's gate
            // is enforced (from the snapshot) and this object stays unused.
            (false, true) => {
                in_force.remove(&name);
                Spec::Skipped {
                    ready: false,
                    reason: "NameConflict",
                    message: format!("the hub's gate '{name}' has this name and wins on this cluster: this Gate object made in the cluster is not enforced (the hub's gate is not mirrored into it either); rename it"),
                }
            }
            (false, false) if enforce => local_spec(ctx, obj, &mut in_force),
            (false, false) => Spec::Skipped {
                ready: false,
                reason: "NotEnforced",
                message: "the hub does not enforce Gate objects made in the cluster on hub-connected clusters (hub setting --local-gates=ignore, the default; set --local-gates=enforce at the hub, or run the spoke --standalone)".into(),
            },
        };
        specs.insert(name, spec);
    }
    let rules = if enforce {
        in_force.into_values().collect()
    } else {
        Vec::new()
    };
    ctx.set_local_gates(rules).await;
    specs
}

/// A Gate object made in the cluster that the hub lets this spoke enforce:
/// valid and selecting this cluster (by name; the spoke does not know the
/// cluster's labels at the hub) → in force; invalid → its last valid version
/// stays in force.
fn local_spec(
    ctx: &Context,
    obj: &DynamicObject,
    in_force: &mut BTreeMap<String, GateRule>,
) -> Spec {
    let name = obj.name_any();
    let spec = &local::in_cluster(&obj.data["spec"], &ctx.config.cluster);
    match local::validate(&name, spec) {
        Ok(gate)
            if gate
                .spec
                .clusters
                .matches(&ctx.config.cluster, &BTreeMap::new()) =>
        {
            let generation = obj.metadata.generation.and_then(|g| u64::try_from(g).ok());
            in_force.insert(
                name.clone(),
                GateRule {
                    name: name.clone(),
                    version: generation.unwrap_or(0),
                    manifest: local::manifest(&name, spec),
                    release: None,
                    waiting: None,
                    opening_fence: None,
                    calendars: Vec::new(),
                },
            );
            Spec::Enforced
        }
        Ok(_) => {
            in_force.remove(&name);
            Spec::Skipped {
                ready: true,
                reason: "OtherCluster",
                message: format!(
                    "spec.clusters does not select cluster '{}': not enforced here",
                    ctx.config.cluster
                ),
            }
        }
        Err(message) => Spec::Invalid(message),
    }
}
