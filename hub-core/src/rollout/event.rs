//! What a rollout did ([`Event`]): the record the state machine returns and the service
//! turns into audit rows, feed events and metrics. A leaf of `rollout/`.

use crate::db::rollouts::RolloutRow;

/// Something a rollout did: one audit row, one fleet-feed event, one metric increment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// `rollout.start`, `rollout.release`, `rollout.healthy`, `rollout.halt`,
    /// `rollout.complete`, `rollout.end`, `rollout.join`, `rollout.bypass`, or an operator's
    /// `rollout.pause|resume|abort|release-next`.
    pub action: &'static str,
    pub gate: String,
    pub rollout_id: String,
    /// The wave (0-based) it concerns.
    pub wave: i32,
    /// The clusters it concerns (released, failed, joined, bypassed).
    pub clusters: Vec<String>,
    pub detail: Option<String>,
}

impl Event {
    pub(crate) fn of(row: &RolloutRow, action: &'static str, detail: Option<String>) -> Self {
        Self {
            action,
            gate: row.gate.clone(),
            rollout_id: row.id.to_string(),
            wave: row.wave,
            clusters: Vec::new(),
            detail,
        }
    }

    /// The audit row's `after` value.
    pub fn audit_json(&self) -> serde_json::Value {
        serde_json::json!({
            "rolloutId": self.rollout_id,
            "wave": self.wave + 1,
            "clusters": self.clusters,
            "detail": self.detail,
        })
    }
}
