//! The real `fleetgate` binary against a real hub: access policies as code
//! (`access-policy apply|diff|list|get|delete`, `--prune`), a token created
//! with `--scope` seeing only its part of the fleet, and `audit --team` /
//! `--person` filtering by who granted a change.

mod common;

use std::path::Path;

use common::{err, out, start_hub};

fn examples() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/access")
        .display()
        .to_string()
}

#[test]
fn access_policies_as_code_scoped_tokens_and_audit_by_team() {
    let hub = start_hub();
    let dir = examples();
    assert_eq!(
        hub.ok(&["access-policy", "apply", "-f", &dir, "--reason", "onboard"]),
        "accesspolicy/everyone-views created\naccesspolicy/team-payments-admins created\n\
         accesspolicy/team-payments created\n"
    );
    assert_eq!(
        hub.ok(&["access-policy", "apply", "-f", &dir]),
        "accesspolicy/everyone-views unchanged\naccesspolicy/team-payments-admins unchanged\n\
         accesspolicy/team-payments unchanged\n"
    );
    let o = hub.cli(&["access-policy", "diff", "-f", &dir, "--exit-code"]);
    assert_eq!((o.status.code(), out(&o)), (Some(0), String::new()));

    // A changed file: diff shows it (exit 8), apply configures it; get -o yaml round-trips.
    let tmp = tempfile::tempdir().unwrap();
    let changed = tmp.path().join("team-payments.yaml");
    let text = std::fs::read_to_string(format!("{dir}/team-payments.yaml")).unwrap();
    std::fs::write(
        &changed,
        text.replace("groups: [payments]", "groups: [payments, pay-oncall]"),
    )
    .unwrap();
    let changed = changed.display().to_string();
    let o = hub.cli(&["access-policy", "diff", "-f", &changed, "--exit-code"]);
    assert_eq!(o.status.code(), Some(8), "{}", err(&o));
    assert!(out(&o).contains("+    - pay-oncall"), "{}", out(&o));
    assert_eq!(
        hub.ok(&["access-policy", "apply", "-f", &changed]),
        "accesspolicy/team-payments configured\n"
    );
    let yaml = hub.ok(&["access-policy", "get", "team-payments", "-o", "yaml"]);
    let saved = tmp.path().join("saved.yaml");
    std::fs::write(&saved, yaml).unwrap();
    assert_eq!(
        hub.ok(&["access-policy", "apply", "-f", &saved.display().to_string()]),
        "accesspolicy/team-payments unchanged\n"
    );

    // --prune: the files are the whole truth.
    assert_eq!(
        hub.ok(&["access-policy", "apply", "-f", &changed, "--prune"]),
        "accesspolicy/team-payments unchanged\naccesspolicy/everyone-views pruned\n\
         accesspolicy/team-payments-admins pruned\n"
    );
    let list = hub.json(&["access-policy", "list"]);
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["team-payments"]);
    assert!(
        hub.ok(&["access-policy", "list"])
            .contains("group:pay-oncall")
    );

    // A bad manifest: exit 6 naming the file and field; nothing applied.
    let bad = tmp.path().join("bad.yaml");
    std::fs::write(&bad, text.replace("role: operator", "role: owner")).unwrap();
    let o = hub.cli(&["access-policy", "apply", "-f", &bad.display().to_string()]);
    assert_eq!(o.status.code(), Some(6), "{}", err(&o));
    assert!(err(&o).contains("bad.yaml"), "{}", err(&o));

    // A token with its own scope sees only the payments clusters; the policy
    // naming it lets it close the payments gate, audited as granted by it.
    hub.ok(&["cluster", "register", "pay-1", "-L", "team=payments"]);
    hub.ok(&["cluster", "register", "web-1", "-L", "team=web"]);
    let gate = tmp.path().join("gate.yaml");
    std::fs::write(
        &gate,
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: pay, labels: {team: payments}}\n\
         spec: {clusters: {selector: {matchLabels: {team: payments}}}, default: open}\n",
    )
    .unwrap();
    hub.ok(&["gate", "apply", "-f", &gate.display().to_string()]);
    let scope = "{clusters: {selector: {matchLabels: {team: payments}}}, \
                 gates: {selector: {matchLabels: {team: payments}}}}";
    let created = hub.json(&[
        "token",
        "create",
        "payments-ci",
        "--role",
        "viewer",
        "--scope",
        scope,
    ]);
    let secret = created["secret"].as_str().unwrap().to_string();
    let o = hub.cli_as(&secret, &["cluster", "list", "-o", "json"]);
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let seen: serde_json::Value = serde_json::from_str(&out(&o)).unwrap();
    let seen: Vec<&str> = seen
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(seen, ["pay-1"]);
    let o = hub.cli_as(
        &secret,
        &["gate", "close", "pay", "--for", "1h", "--reason", "deploy"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", err(&o));
    let bad_scope = hub.cli(&[
        "token", "create", "x", "--role", "viewer", "--scope", "[1, 2]",
    ]);
    assert_eq!(bad_scope.status.code(), Some(6), "{}", err(&bad_scope));
    assert!(err(&bad_scope).contains("--scope"), "{}", err(&bad_scope));

    let team = hub.json(&["audit", "--team", "team-payments"]);
    let actions: Vec<&str> = team
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["override.close"], "{team}");
    assert_eq!(team[0]["actor"], "payments-ci");
    let nobody = hub.json(&["audit", "--person", "nobody@example.com"]);
    assert_eq!(nobody, serde_json::json!([]));
}
