//! Property test of the planner over random interleavings of gates opening and
//! closing, objects appearing, and people suspending/resuming objects by hand:
//! fleetgate never resumes a person's suspend, never leaves an object held by a
//! closed gate unsuspended, and leaves no suspend of its own behind once open. A fleet
//! freeze coming and going in between names itself (`fleetgate.io/freeze-reason`) on exactly
//! the objects fleetgate holds while it lasts, and on nothing afterwards.

use std::collections::BTreeMap;

use fleetgate_policy::{FluxKind, LabelSelector, Mode, Targets};
use fleetgate_spoke::{
    cluster::observed::{ObjectKey, ObservedObject},
    suspend::plan::{Action, GateView, Planner},
};
use proptest::prelude::*;

const NAMESPACES: [&str; 2] = ["a", "b"];
const REPOS: usize = 3;

#[derive(Clone, Debug)]
struct GateSpec {
    mode: Mode,
    kinds: Vec<FluxKind>,
    namespace: Option<usize>,
    prod_only: bool,
}

#[derive(Clone, Debug)]
enum Op {
    Toggle(usize),
    ToggleFreeze,
    CreateKustomization { ns: usize, repo: usize, prod: bool },
    HumanSuspend(usize),
    HumanResume(usize),
    Reconcile,
}

fn gate_spec() -> impl Strategy<Value = GateSpec> {
    (
        prop_oneof![
            Just(Mode::Suspend),
            Just(Mode::FreezeSources),
            Just(Mode::HoldObjects)
        ],
        prop::sample::subsequence(
            vec![FluxKind::Kustomization, FluxKind::GitRepository],
            0..=2,
        ),
        prop::option::of(0..NAMESPACES.len()),
        any::<bool>(),
    )
        .prop_map(|(mode, kinds, namespace, prod_only)| GateSpec {
            mode,
            kinds,
            namespace,
            prod_only,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0..3usize).prop_map(Op::Toggle),
        Just(Op::ToggleFreeze),
        (0..NAMESPACES.len(), 0..REPOS, any::<bool>())
            .prop_map(|(ns, repo, prod)| Op::CreateKustomization { ns, repo, prod }),
        (0..16usize).prop_map(Op::HumanSuspend),
        (0..16usize).prop_map(Op::HumanResume),
        Just(Op::Reconcile),
    ]
}

fn view(i: usize, spec: &GateSpec, open: bool) -> GateView {
    let selector = spec.prod_only.then(|| LabelSelector {
        match_labels: BTreeMap::from([("tier".to_owned(), "prod".to_owned())]),
        match_expressions: vec![],
    });
    GateView {
        name: format!("g{i}"),
        mode: spec.mode,
        targets: Targets {
            kinds: spec.kinds.clone(),
            namespaces: spec
                .namespace
                .map(|n| vec![NAMESPACES[n].to_owned()])
                .unwrap_or_default(),
            names: vec![],
            selector,
        },
        objects: None,
        open,
        reason: String::new(),
        warn: false,
    }
}

/// The freeze's `fleetgate.io/freeze-reason` in these tests.
const FREEZE: &str = "fleet freeze 1 by test until unfrozen: INC-1";

/// The gates as the spoke evaluates them: a freeze closes every gate and adds the
/// built-in one.
fn gates_now(specs: &[GateSpec], open: &[bool], frozen: bool) -> Vec<GateView> {
    let mut gates: Vec<GateView> = specs
        .iter()
        .enumerate()
        .map(|(i, s)| view(i, s, open[i] && !frozen))
        .collect();
    if frozen {
        gates.push(GateView::freeze(
            "fleet freeze by test until unfrozen: INC-1".into(),
        ));
    }
    gates
}

fn plan(
    gates: &[GateView],
    objects: &[ObservedObject],
    frozen: bool,
) -> fleetgate_spoke::suspend::plan::Plan {
    Planner::new(gates, objects)
        .with_freeze(frozen.then_some(FREEZE))
        .plan(objects)
}

fn repo_key(ns: &str, repo: usize) -> ObjectKey {
    ObjectKey::new(FluxKind::GitRepository, ns, format!("repo-{repo}"))
}

