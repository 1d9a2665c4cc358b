//! Parsing and validating manifests: YAML and JSON, defaults, round trips, and every error
//! naming the offending field's path. Also checks that every file in `examples/` is valid.

use fleetgate_policy::{GateState, Mode, parse_gate, parse_gate_json};

const BASE: &str = "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\n";

fn full(spec: &str) -> String {
    format!("{BASE}spec:\n{spec}")
}

#[test]
fn issue_example_parses_with_defaults() {
    let text = full(
        r#"  description: example
  clusters: {names: [a, b], selector: {matchLabels: {env: prod}, matchExpressions: [{key: tier, operator: In, values: [web]}]}}
  targets: {kinds: [Kustomization, HelmRelease], namespaces: [apps], names: [web], selector: {matchLabels: {team: x}}}
  timeZone: Europe/Berlin
  windows:
    - {name: weekdays, kind: allow, schedule: "0 8 * * MON", duration: 81h}
    - {name: patch-tuesday, kind: allow, rrule: "FREQ=MONTHLY;BYDAY=2TU", dtstart: "2026-01-01T22:00:00", duration: 4h}
    - {name: xmas, kind: deny, start: "2026-12-20T00:00:00", end: "2027-01-04T00:00:00"}
"#,
    );
    let gate = parse_gate(&text).unwrap();
    gate.validate().unwrap();
    assert_eq!(gate.name(), "g");
    assert_eq!(gate.spec.mode, Mode::Suspend);
    assert_eq!(gate.spec.default, GateState::Open);
    assert_eq!(gate.spec.windows.len(), 3);
    // Round trip through JSON and YAML keeps everything.
    let json = serde_json::to_value(&gate).unwrap();
    assert_eq!(json["spec"]["windows"][0]["schedule"], "0 8 * * MON");
    assert_eq!(
        json["spec"]["clusters"]["selector"]["matchLabels"]["env"],
        "prod"
    );
    assert_eq!(parse_gate_json(json.clone()).unwrap(), gate);
    assert_eq!(parse_gate(&json.to_string()).unwrap(), gate);
    assert_eq!(
        parse_gate(&fleetgate_policy::yaml::to_string(&gate).unwrap()).unwrap(),
        gate
    );
}

#[test]
fn parse_errors_name_the_path() {
    let cases: &[(&str, &str, &str)] = &[
        ("", "", "empty gate manifest"),
        ("{}", "", "missing field `apiVersion`"),
        (
            &full("  clusters: {names: [a]}\n  colour: red\n"),
            "spec.colour",
            "unknown field `colour`",
        ),
        (
            &full("  clusters: {names: [a], selector: {matchLabel: {}}}\n"),
            "spec.clusters.selector.matchLabel",
            "unknown field `matchLabel`",
        ),
        (
            &full("  clusters: {names: [a]}\n  mode: freeze\n"),
            "spec.mode",
            "unknown variant `freeze`",
        ),
        (
            &full("  clusters: {names: [a]}\n  enforcement: audit\n"),
            "spec.enforcement",
            "unknown variant `audit`, expected one of enforce, warn",
        ),
        (
            &full("  clusters: {names: [a]}\n  default: maybe\n"),
            "spec.default",
            "unknown variant `maybe`",
        ),
        (
            &full("  clusters: {names: [a]}\n  targets: {kinds: [Deployment]}\n"),
            "spec.targets.kinds[0]",
            "unknown variant `Deployment`",
        ),
        (
            &full("  clusters: {names: [a]}\n  windows: [{name: w, kind: permit}]\n"),
            "spec.windows[0].kind",
            "unknown variant `permit`",
        ),
        (
            &full(
                "  clusters: {names: [a]}\n  windows: [{name: w, kind: allow, schedule: 5, duration: 1h, x: 1}]\n",
            ),
            "spec.windows[0].x",
            "unknown field `x`",
        ),
        (&full("  windows: []\n"), "spec", "missing field `clusters`"),
    ];
    for (text, path, message) in cases {
        let e = parse_gate(text).unwrap_err();
        assert_eq!(e.path, *path, "{text}\n→ {e}");
        assert!(e.message.starts_with(message), "{text}\n→ {e}");
    }
    let e = parse_gate_json(serde_json::json!({"apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g", "x": 1}, "spec": {"clusters": {}}})).unwrap_err();
    assert_eq!(e.path, "metadata.x");
}

