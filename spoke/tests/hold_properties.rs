//! Properties of the object-level hold planner, against an oracle written
//! independently: for any gates (open/closed, selecting kinds/names) and any
//! applied objects (unmarked, marked by fleetgate, marked by a person, marker
//! without its annotation), applying the planned steps
//! - never touches a person's mark,
//! - leaves fleetgate's mark exactly on the objects a closed gate selects,
//! - requests a reconcile of every owner whose objects were released,
//! - decides ownership by the Kustomizations' `status.inventory` where they
//!   report one (owner labels removed: still held; labelled but not listed:
//!   never marked, fleetgate's mark released) and by the owner labels only
//!   where the labelled Kustomization reports no inventory,
//! - and re-planning afterwards plans nothing (a fixpoint in one pass);
//! - a closed warn gate (`enforcement: warn`) changes no step, and is reported
//!   as would-hold on exactly the objects its enforced self then marks, at the
//!   revision the previous pass saw (a newer applied revision: "would wait").

use std::{collections::BTreeSet, sync::Arc};

use fleetgate_policy::{FluxKind, GroupKind, HeldObjects, Mode, Targets};
use fleetgate_spoke::{
    cluster::observed::{ObjectKey, ObservedObject},
    hold::{
        observed::{AppliedObject, HeldKey, HeldMark},
        plan::{HoldAction, HoldPlanner, reconcile_requests},
    },
    suspend::plan::GateView,
};
use proptest::prelude::*;

const KINDS: [(&str, &str); 3] = [("apps", "Deployment"), ("", "Service"), ("", "ConfigMap")];
const OWNERS: [&str; 2] = ["apps", "infra"];

fn kustomization(name: &str, inventory: Option<String>) -> ObservedObject {
    ObservedObject {
        key: ObjectKey::new(FluxKind::Kustomization, "flux-system", name),
        labels: Default::default(),
        resource_version: Some("1".into()),
        suspended: false,
        suspended_by: None,
        freeze_reason: None,
        source_refs: vec![],
        last_applied_revision: Some(format!("{name}@r1").into()),
        artifact_revision: None,
        ignored: false,
        nesting: Default::default(),
        readiness: Default::default(),
        inventory: inventory.map(Into::into),
    }
}

/// One case's applied object and which owner's inventory lists it (at most
/// one: two Kustomizations listing one object is a conflict Flux reports).
#[derive(Clone, Debug)]
struct Case {
    object: AppliedObject,
    listed_in: Option<usize>,
}

fn inventory_id(o: &AppliedObject) -> String {
    let k = &o.key;
    format!(
        "{}_{}_{}_{}",
        k.namespace, k.name, k.kind.group, k.kind.kind
    )
}

/// The owners' inventories: `None` for an owner that reports none.
fn inventories(has: [bool; 2], cases: &[Case]) -> [Option<String>; 2] {
    [0, 1].map(|i| {
        has[i].then(|| {
            cases
                .iter()
                .filter(|c| c.listed_in == Some(i))
                .map(|c| inventory_id(&c.object))
                .collect::<Vec<_>>()
                .join("\n")
        })
    })
}

#[derive(Clone, Debug)]
enum Start {
    Plain,
    Ours,
    Person,
    OursWithoutAnnotation,
}

fn gate() -> impl Strategy<Value = GateView> {
    (
        prop::sample::subsequence(OWNERS.to_vec(), 0..=2),
        prop::sample::subsequence(vec![0usize, 1, 2], 0..=3),
        any::<bool>(),
        0..3usize,
    )
        .prop_map(|(owners, kinds, open, n)| GateView {
            name: format!("g{n}"),
            mode: Mode::HoldObjects,
            targets: Targets {
                names: owners.iter().map(|s| s.to_string()).collect(),
                ..Targets::default()
            },
            objects: Some(HeldObjects {
                kinds: kinds
                    .iter()
                    .map(|&i| GroupKind::new(KINDS[i].0, KINDS[i].1))
                    .collect(),
                ..HeldObjects::default()
            }),
            open,
            reason: String::new(),
            warn: false,
        })
}

