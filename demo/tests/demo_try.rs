//! Every command the demo prints works as printed: the test starts the demo,
//! takes each command line of its output (the "Try:" lines, and the commands
//! indented under its story lines), and runs it in printed order with the real
//! `fleetgate` binary (and `kubectl`), in the environment the banner's
//! `export` line sets — nothing of the test's own. A command fails the test
//! when it exits non-zero or shows nothing of what it is printed for: each
//! command has its own "visible" rule below (the output names the gate,
//! cluster, request or delivery it is about), and a printed command without a
//! rule fails too, so a new line in the banner needs one here.

mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::Duration;

use fleetgate_tests::bin_path;
use support::Demo;

/// A command line as a shell reads it (words, '…' and "…" quoting), enough for
/// the lines the demo prints.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for ch in line.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '"' | '\'') => {
                quote = Some(ch);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            (None, c) => {
                cur.push(c);
                in_word = true;
            }
        }
    }
    assert!(quote.is_none(), "unbalanced quote in {line:?}");
    if in_word {
        out.push(cur);
    }
    out
}

/// `NAME=value`, for a word that is an assignment.
fn assignment(word: &str) -> Option<(String, String)> {
    let (k, v) = word.split_once('=')?;
    (!k.is_empty() && k.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
        .then(|| (k.to_string(), v.to_string()))
}

/// The command lines the demo printed: every "Try:" line in order (the first
/// exports the environment), then those indented under a story line
/// (`    fleetgate …`, `    kubectl …`), which read in that environment.
fn printed_commands(lines: &[String]) -> Vec<String> {
    let mut tried = Vec::new();
    let mut story = Vec::new();
    let mut in_try = false;
    for line in lines {
        if line == "Try:" {
            in_try = true;
            continue;
        }
        if in_try {
            if line.trim().is_empty() {
                in_try = false;
            } else {
                tried.push(line.trim().to_string());
            }
            continue;
        }
        let t = line.trim_start();
        if line.starts_with("    ") && (t.starts_with("fleetgate ") || t.starts_with("kubectl ")) {
            story.push(t.to_string());
        }
    }
    tried.extend(story);
    tried
}

/// What a printed command must show for the demo of `demo_try` (4 clusters):
/// text its output must contain, and text it must not.
struct Visible {
    contains: Vec<String>,
    lacks: Vec<String>,
}

fn shows(contains: &[&str]) -> Visible {
    Visible {
        contains: contains.iter().map(|s| s.to_string()).collect(),
        lacks: Vec::new(),
    }
}

/// The rule for `args` (the words after the program), run as `admin` or not.
fn visible(program: &str, args: &[String], admin: bool) -> Visible {
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match (program, a.as_slice()) {
        // The fleet: every cluster, the warn gate and the calendar gate.
        ("fleetgate", ["status"]) if admin => shows(&[
            "prod-eu-1",
            "prod-us-1",
            "staging-eu-1",
            "dev-eu-1",
            "nginx-window-dev",
            "0 (◌ 2 would)",
            "maintenance-windows",
        ]),
        // The team's token: its two clusters and its gate, nothing else.
        ("fleetgate", ["status"]) => Visible {
            contains: ["prod-eu-1", "prod-us-1", "sre-approval"]
                .map(String::from)
                .to_vec(),
            lacks: ["staging-eu-1", "dev-eu-1", "nginx-window", "business-hours"]
                .map(String::from)
                .to_vec(),
        },
        // Object holds on staging-eu-1: the Deployment held by nginx-window.
        ("fleetgate", ["status", "staging-eu-1"]) => {
            shows(&["cluster staging-eu-1", "Deployment.apps", "nginx-window"])
        }
        // Warn mode on dev-eu-1: would hold, holds nothing.
        ("fleetgate", ["status", "dev-eu-1"]) => shows(&[
            "cluster dev-eu-1",
            "would close (warn)",
            "◌ would: nginx-window-dev",
        ]),
        // The calendar feed's gate governs the core (prod) clusters.
        ("fleetgate", ["status", "--gate", "maintenance-windows"]) => {
            shows(&["maintenance-windows", "prod-eu-1", "prod-us-1"])
        }
        ("fleetgate", ["gate", "get", "maintenance-windows"]) => shows(&[
            "Name:        maintenance-windows",
            "/ops/maintenance.ics — ok",
        ]),
        ("fleetgate", ["gate", "preview", "business-hours"]) => {
            shows(&["gate business-hours", "allow window 'mon-to-thu'"])
        }
        ("fleetgate", ["rollout", "status", "team-a-rollout"]) => {
            shows(&["team-a-rollout", "canary", "dev-eu-1", "staging-eu-1"])
        }
        // The team's pending request, approved by the admin.
        ("fleetgate", ["override", "approve", id, "--reason", _]) => Visible {
            contains: vec![format!("request {id} approved: gate/sre-approval opened")],
            lacks: Vec::new(),
        },
        ("fleetgate", ["webhook", "deliveries", "demo-receiver"]) => {
            shows(&["delivered", "gate/nginx-window", "approval/"])
        }
        ("kubectl", [.., "get", "gates"]) => shows(&["sre-approval", "maintenance-windows"]),
        ("kubectl", [.., "-n", "nginx", "get", "deploy,cm", "-o", "wide"]) => {
            shows(&["deployment.apps/nginx", "configmap/nginx-config"])
        }
        _ => panic!(
            "the demo prints `{program} {}`, which this test does not know: say in `visible` \
             what it must show",
            args.join(" ")
        ),
    }
}

#[test]
fn every_printed_command_works_as_printed() {
    let demo = Demo::start(&["--clusters", "4", "--objects-per-cluster", "4"]);
    let commands = printed_commands(&demo.lines);
    assert!(
        commands
            .first()
            .is_some_and(|c| c.starts_with("export FLEETGATE_HUB=")),
        "the Try lines start with the environment: {commands:#?}"
    );
    let home = tempfile::tempdir().unwrap();
    let mut env: BTreeMap<String, String> = BTreeMap::new();
    let mut ran = Vec::new();
    for line in &commands {
        let mut w = words(line);
        if w.first().is_some_and(|p| p == "export") {
            for word in &w[1..] {
                let (k, v) = assignment(word).unwrap_or_else(|| panic!("{line}: {word}"));
                env.insert(k, v);
            }
            continue;
        }
        // `NAME=value command …`: for this command only.
        let mut own = env.clone();
        while let Some((k, v)) = w.first().and_then(|x| assignment(x)) {
            own.insert(k, v);
            w.remove(0);
        }
        let (program, args) = w.split_first().unwrap_or_else(|| panic!("empty: {line}"));
        let mut cmd = match program.as_str() {
            "fleetgate" => Command::new(bin_path("fleetgate")),
            "kubectl" => Command::new("kubectl"),
            other => panic!("the demo prints a command of {other}: {line}"),
        };
        // Only what the banner sets, in an empty home (no CLI config of the machine's).
        for (k, _) in std::env::vars() {
            if k.starts_with("FLEETGATE_") || k == "KUBECONFIG" {
                cmd.env_remove(k);
            }
        }
        let out = cmd
            .args(args)
            .envs(&own)
            .env("HOME", home.path())
            .env("XDG_CONFIG_HOME", home.path())
            .output()
            .unwrap_or_else(|e| panic!("{line}: {e}"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{line}: exit {:?}\n{stdout}\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        let admin = own.get("FLEETGATE_TOKEN") == Some(&demo.token);
        if program == "fleetgate" {
            assert_eq!(
                env.get("FLEETGATE_HUB"),
                Some(&demo.hub),
                "{line}: run before the banner's export line"
            );
        }
        let rule = visible(program, args, admin);
        for want in &rule.contains {
            assert!(
                stdout.contains(want.as_str()),
                "{line}: no {want:?} in\n{stdout}"
            );
        }
        for not in &rule.lacks {
            assert!(
                !stdout.contains(not.as_str()),
                "{line}: shows {not:?}\n{stdout}"
            );
        }
        ran.push(format!(
            "{program} {}",
            args.first().map_or("", String::as_str)
        ));
    }
    // One per capability at least: fleet, windows, holds, rollout, approvals, calendar, warn,
    // webhooks, team, in-cluster Gate objects.
    assert!(ran.len() >= 10, "{ran:?}");

    // The approval opened sre-approval on prod-eu-1: the hub says so, and the demo's webhook
    // receiver got the notification (the demo prints what it receives once ready).
    let approvals = demo.get("/approvals?status=approved");
    assert!(
        approvals["items"].as_array().is_some_and(|a| a
            .iter()
            .any(|r| r["gate"] == "sre-approval"
                && r["requester"] == "payments-ci"
                && r["decidedBy"] == "bootstrap-admin")),
        "{approvals}"
    );
    let got = demo.wait_line(
        "webhook → demo-receiver: approval.approved approval/",
        Duration::from_secs(30),
    );
    assert!(got.is_some(), "no approval.approved at the demo's receiver");
}

#[test]
fn the_reader_splits_as_a_shell_does() {
    assert_eq!(
        words(r#"FLEETGATE_TOKEN=fga_x fleetgate override approve 1 --reason "diff reviewed""#),
        [
            "FLEETGATE_TOKEN=fga_x",
            "fleetgate",
            "override",
            "approve",
            "1",
            "--reason",
            "diff reviewed"
        ]
    );
    assert_eq!(
        assignment("FLEETGATE_HUB=http://h:1"),
        Some(("FLEETGATE_HUB".into(), "http://h:1".into()))
    );
    assert_eq!(assignment("--reason=x"), None);
    let lines: Vec<String> = [
        "• rollout: …",
        "    fleetgate rollout status g",
        "",
        "Try:",
        "  export A=1",
        "  fleetgate status",
        "",
        "Ctrl-C stops everything",
    ]
    .map(String::from)
    .to_vec();
    assert_eq!(
        printed_commands(&lines),
        [
            "export A=1",
            "fleetgate status",
            "fleetgate rollout status g"
        ]
    );
}
