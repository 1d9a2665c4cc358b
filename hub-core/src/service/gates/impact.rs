//! The impact preview of a gate manifest before it is applied (`?dryRun=true`, `gate apply
//! --dry-run`): the same validation and permission as a real create or replace, then, from one
//! fleet read and the spokes' latest Flux inventories, the clusters it would govern (added and
//! removed against the stored version), each one's state now and transitions in the coming 7
//! days, and the objects it would govern and hold now. Nothing is written, nothing audited.

use std::collections::{BTreeSet, HashMap};

use chrono::Duration;
use fleetgate_api_types::impact::{
    ClusterImpact, GateImpact, ImpactCounts, ImpactTransition, ImpactWave, InventoryObject,
    ObjectRef,
};
use fleetgate_policy::{FluxKind, Gate, GateSpec, Mode, WaveCandidate, assign_waves};

use crate::service::fleet::{GateInput, Scope};
use crate::service::types::FieldWarning;
use crate::service::{Actor, Role, Service};
use crate::{Error, Result};

/// How far the preview looks ahead.
pub const HORIZON_DAYS: i64 = 7;

/// What the dry run stands for: a create (`POST`) or a replace of `name` (`PUT`).
#[derive(Debug, Clone, Copy)]
pub enum DryRun<'a> {
    Create,
    Replace {
        name: &'a str,
        if_match: Option<i64>,
    },
}

impl Service {
    /// The impact of applying `gate` as `dry_run` says, refused exactly as the real
    /// write would be (role, validation, name, existence, version).
    pub async fn gate_impact(
        &self,
        actor: &Actor,
        gate: Gate,
        dry_run: DryRun<'_>,
    ) -> Result<GateImpact> {
        actor.require(Role::Admin)?;
        if let DryRun::Replace { name, .. } = dry_run
            && gate.name() != name
        {
            return Err(Error::invalid(
                "metadata.name",
                format!(
                    "'{}' does not match the gate '{name}' in the URL",
                    gate.name()
                ),
            ));
        }
        super::compile(&gate)?;
        // A scoped admin previews only what it may write (as `store_gate` decides).
        let within = super::admin_within(actor, &gate)?;
        let inputs = self.read_fleet(Scope::Fleet).await?;
        let stored = inputs.gates.iter().find(|g| g.name() == gate.name());
        if let Some(s) = stored {
            super::admin_within(actor, &s.gate)?;
        }
        if let Some(w) = &within
            && let Some(c) = inputs.clusters.iter().find(|c| {
                gate.spec.clusters.matches(&c.row.name, &c.row.labels)
                    && !w.iter().any(|s| s.matches(&c.row.name, &c.row.labels))
            })
        {
            return Err(Error::Forbidden(format!(
                "gate '{}' selects cluster '{}', which is outside your cluster scope",
                gate.name(),
                c.row.name
            )));
        }
        match (dry_run, stored) {
            (DryRun::Create, Some(_)) => {
                return Err(Error::conflict(format!(
                    "gate '{}' already exists",
                    gate.name()
                )));
            }
            (DryRun::Replace { name, .. }, None) => return Err(Error::not_found("gate", name)),
            (
                DryRun::Replace {
                    if_match: Some(v), ..
                },
                Some(s),
            ) if s.version != v => {
                return Err(Error::conflict(format!(
                    "gate '{}' is at version {}, not {v}",
                    gate.name(),
                    s.version
                )));
            }
            _ => {}
        }
        let at = inputs.at;
        let feeds = stored.map(|s| s.feeds.clone()).unwrap_or_default();
        let compiled =
            crate::service::calendars::compile_at(&gate, &feeds, at).map_err(Error::from_policy)?;
        let candidate = GateInput {
            gate: gate.clone(),
            version: stored.map_or(0, |s| s.version),
            manifest: serde_json::Value::Null,
            feeds,
            within,
        };
        let scoped: Vec<&crate::service::fleet::ClusterInput> = inputs
            .clusters
            .iter()
            .filter(|c| {
                candidate.applies_to(&c.row) || stored.is_some_and(|s| s.applies_to(&c.row))
            })
            .collect();
        let names: Vec<String> = scoped.iter().map(|c| c.row.name.clone()).collect();
        let waves = waves_of(&candidate, &compiled, &inputs, &scoped, at);
        let wave_of: HashMap<&str, (u32, &str)> = waves
            .iter()
            .flat_map(|w| {
                w.clusters
                    .iter()
                    .map(|c| (c.as_str(), (w.wave, w.name.as_str())))
            })
            .collect();
        let mut conn = self.conn().await?;
        let inventories = crate::db::inventories::for_clusters(&mut conn, &names).await?;
        let mut clusters = Vec::with_capacity(scoped.len());
        let (mut added, mut removed) = (Vec::new(), Vec::new());
        let mut counts = ImpactCounts::default();
        for c in scoped {
            let row = &c.row;
            let (in_new, in_old) = (
                candidate.applies_to(row),
                stored.is_some_and(|s| s.applies_to(row)),
            );
            let change = match (in_new, in_old) {
                (true, false) => {
                    added.push(row.name.clone());
                    "added"
                }
                (false, true) => {
                    removed.push(row.name.clone());
                    "removed"
                }
                _ => "unchanged",
            };
            let inventory = inventories.get(&row.name);
            let mut impact = ClusterImpact {
                cluster: row.name.clone(),
                change: change.to_string(),
                connected: row.connected,
                state: String::new(),
                reason: String::new(),
                transitions: Vec::new(),
                inventory_reported: inventory.is_some(),
                governed: Vec::new(),
                would_hold: Vec::new(),
                wave: wave_of.get(row.name.as_str()).map(|w| w.0),
                wave_name: wave_of.get(row.name.as_str()).map(|w| w.1.to_string()),
            };
            if in_new {
                let overrides = inputs.applying(&candidate, row);
                let preview = compiled.preview(at, at + Duration::days(HORIZON_DAYS), &overrides);
                let closed = !preview.initial.state.is_open();
                impact.state = preview.initial.state.as_str().to_string();
                impact.reason = preview.initial.reason;
                impact.transitions = preview
                    .transitions
                    .into_iter()
                    .map(|t| ImpactTransition {
                        at: t.at,
                        state: t.state.as_str().to_string(),
                        reason: t.reason,
                    })
                    .collect();
                let objects = inventory.map_or(&[][..], Vec::as_slice);
                let (governed, held) = objects_of(&gate.spec, objects);
                impact.governed = governed;
                if closed {
                    impact.would_hold = held;
                }
                counts.clusters += 1;
                counts.closed += usize::from(closed);
                counts.governed += impact.governed.len();
                counts.would_hold += impact.would_hold.len();
            }
            clusters.push(impact);
        }
        let action = match stored {
            None => "create",
            Some(s) if s.gate == gate => "unchanged",
            Some(_) => "replace",
        };
        Ok(GateImpact {
            gate: gate.name().to_string(),
            action: action.to_string(),
            stored_version: stored.map(|s| s.version),
            at,
            enforcement: gate.spec.enforcement.as_str().to_string(),
            added,
            removed,
            clusters,
            counts,
            waves,
            warnings: gate
                .warnings()
                .into_iter()
                .map(|w| FieldWarning {
                    path: w.path,
                    message: w.message,
                })
                .collect(),
        })
    }
}

