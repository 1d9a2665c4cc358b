//! The demo's rollout in progress: a gate with `spec.rollout` over the dev and staging
//! clusters (Team A's Kustomizations only, so the nginx app and the other examples keep
//! their story), closed by default and opened by an override once revisions are held, so
//! the hub releases the canary wave first and the others wait for wave 2 — visible in the
//! dashboard (gate page, grid), `fleetgate status` and `fleetgate rollout status`.

use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use fleetgate::client::{Client, seg};
use fleetgate::error::{Error, Result};
use fleetgate_api_types::rollout::{RolloutState, RolloutStatus};
use fleetgate_api_types::{GateRecord, OverrideRecord};
use serde_json::{Value, json};

use crate::blockers::{self, Blocker};
use tokio_util::sync::CancellationToken;

/// The demo's rollout gate.
pub const GATE: &str = "team-a-rollout";

/// The canary: the first dev cluster (every demo fleet of 3 or more clusters has it).
pub const CANARY: &str = "dev-eu-1";

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
    match client
        .post::<_, GateRecord>("/gates", &[], &manifest())
        .await
    {
        Ok(_) | Err(Error::Api { status: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The rollout as the demo leaves it: its status and the other closed gates holding the
/// canary's Kustomizations whole (then its health waits for them, not for the demo).
#[derive(Debug, Default)]
pub struct Rolling {
    pub status: Option<RolloutStatus>,
    pub blocked: Vec<Blocker>,
}

/// Opens the gate for 8 hours (an audited override): the rollout starts and releases the
/// canary. Once the canary is released, looks at what holds its Kustomizations: if another
/// closed gate does (`no-deploy-friday` at the weekend), their health waits for that gate, so
/// the demo returns at once; otherwise it waits (bounded) until the canary is healthy and
/// soaks.
pub async fn start(client: &Client, shutdown: &CancellationToken) -> Result<Rolling> {
    let _: OverrideRecord = client
        .post(
            &format!("/gates/{}/open", seg(GATE)),
            &[],
            &json!({"for": "8h", "reason": "demo: release 2026.11 of Team A's apps, wave by wave"}),
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut out = Rolling::default();
    let mut looked = false;
    while Instant::now() < deadline && !shutdown.is_cancelled() {
        // 404 until the hub's rollout driver (1 s tick) starts it.
        if let Ok(s) = client
            .get::<RolloutStatus>(&format!("/gates/{}/rollout", seg(GATE)), &[])
            .await
        {
            let released = s
                .waves
                .first()
                .is_some_and(|w| w.clusters.iter().any(|c| c.released_at.is_some()));
            let soaking = s.waves.first().is_some_and(|w| w.state == "soaking");
            let over = s.state != RolloutState::Running;
            out.status = Some(s);
            if released && !looked {
                looked = true;
                out.blocked = blockers::find(client, CANARY, GATE, |o| {
                    o.object.gates.iter().any(|g| g == GATE)
                })
                .await?;
            }
            if soaking || over || !out.blocked.is_empty() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(out)
}

/// One line about the rollout for the demo's output.
pub fn describe(rolling: &Rolling) -> String {
    let Some(s) = &rolling.status else {
        return format!("gate {GATE}: the rollout has not started yet");
    };
    let waiting: usize = s.waves.iter().skip(1).map(|w| w.clusters.len()).sum();
    // As the API writes instants ("?" where there is none).
    let instant = |t: Option<DateTime<Utc>>| {
        t.map_or("?".into(), |t| {
            t.to_rfc3339_opts(SecondsFormat::AutoSi, true)
        })
    };
    let wave1 = s.waves.first().map(|w| w.state.as_str());
    let now = match (s.state, wave1) {
        (RolloutState::Running, Some("soaking")) => format!(
            "wave 1 ({CANARY}) is healthy and soaks until {}",
            instant(s.soak_until)
        ),
        (RolloutState::Running, _) if !rolling.blocked.is_empty() => format!(
            "wave 1 ({CANARY}) is released, but its Kustomizations wait: {} holds them \
             (health deadline {})",
            blockers::describe(&rolling.blocked),
            instant(s.health_deadline)
        ),
        (RolloutState::Running, _) => format!(
            "wave 1 ({CANARY}) is released, waiting for its health (deadline {})",
            instant(s.health_deadline)
        ),
        (state, _) => format!("the rollout is {}", state.as_str()),
    };
    format!("gate {GATE}: {now}; {waiting} cluster(s) wait for wave 2")
}
