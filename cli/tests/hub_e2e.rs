//! The real `fleetgate` binary against a real `fleetgate-hub` process on a
//! throwaway PostgreSQL: gates as code (apply idempotence, diff), overrides,
//! clusters, tokens, status, audit, parseable JSON and the exit codes.

mod common;

use std::process::Command;

use common::{ADMIN, data, err, out, start_hub};
use serde_json::Value;

#[test]
fn apply_is_idempotent_and_diff_shows_changes() {
    let hub = start_hub();
    let gates = data("gates");
    let first = hub.ok(&["gate", "apply", "-f", &gates]);
    assert_eq!(
        first,
        "gate/business-hours created\ngate/no-deploy-friday created\ngate/sre-approval created\n"
    );
    let again = hub.ok(&["gate", "apply", "-f", &gates]);
    assert_eq!(
        again,
        "gate/business-hours unchanged\ngate/no-deploy-friday unchanged\ngate/sre-approval unchanged\n"
    );
    // Nothing to change: diff prints nothing and --exit-code gives 0.
    let o = hub.cli(&["gate", "diff", "-f", &gates, "--exit-code"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(out(&o), "");

    // Change one gate: diff shows it (exit 8 with --exit-code), apply configures it.
    let dir = tempfile::tempdir().unwrap();
    let changed = dir.path().join("business-hours.yaml");
    let text = std::fs::read_to_string(data("gates/business-hours.yaml")).unwrap();
    std::fs::write(&changed, text.replace("duration: 81h", "duration: 82h")).unwrap();
    let changed = changed.display().to_string();
    let o = hub.cli(&["gate", "diff", "-f", &changed, "--exit-code"]);
    assert_eq!(o.status.code(), Some(8), "{}", err(&o));
    let d = out(&o);
    assert!(d.contains("--- hub/gates/business-hours"), "{d}");
    assert!(
        d.contains("-    duration: 81h") && d.contains("+    duration: 82h"),
        "{d}"
    );
    let v = hub.json(&["gate", "apply", "-f", &changed, "--reason", "longer window"]);
    assert_eq!(
        v,
        serde_json::json!([{"gate": "business-hours", "action": "configured"}])
    );
    assert_eq!(
        hub.ok(&["gate", "apply", "-f", &changed]),
        "gate/business-hours unchanged\n"
    );

    // list / get: parseable JSON, get -o yaml round-trips through validate.
    let list = hub.json(&["gate", "list"]);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["business-hours", "no-deploy-friday", "sre-approval"]
    );
    assert_eq!(list[0]["version"], 2);
    let yaml = hub.ok(&["gate", "get", "business-hours", "-o", "yaml"]);
    let saved = dir.path().join("saved.yaml");
    std::fs::write(&saved, &yaml).unwrap();
    let saved = saved.display().to_string();
    hub.ok(&["gate", "validate", "-f", &saved]);
    assert_eq!(
        hub.ok(&["gate", "apply", "-f", &saved]),
        "gate/business-hours unchanged\n"
    );
    let table = hub.ok(&["gate", "get", "business-hours"]);
    assert!(table.contains("Time zone:   Europe/Berlin"), "{table}");

    // The audit log has the creates, the replace (with its reason).
    let audit = hub.json(&["audit", "--target", "business-hours"]);
    let actions: Vec<(&str, &str)> = audit
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["action"].as_str().unwrap(),
                e["reason"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(actions.contains(&("gate.create", "")), "{actions:?}");
    assert!(
        actions
            .iter()
            .any(|(a, r)| a.ends_with("replace") && *r == "longer window"),
        "{actions:?}"
    );
    // Filtered by action and by kind of target, across every gate.
    let creates = hub.json(&["audit", "--action", "gate.create", "--kind", "gate"]);
    let creates = creates.as_array().unwrap();
    assert!(!creates.is_empty());
    assert!(
        creates
            .iter()
            .all(|e| e["action"] == "gate.create" && e["targetKind"] == "gate"),
        "{creates:?}"
    );
    let none = hub.json(&["audit", "--action", "gate.create", "--kind", "cluster"]);
    assert_eq!(none.as_array().unwrap().len(), 0, "{none:?}");

    // Hub preview = offline preview for the same range.
    let range = [
        "--from",
        "2026-11-21T12:00:00Z",
        "--to",
        "2026-12-01T00:00:00Z",
    ];
    let mut hub_args = vec!["gate", "preview", "business-hours"];
    hub_args.extend(range);
    let mut file_args = vec!["gate", "preview", "-f", &changed];
    file_args.extend(range);
    assert_eq!(hub.json(&hub_args), hub.json(&file_args));

    // delete → get is "not found" (exit 3).
    hub.ok(&["gate", "delete", "no-deploy-friday"]);
    let o = hub.cli(&["gate", "get", "no-deploy-friday"]);
    assert_eq!(o.status.code(), Some(3), "{}", err(&o));
    assert!(err(&o).contains("no-deploy-friday"), "{}", err(&o));
}

/// `gate preview -f` expands calendars over the requested range as the hub does: a weekly
/// event months before today (outside the default horizon) prints its transitions, the same
/// JSON as the hub's preview of the applied gate.
#[test]
fn offline_preview_expands_calendars_over_the_range_as_the_hub_does() {
    let hub = start_hub();
    let file = data("calendar/weekly-october.yaml");
    hub.ok(&["gate", "apply", "-f", &file]);
    let range = [
        "--from",
        "2026-10-01T00:00:00Z",
        "--to",
        "2026-10-15T00:00:00Z",
    ];
    let mut file_args = vec!["gate", "preview", "-f", &file];
    file_args.extend(range);
    let offline = hub.json(&file_args);
    let at: Vec<&str> = offline["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["at"].as_str().unwrap())
        .collect();
    assert_eq!(
        at,
        [
            "2026-10-01T08:00:00Z",
            "2026-10-01T12:00:00Z",
            "2026-10-08T08:00:00Z",
            "2026-10-08T12:00:00Z",
        ],
        "{offline}"
    );
    let mut hub_args = vec!["gate", "preview", "weekly-october"];
    hub_args.extend(range);
    assert_eq!(hub.json(&hub_args), offline);
}

#[test]
fn overrides_open_close_cancel_and_status() {
    let hub = start_hub();
    let reg = hub.json(&[
        "cluster",
        "register",
        "prod-eu-1",
        "-L",
        "tier=prod",
        "-L",
        "region=eu",
    ]);
    assert!(reg["token"].as_str().unwrap().starts_with("fgs_"), "{reg}");
    hub.ok(&["cluster", "register", "dev-1", "-L", "tier=dev"]);
    hub.ok(&["gate", "apply", "-f", &data("gates/two-gates.yaml")]);

    // sre-approval is closed by default on prod-eu-1.
    let st = hub.json(&["status", "prod-eu-1"]);
    let gate = |st: &Value, name: &str| {
        st["gates"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["gate"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no gate {name} in {st}"))
    };
    assert_eq!(gate(&st, "sre-approval")["state"], "closed");

    let ov = hub.json(&[
        "gate",
        "open",
        "sre-approval",
        "--for",
        "1h",
        "--reason",
        "hotfix INC-42",
    ]);
    let id = ov["id"].as_str().unwrap().to_string();
    assert_eq!(ov["state"], "open");
    let st = hub.json(&["status", "prod-eu-1"]);
    let g = gate(&st, "sre-approval");
    assert_eq!(g["state"], "open");
    assert!(
        g["reason"].as_str().unwrap().contains("hotfix INC-42"),
        "{g}"
    );
    let live = hub.json(&["gate", "overrides", "sre-approval"]);
    assert_eq!(live.as_array().unwrap().len(), 1);
    assert_eq!(live[0]["id"], id.as_str());

    // Cancel → closed again, no live overrides.
    hub.ok(&["gate", "cancel", "sre-approval", &id, "--reason", "done"]);
    assert_eq!(
        gate(&hub.json(&["status", "prod-eu-1"]), "sre-approval")["state"],
        "closed"
    );
    assert_eq!(
        hub.json(&["gate", "overrides", "sre-approval"]),
        serde_json::json!([])
    );

    // Close ahead of schedule on a selector; cancel --all.
    let closed = hub.ok(&[
        "gate",
        "close",
        "no-deploy-friday",
        "--for",
        "30m",
        "--reason",
        "incident",
        "-l",
        "tier=prod",
    ]);
    assert!(
        closed.starts_with("gate/no-deploy-friday closed on selector"),
        "{closed}"
    );
    assert_eq!(
        gate(&hub.json(&["status", "prod-eu-1"]), "no-deploy-friday")["state"],
        "closed"
    );
    hub.ok(&["gate", "cancel", "no-deploy-friday", "--all"]);
    assert_eq!(
        hub.json(&["gate", "overrides", "no-deploy-friday"]),
        serde_json::json!([])
    );

    // Fleet status: JSON parseable, table has a row per cluster, and it
    // takes one API request however many clusters there are.
    let before = api_requests(&hub);
    let fleet = hub.json(&["status"]);
    assert_eq!(api_requests(&hub) - before, 1, "fleet status requests");
    assert_eq!(fleet["summary"]["clusters"]["total"], 2);
    assert_eq!(fleet["clusters"].as_array().unwrap().len(), 2);
    let table = hub.ok(&["status"]);
    assert!(
        table.contains("prod-eu-1") && table.contains("dev-1"),
        "{table}"
    );
    // sre-approval (closed by default) always holds prod-eu-1; whether
    // no-deploy-friday does too depends on today's weekday.
    let row = table
        .lines()
        .find(|l| l.starts_with("prod-eu-1 "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.contains("disconnected   False"), "{row}");
    assert!(row.contains("sre-approval"), "{row}");
    // NEXT is when the cluster's own state changes: never while sre-approval (no windows)
    // is closed, whatever no-deploy-friday's next transition.
    assert!(row.contains(" — "), "{row}");
    let prod = fleet["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["cluster"]["name"] == "prod-eu-1")
        .unwrap();
    assert_eq!(prod["nextTransition"], Value::Null, "{prod}");
    let text = hub.ok(&["status", "prod-eu-1"]);
    assert!(text.contains("next change: —"), "{text}");
    let only_prod = hub.json(&["status", "-l", "tier=prod"]);
    assert_eq!(only_prod["clusters"].as_array().unwrap().len(), 1);

    // Cluster commands.
    hub.ok(&["cluster", "label", "dev-1", "region=us", "tier-"]);
    let dev = hub.json(&["cluster", "get", "dev-1"]);
    assert_eq!(dev["labels"], serde_json::json!({"region": "us"}));
    let listed = hub.json(&["cluster", "list", "-l", "region in (eu,us)"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    let rotated = hub.json(&["cluster", "rotate-token", "prod-eu-1"]);
    assert_ne!(rotated["token"], reg["token"]);
    hub.ok(&["cluster", "delete", "dev-1"]);
    assert_eq!(hub.cli(&["cluster", "get", "dev-1"]).status.code(), Some(3));
}

#[test]
fn status_pages_the_fleet_with_limit_and_cursor() {
    let hub = start_hub();
    for c in ["c1", "c2", "c3"] {
        hub.ok(&["cluster", "register", c]);
    }
    let first = hub.json(&["status", "--limit", "2"]);
    let names = |v: &Value| -> Vec<String> {
        v["clusters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["cluster"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&first), ["c1", "c2"], "{first}");
    assert_eq!(
        first["summary"]["clusters"]["total"], 3,
        "the counts stay fleet-wide"
    );
    let cursor = first["nextCursor"].as_str().unwrap().to_string();
    let text = hub.ok(&["status", "--limit", "2"]);
    assert!(
        text.contains(&format!("fleetgate status --limit 2 --cursor {cursor}")),
        "{text}"
    );
    let last = hub.json(&["status", "--limit", "2", "--cursor", &cursor]);
    assert_eq!(names(&last), ["c3"], "{last}");
    assert!(last.get("nextCursor").is_none(), "{last}");
    assert_eq!(names(&hub.json(&["status"])), ["c1", "c2", "c3"]);
    // The hub refuses a bad limit naming it (422: exit 6).
    let o = hub.cli(&["status", "--limit", "0"]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    assert!(err(&o).contains("limit"), "{}", err(&o));
}

#[test]
fn exit_codes_scripts_can_rely_on() {
    let hub = start_hub();
    hub.ok(&["cluster", "register", "c1"]);
    hub.ok(&["gate", "apply", "-f", &data("gates/business-hours.yaml")]);

    // 3: not found.
    assert_eq!(hub.cli(&["gate", "get", "nope"]).status.code(), Some(3));
    // 4: conflict (name taken).
    let o = hub.cli(&["cluster", "register", "c1"]);
    assert_eq!(o.status.code(), Some(4), "{}", err(&o));
    // 5: no / wrong token (401), role too low (403).
    let o = hub.cli_as("", &["gate", "list"]);
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(err(&o).contains("hint: pass a token"), "{}", err(&o));
    assert_eq!(
        hub.cli_as("fga_wrong-token-000000000000", &["gate", "list"])
            .status
            .code(),
        Some(5)
    );
    let viewer = hub.json(&["token", "create", "ci-viewer", "--role", "viewer"]);
    let secret = viewer["secret"].as_str().unwrap().to_string();
    assert!(secret.starts_with("fga_"));
    let o = hub.cli_as(&secret, &["gate", "list", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let o = hub.cli_as(
        &secret,
        &[
            "gate",
            "open",
            "business-hours",
            "--for",
            "1h",
            "--reason",
            "x",
        ],
    );
    assert_eq!(o.status.code(), Some(5), "{}", err(&o));
    assert!(err(&o).contains("403"), "{}", err(&o));
    hub.ok(&["token", "revoke", "ci-viewer"]);
    assert_eq!(
        hub.cli_as(&secret, &["gate", "list"]).status.code(),
        Some(5)
    );

    // 6: invalid input, locally (manifest) and from the hub (422 with the field).
    let o = hub.cli(&["gate", "apply", "-f", &data("bad/bad-cron.yaml")]);
    assert_eq!(o.status.code(), Some(6));
    let o = hub.cli(&[
        "gate",
        "open",
        "business-hours",
        "--for",
        "1h",
        "--reason",
        "x",
        "--cluster",
        "NOT A NAME",
    ]);
    assert!(
        matches!(o.status.code(), Some(6) | Some(3)),
        "{:?} {}",
        o.status,
        err(&o)
    );
    // 2: usage (bad flag values caught before the hub).
    let o = hub.cli(&[
        "gate",
        "open",
        "business-hours",
        "--for",
        "soon",
        "--reason",
        "x",
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", err(&o));
    assert!(err(&o).contains("--for"), "{}", err(&o));
    let o = hub.cli(&["gate", "open", "business-hours", "--reason", "x"]);
    assert_eq!(
        o.status.code(),
        Some(2),
        "--for or --until-cancelled is required"
    );
    // 7: hub unreachable.
    let o = Command::new(env!("CARGO_BIN_EXE_fleetgate"))
        .args([
            "gate",
            "list",
            "--hub",
            "http://127.0.0.1:1",
            "--token",
            ADMIN,
        ])
        .env("HOME", &hub.home)
        .env("XDG_CONFIG_HOME", &hub.home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(7), "{}", err(&o));
    assert!(
        err(&o).contains("cannot reach the hub at http://127.0.0.1:1"),
        "{}",
        err(&o)
    );
}

#[test]
fn config_file_supplies_hub_and_token() {
    let hub = start_hub();
    let dir = hub.home.join("fleetgate");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("config.yaml"),
        format!("hub: {}\ntoken: {ADMIN}\n", hub.url),
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_fleetgate"))
        .args(["cluster", "list", "-o", "json"])
        .env_remove("FLEETGATE_HUB")
        .env_remove("FLEETGATE_TOKEN")
        .env_remove("FLEETGATE_CONFIG")
        .env("HOME", &hub.home)
        .env("XDG_CONFIG_HOME", &hub.home)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    assert_eq!(
        serde_json::from_slice::<Value>(&o.stdout).unwrap(),
        serde_json::json!([])
    );
}

#[test]
fn apply_prune_deletes_gates_no_file_defines() {
    let hub = start_hub();
    hub.ok(&["gate", "apply", "-f", &data("gates")]);
    // A broken file aborts before anything is pruned.
    let o = hub.cli(&[
        "gate",
        "apply",
        "--prune",
        "-f",
        &data("gates/two-gates.yaml"),
        "-f",
        &data("bad/bad-cron.yaml"),
    ]);
    assert_eq!(o.status.code(), Some(6));
    assert_eq!(hub.json(&["gate", "list"]).as_array().unwrap().len(), 3);
    // Without business-hours.yaml, --prune removes that gate and keeps the rest.
    let out = hub.ok(&[
        "gate",
        "apply",
        "--prune",
        "-f",
        &data("gates/two-gates.yaml"),
        "--reason",
        "removed from git",
    ]);
    assert_eq!(
        out,
        "gate/no-deploy-friday unchanged\ngate/sre-approval unchanged\ngate/business-hours pruned\n"
    );
    let names: Vec<String> = hub
        .json(&["gate", "list"])
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["no-deploy-friday", "sre-approval"]);
    let audit = hub.json(&["audit", "--target", "business-hours", "--limit", "1"]);
    assert_eq!(audit[0]["reason"], "removed from git");
}

/// API requests the hub has served so far (its `/metrics`, scrapes excluded).
fn api_requests(hub: &common::Hub) -> u64 {
    let text = common::runtime().block_on(async {
        reqwest::get(format!("{}/metrics", hub.url))
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    });
    text.lines()
        .filter(|l| l.starts_with("fleetgate_hub_http_requests_total{"))
        .filter(|l| !l.contains("route=\"/metrics\""))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum()
}

/// `fleetgate rollout`: the hub's driver (a real process on the system clock) starts the
/// rollout of an open gate and releases its canary; status shows the waves; an operator
/// pauses; a command the state does not allow fails with the hub's reason.
#[test]
fn rollout_status_and_commands() {
    let hub = start_hub();
    hub.ok(&["cluster", "register", "c1"]);
    hub.ok(&["cluster", "register", "c2"]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("waves.yaml");
    std::fs::write(
        &file,
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: waves}\nspec:\n  clusters: {names: [c1, c2]}\n  rollout:\n    waves:\n      - {name: canary, clusters: {names: [c1]}}\n      - {name: rest}\n",
    )
    .unwrap();
    hub.ok(&["gate", "apply", "-f", &file.display().to_string()]);
    // The driver ticks every second: the rollout appears within a few.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let status = loop {
        let o = hub.cli(&["rollout", "status", "waves", "-o", "json"]);
        if o.status.code() == Some(0) {
            break serde_json::from_str::<Value>(&out(&o)).unwrap();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no rollout: {}",
            err(&o)
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(status["state"], "running");
    assert_eq!(status["waves"][0]["clusters"][0]["name"], "c1");
    assert!(status["waves"][0]["clusters"][0]["releasedAt"].is_string());
    // No spoke: c1 is unknown, never healthy; c2 waits for wave 2.
    assert_eq!(status["waves"][0]["clusters"][0]["health"], "unknown");
    assert_eq!(status["waves"][1]["clusters"][0]["releasedAt"], Value::Null);
    let table = hub.ok(&["rollout", "status", "waves"]);
    assert!(table.contains("gate/waves rollout"), "{table}");
    assert!(
        table.contains("1 canary") && table.contains("2 rest"),
        "{table}"
    );

    let paused = hub.json(&["rollout", "pause", "waves"]);
    assert_eq!(paused["state"], "paused");
    let o = hub.cli(&["rollout", "release-next", "waves"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(err(&o).contains("resume it first"), "{}", err(&o));
    let audit = hub.json(&["audit", "--target", "waves"]);
    let actions: Vec<&str> = audit
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["action"].as_str())
        .collect();
    assert!(actions.contains(&"rollout.pause"), "{audit}");
    assert!(actions.contains(&"rollout.release"), "{audit}");
}