fn object() -> impl Strategy<Value = AppliedObject> {
    (
        0..3usize,
        0..3usize,
        prop::option::of(0..2usize),
        prop_oneof![
            Just(Start::Plain),
            Just(Start::Ours),
            Just(Start::Person),
            Just(Start::OursWithoutAnnotation)
        ],
    )
        .prop_map(|(kind, n, owner, start)| {
            let mut o = AppliedObject {
                key: HeldKey {
                    kind: GroupKind::new(KINDS[kind].0, KINDS[kind].1).into(),
                    namespace: "app".into(),
                    name: format!("o{n}").into(),
                },
                owner: owner.map(|i| ("flux-system".into(), OWNERS[i].into())),
                resource_version: Some("1".into()),
                ..AppliedObject::default()
            };
            match start {
                Start::Plain => {}
                Start::Ours => {
                    o.skipped_by_flux = true;
                    o.disabled_annotation = true;
                    o.mark = Some(Arc::new(HeldMark {
                        gates: vec!["g0".into()].into(),
                        ..HeldMark::default()
                    }));
                }
                Start::Person => {
                    o.skipped_by_flux = true;
                    o.disabled_annotation = true;
                }
                Start::OursWithoutAnnotation => {
                    o.mark = Some(Arc::new(HeldMark {
                        gates: vec!["g1".into()].into(),
                        ..HeldMark::default()
                    }));
                }
            }
            o
        })
}

/// The oracle's owner (docs/object-holds.md,
/// "Which objects belong to a Kustomization"):
/// the Kustomization whose inventory lists it; else the one its owner labels
/// name, only if that one reports no inventory.
fn owner_of(case: &Case, inv: &[Option<String>; 2]) -> Option<&'static str> {
    if let Some(i) = case.listed_in.filter(|&i| inv[i].is_some()) {
        return Some(OWNERS[i]);
    }
    let (_, labelled) = case.object.owner.as_ref()?;
    let i = OWNERS.iter().position(|o| **o == **labelled)?;
    inv[i].is_none().then_some(OWNERS[i])
}

/// The oracle: the closed gates that must hold `o`, owned by `owner`.
fn must_hold(gates: &[GateView], owner: Option<&str>, o: &AppliedObject) -> BTreeSet<String> {
    let Some(owner) = owner else {
        return BTreeSet::new();
    };
    gates
        .iter()
        .filter(|g| {
            !g.open && (g.targets.names.is_empty() || g.targets.names.iter().any(|n| n == owner))
        })
        .filter(|g| {
            let kinds = &g.objects.as_ref().unwrap().kinds;
            kinds.is_empty() || kinds.contains(&o.key.kind)
        })
        .map(|g| g.name.clone())
        .collect()
}

/// What the API server holds after a step (the patches of `hold::marks`).
fn apply(o: &mut AppliedObject, action: &HoldAction) {
    match action {
        HoldAction::Mark { gates, .. } => {
            o.disabled_annotation = true;
            o.skipped_by_flux = true;
            o.mark = Some(Arc::new(HeldMark {
                gates: gates.clone().into(),
                ..HeldMark::default()
            }));
        }
        HoldAction::Relabel { gates } => {
            if let Some(m) = &mut o.mark {
                Arc::make_mut(m).gates = gates.clone().into();
            }
        }
        HoldAction::Release { .. } => {
            o.disabled_annotation = false;
            o.skipped_by_flux = false;
            o.mark = None;
        }
    }
}