/// The oracle, written independently of the planner: the closed gates that
/// must hold `obj` suspended.
fn must_hold(gates: &[GateView], objects: &[ObservedObject], obj: &ObservedObject) -> bool {
    let matches = |g: &GateView, o: &ObservedObject| {
        g.targets
            .matches(o.key.kind, &o.key.namespace, &o.key.name, &o.labels)
    };
    let freeze_gate = |g: &GateView| g.name == fleetgate_policy::FREEZE_GATE;
    gates.iter().filter(|g| !g.open).any(|g| match g.mode {
        // The built-in freeze gate holds what no suspend or freezeSources gate targets.
        Mode::Suspend if freeze_gate(g) => {
            matches(g, obj)
                && !gates
                    .iter()
                    .any(|o| !freeze_gate(o) && o.mode != Mode::HoldObjects && matches(o, obj))
        }
        Mode::Suspend => matches(g, obj),
        Mode::FreezeSources => {
            (obj.key.kind != FluxKind::Kustomization && matches(g, obj))
                || objects.iter().any(|c| {
                    c.key.kind == FluxKind::Kustomization
                        && matches(g, c)
                        && c.source_refs.contains(&obj.key)
                })
        }
        // holdObjects marks objects inside Kustomizations; it never suspends.
        Mode::HoldObjects => false,
    })
}

fn apply(objects: &mut [ObservedObject], steps: Vec<fleetgate_spoke::suspend::plan::Step>) {
    for step in steps {
        let o = objects
            .iter_mut()
            .find(|o| o.key == step.key)
            .expect("step for a known object");
        assert_eq!(
            step.resource_version, o.resource_version,
            "planned from the observed version"
        );
        let freeze = step.freeze_reason.as_deref().map(Into::into);
        match step.action {
            Action::Suspend { gates } => {
                o.suspended = true;
                o.suspended_by = Some(gates);
                o.freeze_reason = freeze;
            }
            Action::Relabel { gates } => {
                o.suspended_by = Some(gates);
                o.freeze_reason = freeze;
            }
            Action::Resume { .. } => {
                o.suspended = false;
                o.suspended_by = None;
                o.freeze_reason = None;
            }
            Action::ClearMark => {
                o.suspended_by = None;
                o.freeze_reason = None;
            }
        }
        bump(o);
    }
}

fn bump(o: &mut ObservedObject) {
    let rv: u64 = o
        .resource_version
        .as_deref()
        .unwrap_or("0")
        .parse()
        .unwrap_or(0);
    o.resource_version = Some((rv + 1).to_string());
}

fn reconcile(gates: &[GateView], objects: &mut [ObservedObject], frozen: bool) {
    let human_before: Vec<ObjectKey> = objects
        .iter()
        .filter(|o| o.suspended_by_human())
        .map(|o| o.key.clone())
        .collect();
    let p = plan(gates, objects, frozen);
    apply(objects, p.steps);
    for o in objects.iter() {
        if human_before.contains(&o.key) {
            assert!(
                o.suspended && o.suspended_by.is_none(),
                "a person's suspend was touched: {o:?}"
            );
        }
        if must_hold(gates, objects, o) {
            assert!(
                o.suspended,
                "held by a closed gate but not suspended: {o:?}"
            );
        } else {
            assert!(
                o.suspended_by.is_none(),
                "fleetgate suspend left behind although nothing holds it: {o:?}"
            );
        }
        if o.suspended_by.is_some() {
            assert!(
                o.suspended,
                "fleetgate mark on an object that is not suspended: {o:?}"
            );
        }
        // The freeze is named on what fleetgate holds while it lasts, and nowhere else.
        let want = (frozen && o.suspended_by.is_some()).then_some(FREEZE);
        assert_eq!(o.freeze_reason.as_deref(), want, "freeze reason on {o:?}");
    }
    // Level-triggered and idempotent: planning again changes nothing.
    assert!(
        plan(gates, objects, frozen).steps.is_empty(),
        "second pass not a no-op"
    );
}

