//! The public evaluation API of a compiled gate: the state at an instant with its reason and
//! next transition, every state change in a range, and the preview the CLI prints.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::timeline::sweep;
use crate::{CompiledGate, Evaluation, GateState, Override};

/// A change of state at `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub at: DateTime<Utc>,
    pub state: GateState,
    pub reason: String,
}

/// The state at the start of a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewState {
    pub state: GateState,
    pub reason: String,
}

/// What `fleetgate gate preview -o json` prints: the state at `from`, then every change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    pub gate: String,
    pub initial: PreviewState,
    pub transitions: Vec<Transition>,
}

/// Look-ahead steps for the next transition: most gates change within days, so start small.
const HORIZONS_DAYS: [i64; 5] = [2, 16, 100, 400, 366 * 8];

impl CompiledGate {
    /// The state at `at` given the overrides for this gate and cluster (others are ignored by
    /// gate name), why, and when it next changes (within about eight years).
    pub fn evaluate(&self, at: DateTime<Utc>, overrides: &[Override]) -> Evaluation {
        let mut last = None;
        for days in HORIZONS_DAYS {
            let (initial, changes) = sweep(self, at, at + Duration::days(days), overrides);
            if let Some((t, _)) = changes.first() {
                return Evaluation {
                    state: initial.state,
                    reason: initial.reason,
                    next_transition: Some(*t),
                };
            }
            last = Some(initial);
        }
        let initial = last.unwrap_or_else(|| sweep(self, at, at, overrides).0);
        Evaluation {
            state: initial.state,
            reason: initial.reason,
            next_transition: None,
        }
    }

    /// Every change of state in `(from, to]`, in order; consecutive entries alternate state.
    pub fn transitions(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        overrides: &[Override],
    ) -> Vec<Transition> {
        sweep(self, from, to, overrides)
            .1
            .into_iter()
            .map(|(at, d)| Transition {
                at,
                state: d.state,
                reason: d.reason,
            })
            .collect()
    }

    /// The state at `from` and every change in `(from, to]`.
    pub fn preview(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        overrides: &[Override],
    ) -> Preview {
        let (initial, changes) = sweep(self, from, to, overrides);
        Preview {
            gate: self.name().to_string(),
            initial: PreviewState {
                state: initial.state,
                reason: initial.reason,
            },
            transitions: changes
                .into_iter()
                .map(|(at, d)| Transition {
                    at,
                    state: d.state,
                    reason: d.reason,
                })
                .collect(),
        }
    }
}
