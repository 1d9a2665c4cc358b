//! A rollout in the dashboard, in headless Chromium against a real hub process and a
//! stand-in spoke over gRPC: the canary's Kustomization fails (Ready=False), the rollout
//! halts and the gate page shows it with the object's Ready message while the fleet grid
//! marks the canary's cell failed with the failing object and why, and shows the next wave's
//! cluster "waiting for wave 2" (and each cluster page the
//! cluster's place in the rollout: waiting, or released and failed with the message); a
//! viewer gets no rollout buttons;
//! after a good revision an operator clicks Resume and the page follows the rollout live.

#[macro_use]
mod dashboard_support;

use std::time::{Duration, Instant};

use dashboard_support::spoke::{FakeSpoke, object};
use dashboard_support::{ADMIN_TOKEN, Hub, WAIT};
use fleetgate_proto::v1 as pb;
use serde_json::{Value, json};

const MESSAGE: &str = "kustomize build failed: accumulating resources: 'bad.yaml' not found";

/// The canary's Kustomization at the newest revision: failing, or Ready.
fn apps(failing: bool) -> pb::ObjectStatus {
    let mut o = object("Kustomization", "flux-system", "apps", &["waves"], false);
    o.newest_source_revision = "main@sha1:9be03d7".into();
    o.last_attempted_revision = "main@sha1:9be03d7".into();
    if failing {
        o.ready = "False".into();
        o.ready_reason = "BuildFailed".into();
        o.ready_message = MESSAGE.into();
    } else {
        o.last_applied_revision = "main@sha1:9be03d7".into();
        o.ready_message = "Applied revision: main@sha1:9be03d7".into();
    }
    o
}

/// Polls the rollout over REST until `done` holds (a spoke report emits no event to await).
async fn rollout_until(hub: &Hub, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let res = hub
            .http
            .get(format!("{}/api/v1/gates/waves/rollout", hub.base))
            .bearer_auth(ADMIN_TOKEN)
            .send()
            .await
            .expect("GET rollout");
        // 404 until the driver's next tick starts the rollout.
        let r: Value = res.json().await.unwrap_or(Value::Null);
        if done(&r) {
            return r;
        }
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}: {r}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