fn seed_objects() -> Vec<ObservedObject> {
    let mut out = Vec::new();
    for ns in NAMESPACES {
        for r in 0..REPOS {
            out.push(ObservedObject {
                key: repo_key(ns, r),
                labels: Default::default(),
                resource_version: Some("1".into()),
                suspended: false,
                suspended_by: None,
                freeze_reason: None,
                source_refs: vec![],
                last_applied_revision: None,
                artifact_revision: Some(format!("main@sha1:{r}").into()),
                ignored: false,
                nesting: Default::default(),
                readiness: Default::default(),
                inventory: None,
            });
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_resumes_a_person_and_never_leaves_a_held_object_running(
        specs in prop::collection::vec(gate_spec(), 3),
        initially_open in prop::collection::vec(any::<bool>(), 3),
        ops in prop::collection::vec(op(), 1..60),
    ) {
        let mut open = initially_open;
        let mut frozen = false;
        let mut objects = seed_objects();
        let mut created = 0usize;
        for op in ops {
            match op {
                Op::Toggle(i) => open[i] = !open[i],
                Op::ToggleFreeze => frozen = !frozen,
                Op::CreateKustomization { ns, repo, prod } => {
                    let ns = NAMESPACES[ns];
                    let labels = if prod { BTreeMap::from([("tier".to_owned(), "prod".to_owned())]) } else { BTreeMap::new() };
                    objects.push(ObservedObject {
                        key: ObjectKey::new(FluxKind::Kustomization, ns, format!("ks-{created}")),
                        labels: labels.into(),
                        resource_version: Some("1".into()),
                        suspended: false,
                        suspended_by: None,
                        freeze_reason: None,
                        source_refs: vec![repo_key(ns, repo)],
                        last_applied_revision: None,
                        artifact_revision: None,
                        ignored: false,
                        nesting: Default::default(),
                        readiness: Default::default(),
                        inventory: None,
                    });
                    created += 1;
                }
                // `flux suspend` / `flux resume`: only spec.suspend changes.
                Op::HumanSuspend(i) => {
                    let n = objects.len();
                    let o = &mut objects[i % n];
                    if !o.suspended {
                        o.suspended = true;
                        bump(o);
                    }
                }
                Op::HumanResume(i) => {
                    let n = objects.len();
                    let o = &mut objects[i % n];
                    if o.suspended {
                        o.suspended = false;
                        bump(o);
                    }
                }
                Op::Reconcile => reconcile(&gates_now(&specs, &open, frozen), &mut objects, frozen),
            }
        }
        // Several changes may land between two passes; the final pass settles them.
        reconcile(&gates_now(&specs, &open, frozen), &mut objects, frozen);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Warn mode: the same gates in `warn` change no object, and the objects they report
    /// as "would suspend" (with the gates named) are exactly those the enforced version
    /// suspends from the same state.
    #[test]
    fn warn_gates_change_nothing_and_would_suspend_what_enforce_suspends(
        specs in prop::collection::vec(gate_spec(), 3),
        open in prop::collection::vec(any::<bool>(), 3),
        kustomizations in prop::collection::vec(
            (0..NAMESPACES.len(), 0..REPOS, any::<bool>(), any::<bool>()),
            0..12,
        ),
    ) {
        let mut objects = seed_objects();
        for (i, (ns, repo, prod, by_person)) in kustomizations.into_iter().enumerate() {
            let ns = NAMESPACES[ns];
            let labels = if prod { BTreeMap::from([("tier".to_owned(), "prod".to_owned())]) } else { BTreeMap::new() };
            objects.push(ObservedObject {
                key: ObjectKey::new(FluxKind::Kustomization, ns, format!("ks-{i}")),
                labels: labels.into(),
                resource_version: Some("1".into()),
                // `flux suspend` by a person: neither mode touches it.
                suspended: by_person,
                suspended_by: None,
                freeze_reason: None,
                source_refs: vec![repo_key(ns, repo)],
                last_applied_revision: Some("main@sha1:old".into()),
                artifact_revision: None,
                ignored: false,
                nesting: Default::default(),
                readiness: Default::default(),
                inventory: None,
            });
        }
        let enforce: Vec<GateView> =
            specs.iter().enumerate().map(|(i, s)| view(i, s, open[i])).collect();
        let warn: Vec<GateView> = enforce
            .iter()
            .map(|g| GateView { warn: true, ..g.clone() })
            .collect();

        let w = plan(&warn, &objects, false);
        prop_assert!(w.steps.is_empty(), "a warn gate planned a change: {:?}", w.steps);
        prop_assert!(w.report.iter().all(|r| r.suspended_by.is_empty() && !r.held));

        let e = plan(&enforce, &objects, false);
        let suspended: BTreeMap<ObjectKey, Vec<String>> = e
            .steps
            .iter()
            .filter_map(|s| match &s.action {
                Action::Suspend { gates } => Some((s.key.clone(), gates.clone())),
                _ => None,
            })
            .collect();
        let would: BTreeMap<ObjectKey, Vec<String>> = w
            .report
            .iter()
            .filter(|r| !r.would_suspend_by.is_empty())
            .map(|r| (r.key.clone(), r.would_suspend_by.clone()))
            .collect();
        prop_assert_eq!(would, suspended);
    }
}