/// A rollout gate's waves over the clusters the new manifest governs, assigned as the hub
/// assigns them when a rollout starts ([`assign_waves`]), with each wave's estimated release
/// at the gate's next opening (from closed, gate-wide overrides and fleet freezes applied)
/// in the coming 7 days. Empty for a gate without `spec.rollout`.
fn waves_of(
    candidate: &GateInput,
    compiled: &fleetgate_policy::CompiledGate,
    inputs: &crate::service::fleet::FleetInputs,
    scoped: &[&crate::service::fleet::ClusterInput],
    at: chrono::DateTime<chrono::Utc>,
) -> Vec<ImpactWave> {
    let Some(rollout) = &candidate.gate.spec.rollout else {
        return Vec::new();
    };
    let candidates: Vec<WaveCandidate<'_>> = scoped
        .iter()
        .filter(|c| candidate.applies_to(&c.row))
        .map(|c| WaveCandidate {
            name: &c.row.name,
            labels: &c.row.labels,
        })
        .collect();
    let gate_wide = inputs.applying_gate_wide(candidate);
    let preview = compiled.preview(at, at + Duration::days(HORIZON_DAYS), &gate_wide);
    let next = preview.rollouts.first();
    assign_waves(rollout, &candidates)
        .into_iter()
        .enumerate()
        .map(|(i, clusters)| {
            let estimate = next.and_then(|r| r.waves.get(i));
            ImpactWave {
                wave: u32::try_from(i + 1).unwrap_or(u32::MAX),
                name: rollout.wave_name(i),
                approval: rollout.waves[i].approval,
                clusters,
                estimated_release_at: estimate.map(|e| e.estimated_release_at),
                after_close: estimate.is_some_and(|e| e.after_close),
            }
        })
        .collect()
}

fn object_ref(o: &InventoryObject) -> ObjectRef {
    ObjectRef {
        kind: o.kind.clone(),
        namespace: o.namespace.clone(),
        name: o.name.clone(),
    }
}