#[test]
fn validation_errors_name_the_path() {
    let w = |window: &str| {
        full(&format!(
            "  clusters: {{names: [a]}}\n  windows:\n    - {window}\n"
        ))
    };
    let cases: Vec<(String, &str, &str)> = vec![
        (
            "apiVersion: v1\nkind: Gate\nmetadata: {name: g}\nspec: {clusters: {names: [a]}}".to_string(),
            "apiVersion",
            "must be 'fleetgate.io/v1', got 'v1'",
        ),
        (
            "apiVersion: fleetgate.io/v1\nkind: Policy\nmetadata: {name: g}\nspec: {clusters: {names: [a]}}".to_string(),
            "kind",
            "must be 'Gate', got 'Policy'",
        ),
        (
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: No_Good}\nspec: {clusters: {names: [a]}}".to_string(),
            "metadata.name",
            "'No_Good' is not a DNS-1123 label",
        ),
        (
            format!(
                "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: {}}}\nspec: {{clusters: {{names: [a]}}}}",
                "a".repeat(64)
            ),
            "metadata.name",
            "'aaaa",
        ),
        (
            full("  clusters: {}\n"),
            "spec.clusters",
            "give cluster names, a selector, or both",
        ),
        (
            full("  clusters: {names: [a, a]}\n"),
            "spec.clusters.names[1]",
            "duplicate 'a'",
        ),
        (
            full("  clusters: {selector: {matchExpressions: [{key: env, operator: In}]}}\n"),
            "spec.clusters.selector.matchExpressions[0].values",
            "must not be empty for operator In/NotIn",
        ),
        (
            full(
                "  clusters: {selector: {matchExpressions: [{key: env, operator: Exists, values: [x]}]}}\n",
            ),
            "spec.clusters.selector.matchExpressions[0].values",
            "must be empty",
        ),
        (
            full("  clusters: {selector: {matchLabels: {'bad key': x}}}\n"),
            "spec.clusters.selector.matchLabels.bad key",
            "invalid label key 'bad key'",
        ),
        (
            full("  clusters: {names: [a]}\n  targets: {kinds: [Kustomization, Kustomization]}\n"),
            "spec.targets.kinds[1]",
            "duplicate kind 'Kustomization'",
        ),
        (
            full(
                "  clusters: {names: [a]}\n  mode: freezeSources\n  targets: {kinds: [GitRepository]}\n",
            ),
            "spec.targets.kinds[0]",
            "mode freezeSources targets Kustomizations and HelmReleases",
        ),
        (
            full("  clusters: {names: [a]}\n  targets: {namespaces: ['']}\n"),
            "spec.targets.namespaces[0]",
            "must not be empty",
        ),
        (
            full("  clusters: {names: [a]}\n  timeZone: Europe/Berlinn\n"),
            "spec.timeZone",
            "unknown time zone 'Europe/Berlinn'",
        ),
        (
            full(
                "  clusters: {names: [a]}\n  windows:\n    - {name: w, kind: deny, start: '2026-12-20', end: '2026-12-21'}\n    - {name: w, kind: deny, start: '2026-12-20', end: '2026-12-21'}\n",
            ),
            "spec.windows[1].name",
            "duplicate window name 'w'",
        ),
        (
            w("{name: w, kind: allow, schedule: '0 8 * * MOX', duration: 1h}"),
            "spec.windows[0].schedule",
            "invalid cron field 'day-of-week': invalid value 'MOX'",
        ),
        (
            w("{name: w, kind: allow, schedule: '0 0 30 2 *', duration: 1h}"),
            "spec.windows[0].schedule",
            "cron expression '0 0 30 2 *' never matches",
        ),
        (
            w("{name: w, kind: allow, schedule: '0 8 * * *'}"),
            "spec.windows[0].duration",
            "required",
        ),
        (
            w("{name: w, kind: allow, schedule: '0 8 * * *', duration: 0s}"),
            "spec.windows[0].duration",
            "invalid duration '0s': must be greater than zero",
        ),
        (
            w("{name: w, kind: allow, schedule: '0 8 * * *', duration: 1d}"),
            "spec.windows[0].duration",
            "invalid duration '1d': unknown unit 'd'",
        ),
        (
            w(
                "{name: w, kind: allow, schedule: '0 8 * * *', duration: 1h, timeZone: Mars/Olympus}",
            ),
            "spec.windows[0].timeZone",
            "unknown time zone 'Mars/Olympus'",
        ),
        (
            w(
                "{name: w, kind: allow, schedule: '0 8 * * *', duration: 1h, dtstart: '2026-01-01T00:00:00'}",
            ),
            "spec.windows[0].dtstart",
            "only allowed with rrule",
        ),
        (
            w("{name: w, kind: allow, rrule: 'FREQ=WEEKLY', duration: 1h}"),
            "spec.windows[0].dtstart",
            "required with rrule",
        ),
        (
            w(
                "{name: w, kind: allow, rrule: 'FREQ=SOMETIMES', dtstart: '2026-01-01T00:00:00', duration: 1h}",
            ),
            "spec.windows[0].rrule",
            "invalid rrule 'FREQ=SOMETIMES'",
        ),
        (
            w(
                "{name: w, kind: allow, rrule: 'FREQ=WEEKLY', dtstart: '2026-01-01T00:00:00Z', duration: 1h}",
            ),
            "spec.windows[0].dtstart",
            "must be local wall-clock time",
        ),
        (
            w("{name: w, kind: allow, rrule: 'FREQ=WEEKLY', dtstart: 'tomorrow', duration: 1h}"),
            "spec.windows[0].dtstart",
            "invalid date-time 'tomorrow'",
        ),
        (
            w("{name: w, kind: deny, start: '2026-12-21T00:00:00', end: '2026-12-20T00:00:00'}"),
            "spec.windows[0].end",
            "must be after start",
        ),
        (
            w("{name: w, kind: deny, start: '2026-12-21T00:00:00'}"),
            "spec.windows[0].end",
            "required with start",
        ),
        (
            w("{name: w, kind: deny, start: '2026-12-20', end: '2026-12-21', duration: 1h}"),
            "spec.windows[0].duration",
            "not allowed with start/end",
        ),
        (
            w("{name: w, kind: deny, start: '2026-13-20', end: '2026-12-21'}"),
            "spec.windows[0].start",
            "invalid date-time '2026-13-20'",
        ),
        (
            w("{name: w, kind: deny, start: '1900-01-01', end: '2026-12-21'}"),
            "spec.windows[0].start",
            "date-time '1900-01-01' is outside the years 1970-2200",
        ),
        (
            w(
                "{name: w, kind: deny, schedule: '0 8 * * *', duration: 1h, start: '2026-12-20', end: '2026-12-21'}",
            ),
            "spec.windows[0]",
            "give exactly one of",
        ),
        (
            w("{name: w, kind: deny}"),
            "spec.windows[0]",
            "give exactly one of",
        ),
        (
            w("{name: '', kind: deny, start: '2026-12-20', end: '2026-12-21'}"),
            "spec.windows[0].name",
            "must not be empty",
        ),
    ];
    for (text, path, message) in &cases {
        let gate = parse_gate(text).unwrap_or_else(|e| panic!("{text}: {e}"));
        let e = gate.validate().unwrap_err();
        assert_eq!(e.path, *path, "{text}\n→ {e}");
        assert!(e.message.starts_with(message), "{text}\n→ {e}");
        assert_eq!(e.to_string(), format!("{}: {}", e.path, e.message));
    }
}

