//! `fleetgate webhook enable|disable` against a real hub process: only the
//! enabled flag changes (the filters stay), each change is audited, and an
//! unknown subscription is an error naming it.

mod common;

use common::{err, start_hub_with};
use serde_json::json;

#[test]
fn webhook_enable_and_disable_change_only_the_flag() {
    let hub = start_hub_with(&[
        ("FLEETGATE_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("FLEETGATE_WEBHOOK_ALLOW_HTTP", "true"),
    ]);
    hub.ok(&[
        "webhook",
        "create",
        "ops",
        "--url",
        "http://127.0.0.1:9/hook",
        "--event",
        "gate.*",
    ]);
    assert_eq!(
        hub.ok(&["webhook", "disable", "ops"]),
        "webhook/ops disabled\n"
    );
    let got = hub.json(&["webhook", "get", "ops"]);
    assert_eq!(got["spec"]["enabled"], false, "{got}");
    assert_eq!(got["spec"]["events"], json!(["gate.*"]), "{got}");
    let table = hub.ok(&["webhook", "list"]);
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("ops") && l.contains(" no ")),
        "{table}"
    );
    assert_eq!(
        hub.ok(&["webhook", "enable", "ops"]),
        "webhook/ops enabled\n"
    );
    let got = hub.json(&["webhook", "get", "ops"]);
    assert_eq!(got["spec"]["enabled"], true, "{got}");
    assert_eq!(got["spec"]["url"], "http://127.0.0.1:9/hook", "{got}");
    let actions: Vec<String> = hub
        .json(&["audit", "--kind", "webhook"])
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        actions,
        ["webhook.enable", "webhook.disable", "webhook.create"]
    );
    let o = hub.cli(&["webhook", "enable", "nope"]);
    assert_ne!(o.status.code(), Some(0));
    assert!(err(&o).contains("nope"), "{}", err(&o));
}
