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