fn key_of(o: &InventoryObject) -> String {
    format!("{}/{}/{}", o.kind, o.namespace, o.name)
}

/// From one cluster's inventory, the objects a gate with `spec` governs and those it suspends
/// while closed, as the spoke's planner decides (`spoke/src/suspend/plan.rs`): `suspend`
/// targets themselves; `freezeSources` the sources of its targeted Kustomizations and
/// HelmReleases, and targeted objects that consume nothing; never an object annotated
/// `fleetgate.io/ignore` (nor the sources only ignored consumers use) nor one a person
/// suspended. `holdObjects` governs its Kustomizations but suspends none (it holds objects
/// inside them, which the inventory does not list). Both sorted.
pub fn objects_of(
    spec: &GateSpec,
    objects: &[InventoryObject],
) -> (Vec<ObjectRef>, Vec<ObjectRef>) {
    let targeted = |o: &InventoryObject| {
        o.kind
            .parse::<FluxKind>()
            .is_ok_and(|k| spec.targets.matches(k, &o.namespace, &o.name, &o.labels))
    };
    let consumer = |o: &InventoryObject| matches!(o.kind.as_str(), "Kustomization" | "HelmRelease");
    let mut governed: BTreeSet<ObjectRef> = BTreeSet::new();
    let mut held: BTreeSet<ObjectRef> = BTreeSet::new();
    let by_key: HashMap<String, &InventoryObject> =
        objects.iter().map(|o| (key_of(o), o)).collect();
    let hold = |o: &InventoryObject, held: &mut BTreeSet<ObjectRef>| {
        if !o.ignored && !o.suspended_by_human {
            held.insert(object_ref(o));
        }
    };
    for o in objects.iter().filter(|o| targeted(o)) {
        match spec.mode {
            Mode::HoldObjects => {
                if o.kind == "Kustomization" && !o.ignored {
                    governed.insert(object_ref(o));
                }
            }
            Mode::FreezeSources if consumer(o) => {
                if o.ignored {
                    continue;
                }
                governed.insert(object_ref(o));
                for s in o.sources.iter().filter_map(|s| by_key.get(s)) {
                    governed.insert(object_ref(s));
                    hold(s, &mut held);
                }
            }
            Mode::Suspend | Mode::FreezeSources => {
                if o.ignored {
                    continue;
                }
                governed.insert(object_ref(o));
                hold(o, &mut held);
            }
        }
    }
    (governed.into_iter().collect(), held.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(kind: &str, name: &str, prod: bool) -> InventoryObject {
        InventoryObject {
            kind: kind.into(),
            namespace: "flux-system".into(),
            name: name.into(),
            labels: if prod {
                [("tier".to_owned(), "prod".to_owned())].into()
            } else {
                Default::default()
            },
            ..InventoryObject::default()
        }
    }

    fn spec(mode: &str) -> GateSpec {
        let gate = fleetgate_policy::parse_gate(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{selector: {{}}}}\n  mode: {mode}\n  targets: {{kinds: [Kustomization, GitRepository], selector: {{matchLabels: {{tier: prod}}}}}}\n"
        ))
        .unwrap();
        gate.spec
    }

    fn names(v: &[ObjectRef]) -> Vec<String> {
        v.iter().map(|o| format!("{}/{}", o.kind, o.name)).collect()
    }

    #[test]
    fn suspend_holds_targets_but_not_a_persons_or_ignored() {
        let mut person = obj("Kustomization", "person", true);
        person.suspended_by_human = true;
        let mut ignored = obj("Kustomization", "ignored", true);
        ignored.ignored = true;
        let inv = vec![
            obj("Kustomization", "apps", true),
            obj("Kustomization", "infra", false),
            person,
            ignored,
        ];
        let (governed, held) = objects_of(&spec("suspend"), &inv);
        assert_eq!(
            names(&governed),
            ["Kustomization/apps", "Kustomization/person"]
        );
        assert_eq!(names(&held), ["Kustomization/apps"]);
    }

    #[test]
    fn freeze_sources_holds_the_sources_of_targeted_consumers() {
        let mut apps = obj("Kustomization", "apps", true);
        apps.sources = vec!["GitRepository/flux-system/repo".into()];
        let inv = vec![apps, obj("GitRepository", "repo", false)];
        let (governed, held) = objects_of(&spec("freezeSources"), &inv);
        assert_eq!(
            names(&governed),
            ["GitRepository/repo", "Kustomization/apps"]
        );
        assert_eq!(names(&held), ["GitRepository/repo"]);
    }
}