#[test]
fn accepted_time_forms() {
    for (start, end) in [
        ("2026-12-20", "2026-12-21"),
        ("2026-12-20T08:00", "2026-12-20T09:00"),
        ("2026-12-20T08:00:00", "2026-12-20T09:00:00"),
        ("2026-12-20T08:00:00Z", "2026-12-20T10:00:00+01:00"),
    ] {
        let text = full(&format!(
            "  clusters: {{names: [a]}}\n  windows: [{{name: w, kind: deny, start: '{start}', end: '{end}'}}]\n"
        ));
        parse_gate(&text)
            .unwrap()
            .validate()
            .unwrap_or_else(|e| panic!("{start}..{end}: {e}"));
    }
}

/// The in-cluster stories (Gate objects) are gate manifests too.
#[test]
fn in_cluster_examples_validate() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/in-cluster");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        if !text.contains("\nkind: Gate\n") {
            continue; // the Flagger Canary beside them
        }
        let gate = parse_gate(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        gate.validate()
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        names.push(gate.name().to_string());
    }
    names.sort();
    assert_eq!(names, ["maintenance", "sre-approval"]);
}

#[test]
fn every_example_parses_and_validates() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    let mut names = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            let text = std::fs::read_to_string(&path).unwrap();
            let gate = parse_gate(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            gate.validate()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            names.push(gate.name().to_string());
        }
    }
    names.sort();
    assert_eq!(
        names,
        [
            "business-hours",
            "holiday-calendar",
            "holiday-freeze",
            "maintenance-windows",
            "nginx-window",
            "nginx-window-dev",
            "no-deploy-friday",
            "prod-waves",
            "release-train",
            "sre-approval"
        ]
    );
}