browser_test!(a_halted_rollout_shows_why_and_resumes, |b| {
    let hub = Hub::start("rollout").await;
    let canary = hub.cluster("prod-canary", json!({"env": "prod"})).await;
    hub.cluster("prod-rest", json!({"env": "prod"})).await;
    hub.gate(json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": "waves"},
        "spec": {
            "clusters": {"selector": {"matchLabels": {"env": "prod"}}},
            "default": "closed",
            "rollout": {
                "soak": "30m",
                // Short, so the failing canary halts the rollout within the test.
                "healthTimeout": "2s",
                "waves": [
                    {"name": "canary", "clusters": {"names": ["prod-canary"]}},
                    {"name": "rest"}
                ]
            }
        }
    }))
    .await;
    let spoke = FakeSpoke::connect(hub.grpc_port, "prod-canary", &canary).await;
    spoke
        .report_at(i64::MAX as u64, vec![apps(true)], vec![])
        .await;
    // A gate-wide open override is an opening: the rollout starts, releases the canary,
    // and halts when the canary is not healthy within 2 s.
    hub.call(
        ADMIN_TOKEN,
        "POST",
        "/api/v1/gates/waves/open",
        Some(json!({"for": "1h", "reason": "release 2026.11"})),
    )
    .await;
    let halted = rollout_until(&hub, "the halt", |r| r["state"] == "halted").await;
    assert!(
        halted["detail"].as_str().unwrap_or("").contains(MESSAGE),
        "{halted}"
    );

    // A viewer sees the rollout and why it halted, with no buttons.
    let viewer = hub.token("vera", "viewer").await;
    b.sign_in(&hub.base, &viewer).await;
    b.wait_eq(&Browser::cell("waves", "prod-rest"), "waiting")
        .await;
    assert_eq!(
        b.eval("document.querySelector('td[data-gate=\"waves\"][data-cluster=\"prod-rest\"]').textContent")
            .await,
        json!("◔wave 2")
    );
    // The failed canary stands out (a halt keeps it open, but what it runs failed): its
    // cell says so, with the failing object and its Ready message.
    assert_eq!(
        b.eval(&Browser::cell("waves", "prod-canary")).await,
        json!("failed")
    );
    let cell = "document.querySelector('td[data-gate=\"waves\"][data-cluster=\"prod-canary\"]')";
    let text = b.eval(&format!("{cell}.textContent")).await;
    let text = text.as_str().unwrap_or_default();
    assert!(text.starts_with("✗wave 1 failed"), "{text}");
    assert!(text.contains("Kustomization flux-system/apps"), "{text}");
    assert!(text.contains(MESSAGE), "{text}");
    let title = b.eval(&format!("{cell}.title")).await;
    let title = title.as_str().unwrap_or_default();
    assert!(
        title.starts_with("rollout wave 1 'canary' failed (halted): ")
            && title.contains("Kustomization flux-system/apps: Ready=False: ")
            && title.contains(MESSAGE),
        "{title}"
    );
    b.screenshot("rollout-fleet").await;
    // Each cluster page says where the cluster is in the rollout, like the grid.
    let place = "document.querySelector('tr[data-gate=\"waves\"] .rollout-place')";
    b.route("#/clusters/prod-rest").await;
    b.wait_page("cluster").await;
    b.wait_js(
        &format!("{place}?.textContent.includes(\"waiting for wave 2 'rest' (rollout halted)\")"),
        "prod-rest waits for wave 2",
    )
    .await;
    b.route("#/clusters/prod-canary").await;
    b.wait_page("cluster").await;
    b.wait_eq(&format!("{place}?.dataset.rolloutHealth"), "failed")
        .await;
    let canary_place = b.eval(&format!("{place}.textContent")).await;
    let canary_place = canary_place.as_str().unwrap_or_default();
    assert!(
        canary_place.contains("released in wave 1 'canary': failed (rollout halted)"),
        "{canary_place}"
    );
    assert!(canary_place.contains(MESSAGE), "{canary_place}");
    b.route("#/gates/waves").await;
    b.wait_page("gate").await;
    b.wait_js(
        "document.querySelector('#rollout')?.dataset.state === 'halted'",
        "the halted rollout",
    )
    .await;
    assert_eq!(
        b.eval("document.querySelectorAll('#rollout button').length")
            .await,
        json!(0)
    );
    b.click("#signout").await;

    // An operator sees the failing object with its Ready message.
    let alice = hub.token("alice", "operator").await;
    b.sign_in(&hub.base, &alice).await;
    b.wait_live().await;
    b.route("#/gates/waves").await;
    b.wait_page("gate").await;
    let canary_row = "document.querySelector('[data-rollout-cluster=\"prod-canary\"]')";
    b.wait_eq(&format!("{canary_row}?.dataset.health"), "failed")
        .await;
    let why = b
        .eval(&format!(
            "{canary_row}.querySelector('.ready-message').textContent"
        ))
        .await;
    let why = why.as_str().unwrap_or_default();
    assert!(why.contains("Kustomization flux-system/apps"), "{why}");
    assert!(why.contains(MESSAGE), "{why}");
    assert!(
        b.eval("document.getElementById('rollout-detail').textContent")
            .await
            .as_str()
            .unwrap_or_default()
            .contains(MESSAGE)
    );
    assert_eq!(
        b.eval("document.querySelector('[data-rollout-cluster=\"prod-rest\"]').dataset.health")
            .await,
        json!("closed")
    );
    // Only what a halted rollout admits is enabled.
    for (id, enabled) in [
        ("rollout-resume", true),
        ("rollout-abort", true),
        ("rollout-pause", false),
        ("rollout-release-next", false),
    ] {
        assert_eq!(
            b.eval(&format!("!document.getElementById('{id}').disabled"))
                .await,
            json!(enabled),
            "{id}"
        );
    }
    b.screenshot("rollout-halted").await;

    // A good revision reaches the canary; the operator resumes.
    spoke
        .report_at(i64::MAX as u64, vec![apps(false)], vec![])
        .await;
    rollout_until(&hub, "the canary's good report", |r| {
        r["waves"][0]["clusters"][0]["health"] == "healthy"
    })
    .await;
    b.click("#rollout-resume").await;
    b.wait_js(
        "document.getElementById('dialog').open",
        "confirmation dialog",
    )
    .await;
    assert_eq!(
        b.eval("document.getElementById('dlg-reason')").await,
        Value::Null,
        "rollout commands take no reason"
    );
    b.click("#dlg-confirm").await;
    b.wait_js("!document.getElementById('dialog').open", "dialog closed")
        .await;
    b.wait_js(
        "document.querySelector('#rollout')?.dataset.state === 'running'",
        "the resumed rollout",
    )
    .await;
    b.wait_eq(&format!("{canary_row}?.dataset.health"), "healthy")
        .await;
    b.wait_js(
        "document.getElementById('rollout-countdown')?.textContent.includes('soaking')",
        "the soak countdown",
    )
    .await;
    assert_eq!(
        b.eval("document.getElementById('rollout-detail')").await,
        Value::Null
    );
    assert_eq!(
        b.eval("!document.getElementById('rollout-release-next').disabled")
            .await,
        json!(true)
    );
    b.screenshot("rollout-resumed").await;
    // Resumed, the wave is judged afresh: the canary's cell is open again.
    b.route("#/fleet").await;
    b.wait_eq(&Browser::cell("waves", "prod-canary"), "open")
        .await;
    let audit = hub
        .call(
            ADMIN_TOKEN,
            "GET",
            "/api/v1/audit?action=rollout.resume",
            None,
        )
        .await;
    assert_eq!(audit["items"][0]["actor"], "alice", "{audit}");
    drop(spoke);
});