proptest! {
    #[test]
    fn holds_follow_the_gates_and_never_touch_a_persons_mark(
        gates in prop::collection::vec(gate(), 0..4),
        objects in prop::collection::vec(object(), 0..12),
    ) {
        let mut gates = gates;
        gates.sort_by(|a, b| a.name.cmp(&b.name));
        gates.dedup_by(|a, b| a.name == b.name);
        let mut objects = objects;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        objects.dedup_by(|a, b| a.key == b.key);
        let kss = vec![kustomization("apps", None), kustomization("infra", None)];
        let planner = HoldPlanner::new(&gates, &kss);
        let plan = planner.plan(&objects);
        let requested: BTreeSet<ObjectKey> = reconcile_requests(&plan.steps).into_iter().collect();
        let mut after = objects.clone();
        for step in &plan.steps {
            let o = after.iter_mut().find(|o| o.key == step.key).unwrap();
            prop_assert!(!o.held_by_person(), "touched a person's mark: {:?}", step);
            if matches!(step.action, HoldAction::Release { .. })
                && let Some((ns, name)) = &o.owner
            {
                let owner = ObjectKey::new(FluxKind::Kustomization, &**ns, &**name);
                prop_assert!(requested.contains(&owner));
            }
            apply(o, &step.action);
        }
        for (before, o) in objects.iter().zip(&after) {
            if before.held_by_person() {
                prop_assert_eq!(before, o);
                continue;
            }
            let owner = o.owner.as_ref().map(|(_, name)| &**name);
            let want = must_hold(&gates, owner, o);
            match &o.mark {
                Some(m) => {
                    prop_assert!(o.disabled_annotation);
                    prop_assert_eq!(m.gates.iter().cloned().collect::<BTreeSet<_>>(), want);
                }
                None => prop_assert!(want.is_empty(), "{:?} not held by {:?}", o.key, want),
            }
        }
        prop_assert!(planner.plan(&after).steps.is_empty(), "not a fixpoint");
    }

    #[test]
    fn the_inventory_decides_ownership_and_labels_only_without_one(
        gates in prop::collection::vec(gate(), 0..4),
        objects in prop::collection::vec((object(), prop::option::of(0..2usize)), 0..12),
        has in any::<[bool; 2]>(),
    ) {
        let mut gates = gates;
        gates.sort_by(|a, b| a.name.cmp(&b.name));
        gates.dedup_by(|a, b| a.name == b.name);
        let mut cases: Vec<Case> = objects
            .into_iter()
            .map(|(object, listed_in)| Case { object, listed_in })
            .collect();
        cases.sort_by(|a, b| a.object.key.cmp(&b.object.key));
        cases.dedup_by(|a, b| a.object.key == b.object.key);
        let inv = inventories(has, &cases);
        let kss = vec![
            kustomization("apps", inv[0].clone()),
            kustomization("infra", inv[1].clone()),
        ];
        let objects: Vec<AppliedObject> = cases.iter().map(|c| c.object.clone()).collect();
        let planner = HoldPlanner::new(&gates, &kss);
        let plan = planner.plan(&objects);
        let mut after = objects.clone();
        for step in &plan.steps {
            let i = after.iter().position(|o| o.key == step.key).unwrap();
            let (o, case) = (&mut after[i], &cases[i]);
            prop_assert!(!o.held_by_person(), "touched a person's mark: {:?}", step);
            let owner = owner_of(case, &inv);
            if let HoldAction::Mark { .. } = step.action {
                prop_assert!(owner.is_some(), "marked {:?}, which no Kustomization applies", o.key);
            }
            // The owner named in the step (events, reconcile request) is the
            // inventory's, not the labels'.
            prop_assert_eq!(step.owner.as_ref().map(|k| k.name.to_string()), owner.map(str::to_owned));
            apply(o, &step.action);
        }
        for ((before, o), case) in objects.iter().zip(&after).zip(&cases) {
            if before.held_by_person() {
                prop_assert_eq!(before, o, "a person's mark changed");
                continue;
            }
            let want = must_hold(&gates, owner_of(case, &inv), o);
            match &o.mark {
                Some(m) => {
                    prop_assert!(o.disabled_annotation);
                    prop_assert_eq!(m.gates.iter().cloned().collect::<BTreeSet<_>>(), want);
                }
                None => prop_assert!(want.is_empty(), "{:?} not held by {:?}", o.key, want),
            }
        }
        prop_assert!(planner.plan(&after).steps.is_empty(), "not a fixpoint");
    }

    #[test]
    fn a_warn_gate_marks_nothing_and_would_hold_what_enforce_then_holds(
        gates in prop::collection::vec(gate(), 0..4),
        warn in any::<[bool; 4]>(),
        objects in prop::collection::vec(object(), 0..12),
    ) {
        let mut gates = gates;
        gates.sort_by(|a, b| a.name.cmp(&b.name));
        gates.dedup_by(|a, b| a.name == b.name);
        for (g, w) in gates.iter_mut().zip(warn) {
            g.warn = w;
        }
        let mut objects = objects;
        objects.sort_by(|a, b| a.key.cmp(&b.key));
        objects.dedup_by(|a, b| a.key == b.key);
        let kss = vec![kustomization("apps", None), kustomization("infra", None)];
        let plan = HoldPlanner::new(&gates, &kss).plan(&objects);
        // The warn gates change no step: as if they did not exist.
        let enforced_only: Vec<GateView> = gates.iter().filter(|g| !g.warn).cloned().collect();
        prop_assert_eq!(&plan.steps, &HoldPlanner::new(&enforced_only, &kss).plan(&objects).steps);
        // Enforce every gate and apply its steps: the warn gates it marks with
        // are exactly those reported as would-hold.
        let warn_closed: BTreeSet<String> = gates
            .iter()
            .filter(|g| g.warn && !g.open)
            .map(|g| g.name.clone())
            .collect();
        let enforced: Vec<GateView> = gates
            .iter()
            .map(|g| GateView { warn: false, ..g.clone() })
            .collect();
        let mut after = objects.clone();
        for step in HoldPlanner::new(&enforced, &kss).plan(&objects).steps {
            let o = after.iter_mut().find(|o| o.key == step.key).unwrap();
            apply(o, &step.action);
        }
        for o in &after {
            let marked: BTreeSet<String> = o
                .mark
                .as_ref()
                .map(|m| m.gates.iter().cloned().collect())
                .unwrap_or_default();
            let want: BTreeSet<String> = marked.intersection(&warn_closed).cloned().collect();
            let entry = plan.report.iter().find(|r| r.key == o.key);
            let got: BTreeSet<String> = entry
                .map(|r| r.would_hold_by.iter().cloned().collect())
                .unwrap_or_default();
            prop_assert_eq!(&got, &want, "{:?}", o.key);
            if let Some(r) = entry {
                let owner = o.owner.as_ref().map(|(_, n)| format!("{n}@r1"));
                let since = if want.is_empty() { None } else { owner };
                prop_assert_eq!(r.would_hold_since_revision.as_deref(), since.as_deref());
                prop_assert!(!r.would_hold_newer_revision);
            }
        }
        prop_assert_eq!(
            plan.would_hold_count(),
            plan.report.iter().filter(|r| !r.would_hold_by.is_empty()).count()
        );
        // The owners apply a newer revision: the next pass remembers where a
        // warn gate started to would-hold, and says the change would wait.
        let mut newer = kss.clone();
        for k in &mut newer {
            k.last_applied_revision = Some(format!("{}@r2", k.key.name).into());
        }
        let next = HoldPlanner::new(&gates, &newer).remembering(&plan.report).plan(&objects);
        prop_assert_eq!(next.report.len(), plan.report.len());
        for (a, b) in plan.report.iter().zip(&next.report) {
            prop_assert_eq!(&a.would_hold_by, &b.would_hold_by);
            prop_assert_eq!(&a.would_hold_since_revision, &b.would_hold_since_revision);
            prop_assert_eq!(b.would_hold_newer_revision, !b.would_hold_by.is_empty());
        }
        prop_assert_eq!(next.would_hold_waiting_count(), next.would_hold_count());
    }
}
