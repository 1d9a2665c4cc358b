//! Selectors (manifest and `kubectl -l` forms), cluster scope, targets, Flux kinds, durations
//! and the small enums' string forms.

use std::collections::BTreeMap;

use fleetgate_policy::{
    ClusterScope, FluxKind, GateState, LabelSelector, Mode, SelectorOperator, Targets,
    format_duration, parse_duration,
};

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn selector_parse_and_match_table() {
    let prod_eu = labels(&[("env", "prod"), ("region", "eu"), ("canary", "true")]);
    let staging = labels(&[("env", "staging")]);
    let cases: &[(&str, bool, bool)] = &[
        // selector, matches prod_eu, matches staging
        ("", true, true),
        ("env=prod", true, false),
        ("env==prod", true, false),
        ("env!=prod", false, true),
        ("region!=eu", false, true),
        ("env in (prod, staging)", true, true),
        ("env notin (prod)", false, true),
        ("region notin (us)", true, true),
        ("canary", true, false),
        ("!canary", false, true),
        ("env=prod,region in (eu,us),!legacy", true, false),
        ("env = prod , canary", true, false),
    ];
    for (text, a, b) in cases {
        let s = LabelSelector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(
            (s.matches(&prod_eu), s.matches(&staging)),
            (*a, *b),
            "{text}: {s:?}"
        );
    }
    let s = LabelSelector::parse("env in (a,b),x!=y,!z,w").unwrap();
    let ops: Vec<_> = s
        .match_expressions
        .iter()
        .map(|r| (r.key.as_str(), r.operator, r.values.len()))
        .collect();
    assert_eq!(
        ops,
        vec![
            ("env", SelectorOperator::In, 2),
            ("x", SelectorOperator::NotIn, 1),
            ("z", SelectorOperator::DoesNotExist, 0),
            ("w", SelectorOperator::Exists, 0)
        ]
    );
}

#[test]
fn selector_parse_errors() {
    for (text, message) in [
        ("env in (a", "unbalanced '(' in selector 'env in (a'"),
        ("env in a)", "unbalanced ')' in selector 'env in a)'"),
        ("a=b,,c", "empty term in selector 'a=b,,c'"),
        (
            "env in ()",
            "matchExpressions[0].values: must not be empty for operator In/NotIn",
        ),
        (
            "bad key=x",
            "selector term 'bad key=x': invalid key 'bad key'",
        ),
        ("a=b=c", "selector term 'a=b=c': invalid value 'b=c'"),
    ] {
        assert_eq!(
            LabelSelector::parse(text).unwrap_err().to_string(),
            message,
            "{text}"
        );
    }
}

#[test]
fn cluster_scope_names_or_selector() {
    let prod = labels(&[("env", "prod")]);
    let none = labels(&[]);
    let by_name = ClusterScope {
        names: vec!["a".into()],
        selector: None,
    };
    assert!(by_name.matches("a", &none));
    assert!(!by_name.matches("b", &prod));
    let all = ClusterScope {
        names: vec![],
        selector: Some(LabelSelector::default()),
    };
    assert!(all.matches("anything", &none));
    let either = ClusterScope {
        names: vec!["a".into()],
        selector: Some(LabelSelector::parse("env=prod").unwrap()),
    };
    assert!(either.matches("a", &none));
    assert!(either.matches("b", &prod));
    assert!(!either.matches("b", &none));
    assert!(!ClusterScope::default().matches("a", &prod));
}

#[test]
fn targets_every_given_criterion_must_match() {
    let l = labels(&[("team", "shop")]);
    let any = Targets::default();
    assert!(any.matches(FluxKind::Bucket, "ns", "n", &labels(&[])));
    let t = Targets {
        kinds: vec![FluxKind::Kustomization, FluxKind::HelmRelease],
        namespaces: vec!["apps".into()],
        names: vec!["web".into(), "api".into()],
        selector: Some(LabelSelector::parse("team=shop").unwrap()),
    };
    assert!(t.matches(FluxKind::HelmRelease, "apps", "api", &l));
    assert!(!t.matches(FluxKind::GitRepository, "apps", "api", &l));
    assert!(!t.matches(FluxKind::HelmRelease, "other", "api", &l));
    assert!(!t.matches(FluxKind::HelmRelease, "apps", "db", &l));
    assert!(!t.matches(
        FluxKind::HelmRelease,
        "apps",
        "api",
        &labels(&[("team", "x")])
    ));
}

