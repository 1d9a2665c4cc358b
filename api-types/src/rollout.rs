//! Rollout answers (`GET /api/v1/gates/{name}/rollout` and the commands): a gate's rollout
//! with its waves, each cluster's release and health.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// A rollout's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum RolloutState {
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

impl RolloutState {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            RolloutState::Running => "running",
            RolloutState::Paused => "paused",
            RolloutState::Halted => "halted",
            RolloutState::Aborted => "aborted",
            RolloutState::Completed => "completed",
            RolloutState::Ended => "ended",
        }
    }

    /// Parses a stored name (the table's check constraint admits only these).
    pub fn parse(s: &str) -> Self {
        match s {
            "paused" => RolloutState::Paused,
            "halted" => RolloutState::Halted,
            "aborted" => RolloutState::Aborted,
            "completed" => RolloutState::Completed,
            "ended" => RolloutState::Ended,
            _ => RolloutState::Running,
        }
    }
}

/// A released cluster's health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum Health {
    /// Not released (yet).
    Closed,
    /// Released; not every object is Ready at the new revision yet.
    Progressing,
    /// Every governed object is Ready at its source's newest revision.
    Healthy,
    /// An object failed at the new revision, or the cluster was not healthy in time.
    Failed,
    /// Its spoke is disconnected: never healthy.
    Unknown,
}

impl Health {
    /// The wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Health::Closed => "closed",
            Health::Progressing => "progressing",
            Health::Healthy => "healthy",
            Health::Failed => "failed",
            Health::Unknown => "unknown",
        }
    }
}

/// A gate's rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutStatus {
    pub gate: String,
    pub id: String,
    pub state: RolloutState,
    /// When the gate's open period (this rollout's opening) began.
    pub opening_at: DateTime<Utc>,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    /// The current wave, 1-based (one past the last when all are done).
    pub wave: i32,
    /// The current wave waits for an operator's `release-next`.
    pub waiting_for_approval: bool,
    /// When the current wave's soak ends (it is healthy and soaking).
    pub soak_until: Option<DateTime<Utc>>,
    /// When the current wave counts as failed unless healthy (it is released).
    pub health_deadline: Option<DateTime<Utc>>,
    /// Why it halted or ended.
    pub detail: Option<String>,
    pub waves: Vec<WaveStatus>,
}

/// One wave.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WaveStatus {
    /// 1-based.
    pub index: i32,
    pub name: String,
    pub approval: bool,
    /// `done`, `released`, `soaking`, `waiting-approval`, `next`, `pending`, `failed`.
    pub state: String,
    /// For a wave not released yet of a running rollout: the earliest it can be released if
    /// every earlier wave is healthy at once (soaks add up; approvals and health do not).
    pub estimated_release_at: Option<DateTime<Utc>>,
    pub clusters: Vec<RolloutClusterStatus>,
}

/// One cluster of a rollout.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutClusterStatus {
    pub name: String,
    pub released_at: Option<DateTime<Utc>>,
    pub health: Health,
    /// Why it is not healthy: the failing object and its Ready message.
    pub detail: Option<String>,
    /// Came into scope after the rollout started.
    pub late: bool,
    /// Opened ahead of its wave by a cluster-scoped open override.
    pub bypass: bool,
}
