//! The real `fleetgate` binary, offline: `gate validate` and `gate preview`
//! on the files in examples/ and on broken manifests (exit codes, field
//! paths, the exact preview JSON), plus completions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn data(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
        .display()
        .to_string()
}

/// Runs the CLI with no config file and no hub/token in the environment.
fn run(args: &[&str]) -> Output {
    let home = tempfile::tempdir().unwrap();
    Command::new(env!("CARGO_BIN_EXE_fleetgate"))
        .args(args)
        .env_remove("FLEETGATE_HUB")
        .env_remove("FLEETGATE_TOKEN")
        .env_remove("FLEETGATE_CONFIG")
        .env("HOME", home.path())
        .env("XDG_CONFIG_HOME", home.path())
        .output()
        .expect("running fleetgate")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn validate_accepts_valid_files_and_directories() {
    let o = run(&["gate", "validate", "-f", &data("gates")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    for name in ["business-hours", "no-deploy-friday", "sre-approval"] {
        assert!(out.contains(&format!("gate '{name}' is valid")), "{out}");
    }
    // Multi-document files are numbered in messages.
    assert!(out.contains("two-gates.yaml#2"), "{out}");
}

#[test]
fn every_example_validates_and_previews() {
    let dir = repo().join("examples");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    files.retain(|f| matches!(f.extension().and_then(|e| e.to_str()), Some("yaml" | "yml")));
    files.sort();
    for f in &files {
        let f = f.display().to_string();
        let o = run(&["gate", "validate", "-f", &f]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
        assert!(!stderr(&o).contains("warning"), "{f}: {}", stderr(&o));
        let o = run(&[
            "gate",
            "preview",
            "-f",
            &f,
            "--from",
            "2026-11-23T00:00:00Z",
            "--to",
            "2027-01-10T00:00:00Z",
            "-o",
            "json",
        ]);
        assert_eq!(o.status.code(), Some(0), "{f}: {}", stderr(&o));
        let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
        assert!(v["transitions"].is_array(), "{f}");
    }
}

#[test]
fn validate_warns_about_cron_schedules_whose_days_changed() {
    let file = data("warn/stepped-days.yaml");
    let o = run(&["gate", "validate", "-f", &file]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stdout(&o).contains("gate 'stepped' is valid"),
        "{}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with(&format!(
            "warning: {file}: gate 'stepped': spec.windows[1].schedule: cron '0 0 */2 * MON' fires on other days than before"
        )),
        "{err}"
    );
    let o = run(&["gate", "validate", "-f", &file, "-o", "json"]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(
        v[0]["warnings"][0]["path"], "spec.windows[1].schedule",
        "{v}"
    );
}

#[test]
fn validate_fails_with_the_field_path_and_exit_code_6() {
    let o = run(&["gate", "validate", "-f", &data("bad/bad-cron.yaml")]);
    assert_eq!(o.status.code(), Some(6));
    let err = stderr(&o);
    assert!(
        err.contains("bad-cron.yaml: spec.windows[1].schedule: invalid cron field 'day-of-week'"),
        "{err}"
    );

    let o = run(&["gate", "validate", "-f", &data("bad/unknown-field.yaml")]);
    assert_eq!(o.status.code(), Some(6));
    assert!(stderr(&o).contains("spec.timezone"), "{}", stderr(&o));

    // Every bad file is reported, not only the first.
    let o = run(&["gate", "validate", "-f", &data("bad"), "-f", &data("gates")]);
    assert_eq!(o.status.code(), Some(6));
    let err = stderr(&o);
    assert!(err.contains("bad-cron.yaml"), "{err}");
    assert!(err.contains("unknown-field.yaml"), "{err}");
    assert!(
        err.contains("gate 'business-hours' is also defined in"),
        "{err}"
    );

    let o = run(&["gate", "validate", "-f", "/nonexistent/gate.yaml"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("/nonexistent/gate.yaml"));
}

#[test]
fn preview_json_is_exactly_the_documented_shape() {
    let o = run(&[
        "gate",
        "preview",
        "-f",
        &data("gates/business-hours.yaml"),
        "--from",
        "2026-11-21T12:00:00Z",
        "--to",
        "2026-12-01T00:00:00Z",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["gate"], "business-hours");
    assert_eq!(v["initial"]["state"], "closed");
    assert_eq!(v["initial"]["reason"], "default (closed)");
    let at: Vec<(&str, &str)> = v["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["at"].as_str().unwrap(), t["state"].as_str().unwrap()))
        .collect();
    // Mon 08:00 CET open, Thu 17:00 CET closed, next Mon open; (from, to] only.
    assert_eq!(
        at,
        vec![
            ("2026-11-23T07:00:00Z", "open"),
            ("2026-11-26T16:00:00Z", "closed"),
            ("2026-11-30T07:00:00Z", "open"),
        ]
    );
    assert!(
        v["transitions"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("weekdays")
    );
    // Keys in the documented order, each transition exactly {at, state, reason}.
    let pos = |k: &str| text.find(&format!("\"{k}\"")).unwrap();
    assert!(pos("gate") < pos("initial") && pos("initial") < pos("transitions"));
    for t in v["transitions"].as_array().unwrap() {
        let keys: Vec<&String> = t.as_object().unwrap().keys().collect();
        assert_eq!(keys.len(), 3);
    }
}

#[test]
fn preview_reads_local_times_in_the_gate_zone() {
    // 08:00 Berlin = 07:00Z: the window has just opened at --from.
    let o = run(&[
        "gate",
        "preview",
        "-f",
        &data("gates/business-hours.yaml"),
        "--from",
        "2026-11-23T08:00",
        "--to",
        "2026-11-26T16:59",
        "-o",
        "json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["initial"]["state"], "open");
    assert_eq!(v["transitions"], serde_json::json!([]));
    // One minute earlier it is still closed and opens within the range.
    let o = run(&[
        "gate",
        "preview",
        "-f",
        &data("gates/business-hours.yaml"),
        "--from",
        "2026-11-23T07:59",
        "--to",
        "2026-11-23T09:00",
        "-o",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    assert_eq!(v["initial"]["state"], "closed");
    assert_eq!(v["transitions"][0]["at"], "2026-11-23T07:00:00Z");
}

#[test]
fn preview_table_is_in_the_gate_zone_across_dst() {
    // Berlin switches to CEST on 2026-03-29: the windows after show CEST.
    let o = run(&[
        "gate",
        "preview",
        "-f",
        &data("gates/business-hours.yaml"),
        "--from",
        "2026-03-20",
        "--to",
        "2026-04-03",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    assert!(
        out.starts_with("gate business-hours (times in Europe/Berlin)"),
        "{out}"
    );
    let row = |when: &str| {
        out.lines()
            .find(|l| l.starts_with(when))
            .unwrap_or_else(|| panic!("no row {when} in\n{out}"))
            .split_whitespace()
            .nth(4)
            .unwrap()
            .to_string()
    };
    assert_eq!(row("Mon 2026-03-23 08:00 CET "), "open");
    assert_eq!(row("Thu 2026-03-26 17:00 CET "), "closed");
    assert_eq!(row("Mon 2026-03-30 08:00 CEST "), "open");
    assert_eq!(row("Thu 2026-04-02 17:00 CEST "), "closed");
}

#[test]
fn preview_rejects_bad_ranges_as_usage_errors() {
    let f = data("gates/business-hours.yaml");
    let cases: [&[&str]; 3] = [
        &["--from", "friday"],
        &["--from", "2026-11-23", "--to", "2026-11-22"],
        &["--from", "2026-01-01", "--to", "2028-01-01"],
    ];
    for extra in cases {
        let mut args = vec!["gate", "preview", "-f", &f];
        args.extend_from_slice(extra);
        let o = run(&args);
        assert_eq!(o.status.code(), Some(2), "{extra:?}: {}", stderr(&o));
        assert!(stderr(&o).contains("--"), "{}", stderr(&o));
    }
    // A file with two gates is ambiguous for preview.
    let o = run(&["gate", "preview", "-f", &data("gates/two-gates.yaml")]);
    assert_eq!(o.status.code(), Some(2));
    // Neither -f nor a name: clap's usage error.
    let o = run(&["gate", "preview"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn completions_for_each_shell() {
    for (shell, marker) in [
        ("bash", "_fleetgate()"),
        ("zsh", "#compdef fleetgate"),
        ("fish", "complete -c fleetgate"),
    ] {
        let o = run(&["completion", shell]);
        assert_eq!(o.status.code(), Some(0));
        assert!(stdout(&o).contains(marker), "{shell}");
    }
}

#[test]
fn preview_estimates_the_waves_of_a_rollout_gate() {
    let example = repo()
        .join("examples/rollout-waves.yaml")
        .display()
        .to_string();
    // Wed 25 Nov 2026: the window opens at 08:00 Berlin (07:00Z) until 17:00.
    let range = ["--from", "2026-11-25T00:00", "--to", "2026-11-25T23:00"];
    let mut args = vec!["gate", "preview", "-f", &example];
    args.extend(range);
    let json_args: Vec<&str> = args.iter().copied().chain(["-o", "json"]).collect();
    let o = run(&json_args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_str(&stdout(&o)).unwrap();
    let r = &v["rollouts"][0];
    assert_eq!(r["openingAt"], "2026-11-25T07:00:00Z", "{v}");
    assert_eq!(r["closesAt"], "2026-11-25T16:00:00Z");
    let waves: Vec<(String, String, bool)> = (r["waves"].as_array().unwrap().iter())
        .map(|w| {
            (
                w["name"].as_str().unwrap().to_string(),
                w["estimatedReleaseAt"].as_str().unwrap().to_string(),
                w["approval"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        waves,
        [
            ("canary".into(), "2026-11-25T07:00:00Z".into(), false),
            ("early".into(), "2026-11-25T07:30:00Z".into(), false),
            ("rest".into(), "2026-11-25T08:00:00Z".into(), true),
        ]
    );
    // The table states them as estimates, in the gate's zone.
    let o = run(&args);
    let text = stdout(&o);
    assert!(text.contains("rollout waves, estimated"), "{text}");
    assert!(text.contains("3 rest"), "{text}");
    assert!(text.contains("Wed 2026-11-25 09:00"), "{text}");
    assert!(text.contains("needs an operator's release-next"), "{text}");
}
