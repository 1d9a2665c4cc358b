//! The planner's cases: suspend and resume per mode and kind, a person's own
//! marks left alone, ignored and pinned objects, and what each report says.

use super::*;

fn gate(name: &str, mode: Mode, kinds: &[FluxKind], open: bool) -> GateView {
    GateView {
        name: name.into(),
        mode,
        targets: Targets {
            kinds: kinds.to_vec(),
            ..Targets::default()
        },
        objects: None,
        open,
        reason: String::new(),
        warn: false,
    }
}

fn obj(kind: FluxKind, name: &str) -> ObservedObject {
    ObservedObject {
        key: ObjectKey::new(kind, "flux-system", name),
        labels: Default::default(),
        resource_version: Some("1".into()),
        suspended: false,
        suspended_by: None,
        freeze_reason: None,
        source_refs: vec![],
        last_applied_revision: None,
        artifact_revision: None,
        ignored: false,
        nesting: Default::default(),
        readiness: Default::default(),
        inventory: None,
    }
}

fn ks(name: &str, source: &str) -> ObservedObject {
    let mut o = obj(FluxKind::Kustomization, name);
    o.source_refs = vec![ObjectKey::new(
        FluxKind::GitRepository,
        "flux-system",
        source,
    )];
    o
}

fn git(name: &str, rev: &str) -> ObservedObject {
    let mut o = obj(FluxKind::GitRepository, name);
    o.artifact_revision = Some(rev.into());
    o
}

fn action(p: &Plan, name: &str) -> Option<Action> {
    p.steps
        .iter()
        .find(|s| s.key.name == name)
        .map(|s| s.action.clone())
}

#[test]
fn closed_gate_suspends_open_gate_leaves_alone() {
    let objects = vec![ks("apps", "repo"), git("repo", "r1")];
    let closed = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], false)];
    let p = plan(&closed, &objects);
    assert_eq!(
        action(&p, "apps"),
        Some(Action::Suspend {
            gates: vec!["g".into()]
        })
    );
    assert_eq!(action(&p, "repo"), None);
    assert_eq!(p.steps[0].resource_version.as_deref(), Some("1"));
    assert_eq!(p.report.len(), 1, "only the Kustomization is governed");

    let open = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], true)];
    assert!(plan(&open, &objects).steps.is_empty());
}

#[test]
fn resumes_only_what_fleetgate_suspended() {
    let mut ours = ks("ours", "repo");
    ours.suspended = true;
    ours.suspended_by = Some(vec!["g".into()]);
    let mut human = ks("human", "repo");
    human.suspended = true;
    let gates = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], true)];
    let p = plan(&gates, &[ours.clone(), human.clone()]);
    assert_eq!(
        action(&p, "ours"),
        Some(Action::Resume {
            gates: vec!["g".into()]
        })
    );
    assert_eq!(action(&p, "human"), None);
    let h = p.report.iter().find(|r| r.key.name == "human").unwrap();
    assert!(h.suspended_by_human && h.suspended_by.is_empty());

    // Closed: the human's suspend is still not claimed.
    let gates = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], false)];
    assert_eq!(action(&plan(&gates, &[human]), "human"), None);
}

#[test]
fn gate_removed_resumes_its_objects() {
    let mut ours = ks("ours", "repo");
    ours.suspended = true;
    ours.suspended_by = Some(vec!["gone".into()]);
    let p = plan(&[], &[ours]);
    assert_eq!(
        action(&p, "ours"),
        Some(Action::Resume {
            gates: vec!["gone".into()]
        })
    );
    assert!(p.report.is_empty());
}

#[test]
fn several_gates_suspend_while_any_is_closed_and_relabel() {
    let mut o = ks("apps", "repo");
    let gates = [
        gate("a", Mode::Suspend, &[FluxKind::Kustomization], false),
        gate("b", Mode::Suspend, &[], false),
    ];
    assert_eq!(
        action(&plan(&gates, &[o.clone()]), "apps"),
        Some(Action::Suspend {
            gates: vec!["a".into(), "b".into()]
        })
    );
    o.suspended = true;
    o.suspended_by = Some(vec!["a".into(), "b".into()]);
    assert_eq!(action(&plan(&gates, &[o.clone()]), "apps"), None);
    let one_open = [
        gates[0].clone(),
        GateView {
            open: true,
            ..gates[1].clone()
        },
    ];
    assert_eq!(
        action(&plan(&one_open, &[o.clone()]), "apps"),
        Some(Action::Relabel {
            gates: vec!["a".into()]
        })
    );
    let p = plan(&one_open, &[o]);
    assert_eq!(p.report[0].gates, vec!["a", "b"]);
}

#[test]
fn resumed_by_hand_while_closed_is_suspended_again_and_stale_mark_cleared() {
    let mut o = ks("apps", "repo");
    o.suspended_by = Some(vec!["g".into()]);
    let closed = [gate("g", Mode::Suspend, &[], false)];
    assert_eq!(
        action(&plan(&closed, &[o.clone()]), "apps"),
        Some(Action::Suspend {
            gates: vec!["g".into()]
        })
    );
    let open = [gate("g", Mode::Suspend, &[], true)];
    assert_eq!(action(&plan(&open, &[o]), "apps"), Some(Action::ClearMark));
}