#[test]
fn request_window_and_local_requests() {
    let g = parse_gate(&full(
        "  clusters: {names: [a]}\n  window: 24h\n  localRequests: {open: true}\n",
    ))
    .unwrap();
    g.validate().unwrap();
    assert_eq!(g.spec.request_window(), chrono::Duration::hours(24));
    assert!(
        g.spec.allows_local_request(true, true),
        "opening set explicitly"
    );
    assert!(
        g.spec.allows_local_request(false, true),
        "closing by default"
    );

    let g = parse_gate(&full("  clusters: {names: [a]}\n")).unwrap();
    assert_eq!(
        g.spec.request_window(),
        fleetgate_policy::DEFAULT_REQUEST_WINDOW
    );
    assert!(
        !g.spec.allows_local_request(true, true),
        "hub gates: no local opening by default"
    );
    assert!(
        g.spec.allows_local_request(true, false),
        "cluster gates: opening by default"
    );

    for (window, why) in [
        ("0s", "greater than zero"),
        ("169h", "at most 168h"),
        ("soon", "invalid duration"),
    ] {
        let err = parse_gate(&full(&format!(
            "  clusters: {{names: [a]}}\n  window: {window}\n"
        )))
        .unwrap()
        .validate()
        .unwrap_err();
        assert_eq!(err.path, "spec.window", "{window}");
        assert!(err.message.contains(why), "{window}: {}", err.message);
    }
    let err = parse_gate(&full(
        "  clusters: {names: [a]}\n  localRequests: {open: yes-please}\n",
    ))
    .unwrap_err();
    assert_eq!(err.path, "spec.localRequests.open");
}

#[test]
fn enforcement_defaults_to_enforce_and_round_trips_warn() {
    let enforce = parse_gate(&full("  clusters: {names: [a]}\n")).unwrap();
    assert_eq!(
        enforce.spec.enforcement,
        fleetgate_policy::Enforcement::Enforce
    );
    // The default is left out, so manifests stored before warn mode keep their JSON.
    let json = serde_json::to_value(&enforce).unwrap();
    assert!(json["spec"].get("enforcement").is_none(), "{json}");
    let warn = parse_gate(&full("  clusters: {names: [a]}\n  enforcement: warn\n")).unwrap();
    assert!(warn.spec.enforcement.is_warn());
    let json = serde_json::to_value(&warn).unwrap();
    assert_eq!(json["spec"]["enforcement"], "warn");
    assert_eq!(parse_gate(&json.to_string()).unwrap(), warn);
}
