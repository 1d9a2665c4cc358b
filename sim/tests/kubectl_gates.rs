//! fleetgate's Gate CRD (deploy/spoke/gates.fleetgate.io.yaml) served by the simulator,
//! driven by the real kubectl: apply the example manifest unchanged, the status
//! subresource, the OPEN/REASON/NEXT/HELD printer columns with `get -A`, `describe`,
//! and `kubectl wait --for=condition=Opened` returning when the condition turns True.

mod common;

use std::time::Duration;

use common::{Kubectl, start_default};
use serde_json::{Value, json};

const GATE: &str = "fleetgate.io/v1";

fn opened(status: &str, reason: &str, message: &str) -> Value {
    json!({"status": {
        "observedGeneration": 1,
        "nextTransition": "2026-11-27T10:00:00Z",
        "governed": 4,
        "held": 2,
        "conditions": [
            {"type": "Opened", "status": status, "reason": reason, "message": message,
             "lastTransitionTime": "2026-11-24T10:00:00Z", "observedGeneration": 1},
            {"type": "Ready", "status": "True", "reason": "Evaluated", "message": message,
             "lastTransitionTime": "2026-11-24T10:00:00Z", "observedGeneration": 1},
        ]
    }})
}

#[tokio::test]
async fn gates_apply_get_describe_and_wait() {
    let sim = start_default().await;
    let k = Kubectl::new(&sim);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sre-approval.yaml");
    k.ok(&["apply", "--server-side", "-f", example]).await;

    // The status subresource: only a status write sets status, and it leaves spec alone.
    let status = opened("False", "Default", "default (closed)").to_string();
    k.ok(&[
        "patch",
        "gate",
        "sre-approval",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ])
    .await;
    let obj = common::get(&sim, GATE, "Gate", "", "sre-approval").expect("gate stored");
    assert_eq!(obj["spec"]["default"], "closed");
    assert_eq!(obj["status"]["held"], 2);
    assert_eq!(obj["metadata"]["generation"], 1);

    let table = k.ok(&["get", "gates", "-A"]).await;
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        ["NAME", "OPEN", "REASON", "NEXT", "HELD", "AGE"],
        "{table}"
    );
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        &row[..5],
        [
            "sre-approval",
            "False",
            "Default",
            "2026-11-27T10:00:00Z",
            "2"
        ],
        "{table}"
    );
    let wide = k.ok(&["get", "gate", "sre-approval", "-o", "wide"]).await;
    assert!(
        wide.contains("READY") && wide.contains("default (closed)"),
        "{wide}"
    );

    let described = k.ok(&["describe", "gate", "sre-approval"]).await;
    for needle in [
        "Kind:         Gate",
        "Default:      closed",
        "Type:                  Opened",
        "Held:                    2",
    ] {
        assert!(described.contains(needle), "{needle:?} not in {described}");
    }

    // A pipeline waiting for its window: kubectl wait returns once Opened is True.
    let mut wait = k
        .command(&[
            "wait",
            "--for=condition=Opened",
            "gate/sre-approval",
            "--timeout=30s",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl wait runs");
    // Still closed: the wait must not have returned. Let it reach its watch first
    // (bounded: it either returns early, which fails the test, or keeps waiting).
    let early = tokio::time::timeout(Duration::from_millis(1500), wait.wait()).await;
    assert!(
        early.is_err(),
        "kubectl wait returned while closed: {early:?}"
    );
    let status = opened("True", "OpenRequested", "override open by kubectl-annotate").to_string();
    k.ok(&[
        "patch",
        "gate",
        "sre-approval",
        "--subresource=status",
        "--type=merge",
        "-p",
        &status,
    ])
    .await;
    let out = tokio::time::timeout(Duration::from_secs(30), wait.wait_with_output())
        .await
        .expect("kubectl wait returns")
        .expect("kubectl wait output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("gate.fleetgate.io/sre-approval condition met"),
        "{stdout}"
    );

    // Bad input names the field and changes nothing.
    let out = k
        .run(&[
            "patch",
            "gate",
            "sre-approval",
            "--type=merge",
            "-p",
            r#"{"spec":{"default":"ajar"}}"#,
        ])
        .await;
    out.assert_fails_with("spec.default");
    let obj = common::get(&sim, GATE, "Gate", "", "sre-approval").unwrap();
    assert_eq!(obj["spec"]["default"], "closed");
    sim.shutdown().await;
}
