//! `fleetgate.io/ignore: "true"`: the planner never suspends such an object, releases a
//! suspend of fleetgate's own on it, leaves a person's alone, freezes no source through it,
//! and reports it as ignored with the gates that target it. And the spoke's check of its own
//! Kustomization (`OwnDelivery`): said once per set of gates that would hold it.

use fleetgate_policy::{FluxKind, Mode, Targets};
use fleetgate_spoke::cluster::observed::{ObjectKey, ObservedObject};
use fleetgate_spoke::suspend::own_delivery::OwnDelivery;
use fleetgate_spoke::suspend::plan::{Action, GateView, Planner, plan};

fn gate(mode: Mode, open: bool) -> GateView {
    GateView {
        name: "freeze".into(),
        mode,
        targets: Targets {
            kinds: vec![FluxKind::Kustomization],
            ..Targets::default()
        },
        objects: None,
        open,
        reason: String::new(),
        warn: false,
    }
}

fn ks(name: &str, ignored: bool) -> ObservedObject {
    ks_from(name, name, ignored)
}

/// A Kustomization applying from GitRepository `source`.
fn ks_from(name: &str, source: &str, ignored: bool) -> ObservedObject {
    ObservedObject {
        key: ObjectKey::new(FluxKind::Kustomization, "flux-system", name),
        labels: Default::default(),
        resource_version: Some("1".into()),
        suspended: false,
        suspended_by: None,
        freeze_reason: None,
        source_refs: vec![ObjectKey::new(
            FluxKind::GitRepository,
            "flux-system",
            source,
        )],
        last_applied_revision: Some("r1".into()),
        artifact_revision: None,
        ignored,
        nesting: Default::default(),
        readiness: Default::default(),
        inventory: None,
    }
}

fn git(name: &str) -> ObservedObject {
    ObservedObject {
        key: ObjectKey::new(FluxKind::GitRepository, "flux-system", name),
        artifact_revision: Some("r2".into()),
        last_applied_revision: None,
        source_refs: vec![],
        ..ks(name, false)
    }
}

#[test]
fn a_closed_gate_never_suspends_an_ignored_object_and_reports_it_ignored() {
    let objects = vec![ks("fleetgate-spoke", true), ks("apps", false)];
    let p = plan(&[gate(Mode::Suspend, false)], &objects);
    let names: Vec<&str> = p.steps.iter().map(|s| s.key.name.as_str()).collect();
    assert_eq!(names, ["apps"]);
    let spoke = p
        .report
        .iter()
        .find(|r| r.key.name == "fleetgate-spoke")
        .unwrap();
    assert!(spoke.ignored && !spoke.held && spoke.suspended_by.is_empty());
    assert_eq!(spoke.gates, ["freeze"]);
    let apps = p.report.iter().find(|r| r.key.name == "apps").unwrap();
    assert!(!apps.ignored);
}

#[test]
fn ignoring_releases_fleetgates_own_suspend_but_never_a_persons() {
    let mut ours = ks("ours", true);
    ours.suspended = true;
    ours.suspended_by = Some(vec!["freeze".into()]);
    let mut persons = ks("persons", true);
    persons.suspended = true;
    let p = plan(&[gate(Mode::Suspend, false)], &[ours, persons]);
    assert_eq!(p.steps.len(), 1, "{:?}", p.steps);
    assert_eq!(p.steps[0].key.name, "ours");
    assert_eq!(
        p.steps[0].action,
        Action::Resume {
            gates: vec!["freeze".into()]
        }
    );
}

#[test]
fn an_ignored_consumer_freezes_none_of_its_sources() {
    let objects = vec![
        ks("fleetgate-spoke", true),
        git("fleetgate-spoke"),
        ks("apps", false),
        git("apps"),
    ];
    let p = plan(&[gate(Mode::FreezeSources, false)], &objects);
    let suspended: Vec<String> = p.steps.iter().map(|s| s.key.to_string()).collect();
    assert_eq!(suspended, ["GitRepository flux-system/apps"]);
}

#[test]
fn warns_once_per_set_of_gates_that_would_hold_the_spokes_kustomization() {
    let mut own = OwnDelivery::new("flux-system/fleetgate-spoke");
    let objects = vec![ks("fleetgate-spoke", false), ks("apps", false)];
    // Open or closed: it would hold the spoke when it closes.
    let gates = [gate(Mode::Suspend, true)];
    let planner = Planner::new(&gates, &objects);
    let spoke = ObjectKey::new(FluxKind::Kustomization, "flux-system", "fleetgate-spoke");
    assert_eq!(
        own.check(&planner, &objects),
        Some((spoke, vec!["freeze".to_string()]))
    );
    assert_eq!(own.check(&planner, &objects), None, "said once");
    // Annotated ignore: nothing holds it any more; a later hold is said again.
    let ignored = vec![ks("fleetgate-spoke", true), ks("apps", false)];
    assert_eq!(own.check(&Planner::new(&gates, &ignored), &ignored), None);
    assert!(own.check(&planner, &objects).is_some());
}

#[test]
fn an_ignored_kustomization_is_still_held_through_a_frozen_shared_source() {
    let mut own = OwnDelivery::new("flux-system/fleetgate-spoke");
    let objects = vec![
        ks_from("fleetgate-spoke", "shared", true),
        ks_from("apps", "shared", false),
    ];
    let gates = [gate(Mode::FreezeSources, false)];
    let planner = Planner::new(&gates, &objects);
    let said = own.check(&planner, &objects).map(|(_, g)| g);
    assert_eq!(said, Some(vec!["freeze".to_string()]));
    let p = planner.plan(&objects);
    assert!(
        p.steps.iter().all(|s| s.key.name != "fleetgate-spoke"),
        "{p:?}"
    );
}

#[test]
fn an_empty_or_malformed_own_kustomization_turns_the_check_off() {
    for setting in ["", "fleetgate-spoke", "/x", "x/"] {
        let mut own = OwnDelivery::new(setting);
        let objects = vec![ks("fleetgate-spoke", false)];
        let gates = [gate(Mode::Suspend, false)];
        assert_eq!(own.check(&Planner::new(&gates, &objects), &objects), None);
    }
}

#[test]
fn a_hold_objects_gate_holds_nothing_inside_an_ignored_kustomization() {
    use fleetgate_policy::{GroupKind, HeldObjects};
    use fleetgate_spoke::hold::observed::{AppliedObject, HeldKey};
    use fleetgate_spoke::hold::plan::HoldPlanner;

    let hold = GateView {
        objects: Some(HeldObjects {
            kinds: vec![GroupKind::new("apps", "Deployment")],
            ..HeldObjects::default()
        }),
        ..gate(Mode::HoldObjects, false)
    };
    let deployment = |owner: &str| AppliedObject {
        key: HeldKey {
            kind: GroupKind::new("apps", "Deployment").into(),
            namespace: "fleetgate-system".into(),
            name: owner.into(),
        },
        owner: Some(("flux-system".into(), owner.into())),
        resource_version: Some("7".into()),
        ..AppliedObject::default()
    };
    let owners = vec![ks("fleetgate-spoke", true), ks("apps", false)];
    let gates = [hold];
    let p = HoldPlanner::new(&gates, &owners)
        .plan(&[deployment("fleetgate-spoke"), deployment("apps")]);
    let marked: Vec<&str> = p.steps.iter().map(|s| &*s.key.name).collect();
    assert_eq!(marked, ["apps"]);
}
