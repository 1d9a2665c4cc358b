//! The demo's rollout in progress: a gate with `spec.rollout` over the dev and staging
//! clusters (Team A's Kustomizations only, so the nginx app and the other examples keep
//! their story), closed by default and opened by an override once revisions are held, so
//! the hub releases the canary wave first and the others wait for wave 2 — visible in the
//! dashboard (gate page, grid), `fleetgate status` and `fleetgate rollout status`.

use std::time::{Duration, Instant};

use fleetgate::client::{Client, seg};
use fleetgate::error::{Error, Result};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The demo's rollout gate.
pub const GATE: &str = "team-a-rollout";

/// The canary: the first dev cluster (every demo fleet of 3 or more clusters has it).
const CANARY: &str = "dev-eu-1";

fn manifest() -> Value {
    json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": GATE},
        "spec": {
            "description": "Team A's apps on dev and staging, released wave by wave (the demo opens it).",
            "clusters": {"selector": {"matchExpressions": [
                {"key": "env", "operator": "In", "values": ["dev", "staging"]}
            ]}},
            "targets": {"kinds": ["Kustomization"], "selector": {"matchLabels": {"team": "a"}}},
            "default": "closed",
            "rollout": {
                "soak": "30m",
                "healthTimeout": "30m",
                "waves": [
                    {"name": "canary", "clusters": {"names": [CANARY]}},
                    {"name": "rest"}
                ]
            }
        }
    })
}

/// Creates the gate (kept as it is on a reused database).
pub async fn create(client: &Client) -> Result<()> {
    match client.post::<_, Value>("/gates", &[], &manifest()).await {
        Ok(_) | Err(Error::Api { status: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Opens the gate for 8 hours (an audited override): the rollout starts and releases the
/// canary. Waits (bounded) until the canary is healthy and soaks, and returns the rollout's
/// status — earlier if the wait runs out (on a weekend `no-deploy-friday` keeps the canary's
/// Kustomizations suspended, so it is still waiting for health).
pub async fn start(client: &Client, shutdown: &CancellationToken) -> Result<Option<Value>> {
    let _: Value = client
        .post(
            &format!("/gates/{}/open", seg(GATE)),
            &[],
            &json!({"for": "8h", "reason": "demo: release 2026.11 of Team A's apps, wave by wave"}),
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = None;
    while Instant::now() < deadline && !shutdown.is_cancelled() {
        // 404 until the hub's rollout driver (1 s tick) starts it.
        if let Ok(s) = client
            .get::<Value>(&format!("/gates/{}/rollout", seg(GATE)), &[])
            .await
        {
            let soaking = s.pointer("/waves/0/state") == Some(&json!("soaking"));
            let over = s["state"] != "running";
            last = Some(s);
            if soaking || over {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(last)
}

/// One line about the rollout for the demo's output.
pub fn describe(status: Option<&Value>) -> String {
    let Some(s) = status else {
        return format!("gate {GATE}: the rollout has not started yet");
    };
    let waiting: usize = (s["waves"].as_array().into_iter().flatten())
        .skip(1)
        .map(|w| w["clusters"].as_array().map_or(0, Vec::len))
        .sum();
    let wave1 = s.pointer("/waves/0/state").and_then(Value::as_str);
    let now = match (s["state"].as_str(), wave1) {
        (Some("running"), Some("soaking")) => format!(
            "wave 1 ({CANARY}) is healthy and soaks until {}",
            s["soakUntil"].as_str().unwrap_or("?")
        ),
        (Some("running"), _) => format!(
            "wave 1 ({CANARY}) is released, waiting for its health (deadline {})",
            s["healthDeadline"].as_str().unwrap_or("?")
        ),
        (state, _) => format!("the rollout is {}", state.unwrap_or("?")),
    };
    format!("gate {GATE}: {now}; {waiting} cluster(s) wait for wave 2")
}
