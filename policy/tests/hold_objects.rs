//! `mode: holdObjects`: parsing `spec.objects`, matching applied objects, and validation
//! errors naming the field (HelmRelease targets, missing or misplaced `objects`, bad kinds).

use std::collections::BTreeMap;

use fleetgate_policy::{GroupKind, Mode, parse_gate};

const BASE: &str = "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\n";

fn full(spec: &str) -> String {
    format!("{BASE}spec:\n  clusters: {{names: [a]}}\n{spec}")
}

#[test]
fn nginx_example_parses_matches_and_states_its_limits() {
    let gate = parse_gate(&full(
        r#"  mode: holdObjects
  targets: {names: [apps]}
  objects:
    kinds: [{group: apps, kind: Deployment}, {kind: Service}]
    namespaces: [nginx]
    selector: {matchExpressions: [{key: hold, operator: NotIn, values: ["no"]}]}
"#,
    ))
    .unwrap();
    gate.validate().unwrap();
    assert_eq!(gate.spec.mode, Mode::HoldObjects);
    let objects = gate.spec.objects.as_ref().unwrap();
    assert_eq!(objects.kinds[1], GroupKind::new("", "Service"));
    assert_eq!(objects.kinds[0].to_string(), "Deployment.apps");
    let none = BTreeMap::new();
    assert!(objects.matches("apps", "Deployment", "nginx", "web", &none));
    assert!(objects.matches("", "Service", "nginx", "web", &none));
    assert!(!objects.matches("", "ConfigMap", "nginx", "web", &none));
    assert!(!objects.matches("apps", "Deployment", "other", "web", &none));
    let opted_out = BTreeMap::from([("hold".to_string(), "no".to_string())]);
    assert!(!objects.matches("apps", "Deployment", "nginx", "web", &opted_out));
    let limits = gate.limitations();
    assert!(limits[0].contains("created at once"), "{limits:?}");
    assert!(limits.iter().any(|l| l.contains("HelmRelease")));
    // Round trip.
    let json = serde_json::to_value(&gate).unwrap();
    assert_eq!(json["spec"]["mode"], "holdObjects");
    assert_eq!(json["spec"]["objects"]["kinds"][1]["group"], "");
    assert_eq!(fleetgate_policy::parse_gate_json(json).unwrap(), gate);
    // Other modes state nothing.
    let plain = parse_gate(&full("  mode: suspend\n")).unwrap();
    assert!(plain.limitations().is_empty());
}

#[test]
fn empty_objects_selector_holds_everything() {
    let gate = parse_gate(&full("  mode: holdObjects\n  objects: {}\n")).unwrap();
    gate.validate().unwrap();
    let o = gate.spec.objects.unwrap();
    assert!(o.matches("x", "Y", "n", "m", &BTreeMap::new()));
}

#[test]
fn validation_errors_name_the_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "  mode: holdObjects\n  targets: {kinds: [Kustomization, HelmRelease]}\n  objects: {}\n",
            "spec.targets.kinds[1]",
            "helm-controller has no per-object hold",
        ),
        (
            "  mode: holdObjects\n  targets: {kinds: [GitRepository]}\n  objects: {}\n",
            "spec.targets.kinds[0]",
            "Kustomizations only, not 'GitRepository'",
        ),
        (
            "  mode: holdObjects\n",
            "spec.objects",
            "required with mode holdObjects",
        ),
        (
            "  mode: suspend\n  objects: {}\n",
            "spec.objects",
            "only allowed with mode holdObjects",
        ),
        (
            "  objects: {}\n",
            "spec.objects",
            "this gate's mode is suspend",
        ),
        (
            "  mode: holdObjects\n  objects: {kinds: [{group: apps/v1, kind: Deployment}]}\n",
            "spec.objects.kinds[0].group",
            "without its version",
        ),
        (
            "  mode: holdObjects\n  objects: {kinds: [{group: apps, kind: ''}]}\n",
            "spec.objects.kinds[0].kind",
            "must not be empty",
        ),
        (
            "  mode: holdObjects\n  objects: {kinds: [{kind: Service}, {group: '', kind: Service}]}\n",
            "spec.objects.kinds[1]",
            "duplicate kind 'Service'",
        ),
        (
            "  mode: holdObjects\n  objects: {namespaces: [a, a]}\n",
            "spec.objects.namespaces[1]",
            "duplicate",
        ),
        (
            "  mode: holdObjects\n  objects: {selector: {matchExpressions: [{key: a, operator: In}]}}\n",
            "spec.objects.selector.matchExpressions[0].values",
            "must not be empty",
        ),
    ];
    for (spec, path, message) in cases {
        let err = parse_gate(&full(spec)).unwrap().validate().expect_err(spec);
        assert_eq!(err.path, *path, "{spec}: {err}");
        assert!(err.message.contains(message), "{spec}: {err}");
    }
}

#[test]
fn unknown_fields_in_objects_are_rejected_with_their_path() {
    let err = parse_gate(&full(
        "  mode: holdObjects\n  objects: {kinds: [{group: apps, kind: Deployment, version: v1}]}\n",
    ))
    .unwrap_err();
    assert_eq!(err.path, "spec.objects.kinds[0].version");
}