#[test]
fn freeze_sources_suspends_the_source_not_the_consumer() {
    let objects = vec![ks("apps", "repo"), git("repo", "r1"), git("other", "r9")];
    let gates = [gate(
        "f",
        Mode::FreezeSources,
        &[FluxKind::Kustomization],
        false,
    )];
    let p = plan(&gates, &objects);
    assert_eq!(action(&p, "apps"), None);
    assert_eq!(
        action(&p, "repo"),
        Some(Action::Suspend {
            gates: vec!["f".into()]
        })
    );
    assert_eq!(action(&p, "other"), None);
    let names: Vec<_> = p.report.iter().map(|r| r.key.name.as_str()).collect();
    assert_eq!(names, vec!["apps", "repo"], "appliers first, then sources");
}

#[test]
fn freeze_sources_on_a_source_or_automation_suspends_it() {
    let objects = vec![
        git("repo", "r1"),
        obj(FluxKind::ImageUpdateAutomation, "iua"),
    ];
    let gates = [gate("f", Mode::FreezeSources, &[], false)];
    let p = plan(&gates, &objects);
    assert_eq!(
        action(&p, "repo"),
        Some(Action::Suspend {
            gates: vec!["f".into()]
        })
    );
    assert_eq!(
        action(&p, "iua"),
        Some(Action::Suspend {
            gates: vec!["f".into()]
        })
    );
}

#[test]
fn held_when_newer_source_revision_waits_behind_our_suspend() {
    let mut k = ks("apps", "repo");
    k.suspended = true;
    k.suspended_by = Some(vec!["g".into()]);
    k.last_applied_revision = Some("r1".into());
    let gates = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], false)];
    let p = plan(&gates, &[k.clone(), git("repo", "r2")]);
    let r = &p.report[0];
    assert!(r.held);
    assert_eq!(r.newest_source_revision.as_deref(), Some("r2"));
    assert_eq!(r.last_applied_revision.as_deref(), Some("r1"));
    assert_eq!(p.held_count(), 1);
    assert_eq!(p.suspended_count(), 1);
    // Up to date: not held.
    assert!(!plan(&gates, &[k.clone(), git("repo", "r1")]).report[0].held);
    // A human's suspend is not held by a gate.
    k.suspended_by = None;
    assert!(!plan(&gates, &[k, git("repo", "r2")]).report[0].held);
}

#[test]
fn consumer_behind_a_frozen_source_is_not_held() {
    let mut k = ks("apps", "repo");
    k.last_applied_revision = Some("r1".into());
    let gates = [gate(
        "f",
        Mode::FreezeSources,
        &[FluxKind::Kustomization],
        false,
    )];
    let p = plan(&gates, &[k, git("repo", "r2")]);
    let apps = p.report.iter().find(|r| r.key.name == "apps").unwrap();
    assert_eq!(apps.gates, vec!["f"]);
    assert!(!apps.held, "not suspended: it applies r2 by itself");
}

#[test]
fn replan_single_object_uses_the_source_index() {
    let objects = vec![ks("apps", "repo"), git("repo", "r1")];
    let gates = [gate(
        "f",
        Mode::FreezeSources,
        &[FluxKind::Kustomization],
        false,
    )];
    let planner = Planner::new(&gates, &objects);
    let mut fresh = git("repo", "r1");
    fresh.resource_version = Some("99".into());
    let (step, report) = planner.plan_object(&fresh);
    let step = step.unwrap();
    assert_eq!(step.resource_version.as_deref(), Some("99"));
    assert_eq!(
        step.action,
        Action::Suspend {
            gates: vec!["f".into()]
        }
    );
    assert!(report.is_some());
}

#[test]
fn a_child_of_a_parent_kustomization_is_pinned_while_suspended() {
    let mut child = ks("apps", "repo");
    child.nesting.parent = Some(("flux-system".into(), "flux-system".into()));
    let closed = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], false)];
    let open = [gate("g", Mode::Suspend, &[FluxKind::Kustomization], true)];
    let step = |gates: &[GateView], o: &ObservedObject| plan(gates, std::slice::from_ref(o)).steps;
    let s = step(&closed, &child);
    assert_eq!(s[0].pin, Some(true));
    assert!(matches!(s[0].action, Action::Suspend { .. }));

    // Suspended by fleetgate before the pin existed: pinned with a no-op relabel.
    child.suspended = true;
    child.suspended_by = Some(vec!["g".into()]);
    let s = step(&closed, &child);
    assert_eq!(
        (s[0].action.clone(), s[0].pin),
        (
            Action::Relabel {
                gates: vec!["g".into()]
            },
            Some(true)
        )
    );

    child.nesting.pinned = true;
    assert!(step(&closed, &child).is_empty());
    let s = step(&open, &child);
    assert_eq!((s[0].action.label(), s[0].pin), ("resume", Some(false)));

    // A person's reconcile: disabled is neither added to nor removed.
    child.nesting.pinned = false;
    child.nesting.disabled_by_person = true;
    assert!(step(&closed, &child).is_empty());
    assert_eq!(step(&open, &child)[0].pin, None);
}
