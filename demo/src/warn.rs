//! Warn mode: `examples/warn-hold-objects.yaml` (gate `nginx-window-dev`, `enforcement:
//! warn`, closed at every hour) over the nginx app on the first dev cluster. The spoke marks
//! nothing; the hub reports the Deployment and the Service the gate would hold. The demo waits
//! (bounded, soft) until the hub shows that, and says what it saw.

use fleetgate_api_types::ClusterStatus;
use tokio_util::sync::CancellationToken;

use crate::nginx;
use fleetgate::client::{Client, seg};
use fleetgate::error::Result;

/// The gate of `examples/warn-hold-objects.yaml`.
pub const GATE: &str = "nginx-window-dev";

/// What the hub reports for the warn gate on `cluster`.
#[derive(Debug, Default)]
pub struct Outcome {
    pub cluster: String,
    /// `kind namespace/name` of each object the gate would hold, as the hub reports them.
    pub would_hold: Vec<String>,
    /// Of those, objects the gate actually holds (must be none: warn holds nothing).
    pub held: usize,
}

impl Outcome {
    /// The demo's line about the warn gate.
    pub fn describe(&self) -> String {
        if self.would_hold.is_empty() {
            return format!(
                "gate {GATE} (enforcement: warn) reports nothing it would hold on {} yet",
                self.cluster
            );
        }
        format!(
            "gate {GATE} (enforcement: warn) would hold {} on {}, and holds {}",
            self.would_hold.join(", "),
            self.cluster,
            if self.held == 0 {
                "nothing".to_string()
            } else {
                self.held.to_string()
            }
        )
    }
}

/// Waits (bounded, soft) until the hub reports the nginx Deployment on `cluster` as one the
/// warn gate would hold; returns what the hub reports then.
pub async fn wait(client: &Client, cluster: &str, shutdown: &CancellationToken) -> Result<Outcome> {
    nginx::wait(client, cluster, shutdown, |d| {
        d.would_hold_by.iter().any(|g| g == GATE)
    })
    .await?;
    let st: ClusterStatus = client
        .get(&format!("/clusters/{}/status", seg(cluster)), &[])
        .await?;
    let mine: Vec<_> = st
        .held_objects
        .iter()
        .filter(|h| h.object.would_hold_by.iter().any(|g| g == GATE))
        .collect();
    let mut would_hold: Vec<String> = mine
        .iter()
        .map(|h| format!("{} {}/{}", h.object.kind, h.object.namespace, h.object.name))
        .collect();
    would_hold.sort();
    Ok(Outcome {
        cluster: cluster.to_string(),
        would_hold,
        held: mine
            .iter()
            .filter(|h| h.object.held_by.iter().any(|g| g == GATE))
            .count(),
    })
}
