//! The gate preview as documented (the policy crate's `Preview` has no
//! utoipa derive).

use chrono::{DateTime, Utc};
use utoipa::ToSchema;

/// The preview JSON (`fleetgate gate preview -o json`).
#[derive(Debug, ToSchema)]
pub struct PreviewDoc {
    pub gate: String,
    /// The state at `from`.
    pub initial: PreviewStateDoc,
    /// Every state change in `(from, to]`, in order.
    pub transitions: Vec<TransitionDoc>,
    /// For a gate with `spec.rollout`: each opening's estimated wave release times (absent
    /// for other gates).
    pub rollouts: Option<Vec<RolloutEstimateDoc>>,
}

/// A rollout's estimated waves for one opening: the first wave at the opening, each next
/// one a soak later, as if every wave were healthy and every approval given at once. An
/// estimate: health checks and approvals only delay waves.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct RolloutEstimateDoc {
    pub opening_at: DateTime<Utc>,
    /// When the gate closes again within the preview (ending the rollout).
    pub closes_at: Option<DateTime<Utc>>,
    pub waves: Vec<WaveEstimateDoc>,
}

/// One wave's estimated release.
#[derive(Debug, ToSchema)]
#[schema(rename_all = "camelCase")]
pub struct WaveEstimateDoc {
    /// 1-based.
    pub wave: u32,
    pub name: String,
    pub estimated_release_at: DateTime<Utc>,
    /// An operator releases it (at the earliest then).
    pub approval: bool,
    /// Estimated at or after the gate closes again: this opening will not release it.
    pub after_close: bool,
}

/// A state and why.
#[derive(Debug, ToSchema)]
pub struct PreviewStateDoc {
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
}

/// One state change.
#[derive(Debug, ToSchema)]
pub struct TransitionDoc {
    pub at: DateTime<Utc>,
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
}