#[test]
fn flux_kinds_table() {
    let expected = [
        (
            "Kustomization",
            "kustomize.toolkit.fluxcd.io/v1",
            "kustomizations",
            false,
        ),
        (
            "HelmRelease",
            "helm.toolkit.fluxcd.io/v2",
            "helmreleases",
            false,
        ),
        (
            "GitRepository",
            "source.toolkit.fluxcd.io/v1",
            "gitrepositories",
            true,
        ),
        (
            "OCIRepository",
            "source.toolkit.fluxcd.io/v1",
            "ocirepositories",
            true,
        ),
        (
            "HelmRepository",
            "source.toolkit.fluxcd.io/v1",
            "helmrepositories",
            true,
        ),
        ("Bucket", "source.toolkit.fluxcd.io/v1", "buckets", true),
        (
            "HelmChart",
            "source.toolkit.fluxcd.io/v1",
            "helmcharts",
            true,
        ),
        (
            "ImageUpdateAutomation",
            "image.toolkit.fluxcd.io/v1",
            "imageupdateautomations",
            false,
        ),
    ];
    for (kind, (name, api_version, plural, source)) in FluxKind::ALL.iter().zip(expected) {
        assert_eq!(
            (
                kind.as_str(),
                kind.api_version(),
                kind.plural(),
                kind.is_source()
            ),
            (name, api_version.to_string(), plural, source)
        );
        assert_eq!(name.parse::<FluxKind>().unwrap(), *kind);
        assert_eq!(name.to_lowercase().parse::<FluxKind>().unwrap(), *kind);
        assert_eq!(plural.parse::<FluxKind>().unwrap(), *kind);
        assert_eq!(kind.to_string(), name);
        assert_eq!(serde_json::to_value(kind).unwrap(), name);
    }
    assert!(
        "Deployment"
            .parse::<FluxKind>()
            .unwrap_err()
            .message
            .starts_with("unknown Flux kind 'Deployment'")
    );
}

#[test]
fn durations_table() {
    for (text, seconds) in [
        ("90s", 90),
        ("45m", 2700),
        ("1h30m", 5400),
        ("81h", 291_600),
        ("1.5h", 5400),
        ("1h0m30s", 3630),
        ("500ms", 0),
    ] {
        let d = parse_duration(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        assert_eq!(d.num_seconds(), seconds, "{text}");
    }
    assert_eq!(parse_duration("500ms").unwrap().num_milliseconds(), 500);
    for bad in [
        "", "0s", "0h0m", "10", "h", "1d", "1.2.3h", "-1h", "1h 30m", "1000000h",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad} should be rejected");
    }
    assert_eq!(
        parse_duration("1d").unwrap_err().to_string(),
        "invalid duration '1d': unknown unit 'd' (use ms, s, m or h)"
    );
    for (d, text) in [
        (90, "1m30s"),
        (3600, "1h"),
        (291_600, "81h"),
        (5400, "1h30m"),
    ] {
        assert_eq!(format_duration(chrono::Duration::seconds(d)), text);
    }
}

#[test]
fn enum_string_forms() {
    assert_eq!("open".parse::<GateState>().unwrap(), GateState::Open);
    assert_eq!(GateState::Closed.to_string(), "closed");
    assert!("Open".parse::<GateState>().is_err());
    assert_eq!(
        "freezeSources".parse::<Mode>().unwrap(),
        Mode::FreezeSources
    );
    assert_eq!(
        serde_json::to_value(Mode::FreezeSources).unwrap(),
        "freezeSources"
    );
    assert_eq!(serde_json::to_value(GateState::Closed).unwrap(), "closed");
}

#[test]
fn compiled_gates_can_be_shared_across_threads() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<fleetgate_policy::CompiledGate>();
    shareable::<fleetgate_policy::Gate>();
    shareable::<fleetgate_policy::PolicyError>();
}
