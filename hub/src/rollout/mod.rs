//! Rollout waves (issue 15), the pure parts: a released cluster's health ([`health`]) and
//! the state machine's step ([`machine`]). The service layer (`service::rollouts`) reads
//! their inputs from PostgreSQL, persists their results and runs the driver task.

pub mod health;
pub mod machine;

use serde::Serialize;
use utoipa::ToSchema;

use crate::db::rollouts::RolloutRow;

/// A rollout's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = RolloutState)]
pub enum State {
    /// Releasing waves as they become healthy and soaked.
    Running,
    /// An operator paused it: no wave is released or advanced.
    Paused,
    /// A wave failed: the remaining waves stay closed until an operator resumes.
    Halted,
    /// An operator aborted it: the remaining waves stay closed until the gate opens anew.
    Aborted,
    /// Every wave was released and found healthy; clusters joining later reopen it.
    Completed,
    /// The gate closed (or opened anew): the rollout is over.
    Ended,
}

impl State {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            State::Running => "running",
            State::Paused => "paused",
            State::Halted => "halted",
            State::Aborted => "aborted",
            State::Completed => "completed",
            State::Ended => "ended",
        }
    }

    /// Parses a stored name (the table's check constraint admits only these).
    pub fn parse(s: &str) -> Self {
        match s {
            "paused" => State::Paused,
            "halted" => State::Halted,
            "aborted" => State::Aborted,
            "completed" => State::Completed,
            "ended" => State::Ended,
            _ => State::Running,
        }
    }
}

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
    pub(crate) fn new(c: &machine::Current, action: &'static str, detail: Option<String>) -> Self {
        Self::of(&c.row, action, detail)
    }

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
