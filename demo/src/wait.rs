//! The demo's bounded waits: for the hub to answer, for every spoke to enforce before
//! revisions are pushed (so they are held rather than applied), for held changes to show.

use std::time::{Duration, Instant};

use fleetgate::client::{Client, seg};
use fleetgate::error::Result;
use fleetgate_api_types::{FleetSummary, GateRecord};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::{fleet, other};

pub(crate) async fn wait_ready(
    client: &Client,
    hub_url: &str,
    hub_task: &mut tokio::task::JoinHandle<fleetgate_hub::Result<()>>,
) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.get::<FleetSummary>("/status", &[]).await.is_ok() {
            return Ok(());
        }
        if hub_task.is_finished() {
            let why = match hub_task.await.map_err(|e| other("hub", e))? {
                Err(e) => e.to_string(),
                Ok(()) => "it stopped".to_string(),
            };
            return Err(other(
                "the hub did not start",
                format!("{why} (pick other ports with --http-addr / --grpc-addr)"),
            ));
        }
        if Instant::now() > deadline {
            return Err(other("hub", format!("not ready at {hub_url} within 60 s")));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits (bounded) until every spoke is connected and has reported that it
/// enforces: every object a closed `suspend`-mode gate governs is suspended.
/// Only then are revisions pushed, so they are held rather than applied.
pub(crate) async fn wait_reported(
    client: &Client,
    clusters: &[fleet::DemoCluster],
    shutdown: &CancellationToken,
) -> Result<()> {
    let suspend_mode: Vec<String> = client
        .list::<GateRecord>("/gates", &[], None)
        .await?
        .into_iter()
        .filter(|g| {
            g.manifest.pointer("/spec/mode").and_then(Value::as_str) != Some("freezeSources")
        })
        .map(|g| g.name)
        .collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut pending: Vec<&str> = clusters.iter().map(|c| c.name.as_str()).collect();
    while !pending.is_empty() {
        let mut still = Vec::new();
        for name in pending {
            let st: Value = client
                .get(&format!("/clusters/{}/status", seg(name)), &[])
                .await?;
            if !enforced(&st, &suspend_mode) {
                still.push(name);
            }
        }
        pending = still;
        if pending.is_empty() {
            break;
        }
        if shutdown.is_cancelled() {
            return Err(other("interrupted", "while waiting for the spokes"));
        }
        if Instant::now() > deadline {
            return Err(other(
                "spokes",
                format!("not enforcing within 120 s: {pending:?}"),
            ));
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    Ok(())
}

/// A cluster status shows a connected spoke that reported objects, and
/// every object governed by a closed gate of `suspend_mode` is suspended.
fn enforced(st: &Value, suspend_mode: &[String]) -> bool {
    let connected = st.pointer("/cluster/connected") == Some(&Value::Bool(true));
    let objects = st
        .get("objects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let closed: Vec<&str> = st
        .get("gates")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|g| g.get("state").and_then(Value::as_str) == Some("closed"))
        .filter_map(|g| g.get("gate").and_then(Value::as_str))
        .filter(|g| suspend_mode.iter().any(|m| m == g))
        .collect();
    connected
        && !objects.is_empty()
        && objects.iter().all(|o| {
            let held_by_closed = o
                .get("gates")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .any(|g| closed.contains(&g));
            !held_by_closed || o.get("suspended") == Some(&Value::Bool(true))
        })
}

/// Waits (bounded) until the hub shows held changes; returns the summary.
pub(crate) async fn wait_held(
    client: &Client,
    shutdown: &CancellationToken,
) -> Result<FleetSummary> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let s: FleetSummary = client.get("/status", &[]).await?;
        if s.objects.held > 0 || Instant::now() > deadline || shutdown.is_cancelled() {
            return Ok(s);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn status(connected: bool, suspended: bool) -> Value {
        json!({
            "cluster": {"connected": connected},
            "gates": [
                {"gate": "sre-approval", "state": "closed"},
                {"gate": "release-train", "state": "closed"},
                {"gate": "weekdays", "state": "open"}
            ],
            "objects": [
                {"name": "payments-api", "gates": ["sre-approval"], "suspended": suspended},
                {"name": "shop", "gates": ["release-train"], "suspended": false},
                {"name": "web", "gates": ["weekdays"], "suspended": false}
            ]
        })
    }

    #[test]
    fn enforced_means_connected_and_closed_suspend_gates_applied() {
        let modes = vec!["sre-approval".to_string(), "weekdays".to_string()];
        assert!(enforced(&status(true, true), &modes));
        assert!(
            !enforced(&status(true, false), &modes),
            "payments-api not yet suspended"
        );
        assert!(
            !enforced(&status(false, true), &modes),
            "spoke not connected"
        );
        let no_objects = json!({"cluster": {"connected": true}, "gates": [], "objects": []});
        assert!(!enforced(&no_objects, &modes), "nothing reported yet");
    }
}
