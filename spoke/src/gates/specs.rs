//! What each Gate object is before the evaluation: enforced, invalid (the
//! last valid version stays in force) or skipped with the reason. Standalone,
//! the valid Gate objects selecting this cluster make the enforced snapshot;
//! with a hub, the mirrored ones stand for the hub's gates.

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use kube::{ResourceExt, api::DynamicObject};

use super::{State, is_from_hub, local};
use crate::{context::Context, snapshot::CompiledSnapshot};

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
            Ok(c) => ctx.enforce_local(Arc::new(c)).await,
            Err(e) => {
                tracing::error!(error = %e, "Gate objects did not compile; the previous snapshot stays in force")
            }
        }
    }
    specs
}

/// With a hub: mirrored Gate objects stand for the hub's gates; others are
/// reported as not enforced.
pub(super) fn hub_specs(
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
            // Names are unique in the cluster and in the fleet: the hub's gate
            // is enforced (from the snapshot) and this object stays unused.
            (false, true) => Spec::Skipped {
                ready: false,
                reason: "NameConflict",
                message: format!("the hub's gate '{name}' has this name and wins on this cluster: this Gate object made in the cluster is not enforced (the hub's gate is not mirrored into it either); rename it"),
            },
            (false, false) => Spec::Skipped {
                ready: false,
                reason: "NotEnforced",
                message: "this cluster takes its gates from the hub; Gate objects made in the cluster are enforced by a standalone spoke only (--standalone)".into(),
            },
        };
        specs.insert(name, spec);
    }
    specs
}
