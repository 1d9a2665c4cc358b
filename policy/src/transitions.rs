//! The public evaluation API of a compiled gate: the state at an instant with its reason and
//! next transition, every state change in a range, and the preview the CLI prints.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

use crate::rollout_preview::RolloutEstimate;
use crate::timeline::{Decision, Sweep, sweep};
use crate::{CompiledGate, Evaluation, Override, PreviewState, Transition};

/// What `fleetgate gate preview -o json` prints: the state at `from`, then every change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Preview {
    pub gate: String,
    pub initial: PreviewState,
    pub transitions: Vec<Transition>,
    /// For a gate with `spec.rollout`: each opening's estimated wave release times.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rollouts: Vec<RolloutEstimate>,
}

/// Look-ahead steps for the next transition: most gates change within days, so start small.
const HORIZONS_DAYS: [i64; 4] = [8, 64, 400, 366 * 8];

/// Stop widening the look-ahead when the next step would expand more window occurrences than
/// this (schedules firing every minute): evaluation stays cheap and reports no next transition.
const OCCURRENCE_BUDGET: usize = 100_000;

impl CompiledGate {
    /// The state at `at` given the overrides for this gate and cluster (others are ignored by
    /// gate name), why, and when it next changes. The look-ahead is about eight years, shorter
    /// for windows that fire every few minutes; `next_transition: None` means no change within it.
    pub fn evaluate(&self, at: DateTime<Utc>, overrides: &[Override]) -> Evaluation {
        let mut previous: Option<(Sweep, i64)> = None;
        for days in HORIZONS_DAYS {
            if let Some((swept, previous_days)) = &previous {
                let growth = usize::try_from(days / previous_days.max(&1)).unwrap_or(usize::MAX);
                if swept.occurrences.saturating_mul(growth) > OCCURRENCE_BUDGET {
                    break;
                }
            }
            let swept = sweep(self, at, at + Duration::days(days), overrides);
            if let Some((t, _)) = swept.changes.first() {
                let next_transition = Some(*t);
                return Evaluation {
                    state: swept.initial.state,
                    reason: swept.initial.reason,
                    next_transition,
                };
            }
            previous = Some((swept, days));
        }
        let initial = match previous {
            Some((swept, _)) => swept.initial,
            None => sweep(self, at, at, overrides).initial,
        };
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
        to_transitions(sweep(self, from, to, overrides).changes)
    }

    /// The state at `from` and every change in `(from, to]`.
    pub fn preview(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        overrides: &[Override],
    ) -> Preview {
        let swept = sweep(self, from, to, overrides);
        let initial = PreviewState {
            state: swept.initial.state,
            reason: swept.initial.reason,
        };
        let transitions = to_transitions(swept.changes);
        let rollouts = (self.gate.spec.rollout.as_ref())
            .map(|r| crate::rollout_preview::estimates(r, &initial, &transitions))
            .unwrap_or_default();
        Preview {
            gate: self.name().to_string(),
            initial,
            transitions,
            rollouts,
        }
    }
}

fn to_transitions(changes: Vec<(DateTime<Utc>, Decision)>) -> Vec<Transition> {
    changes
        .into_iter()
        .map(|(at, d)| Transition {
            at,
            state: d.state,
            reason: d.reason,
        })
        .collect()
}

impl crate::Gate {
    /// The state at `from` and every change until `to`, calendars expanded over the whole
    /// range (plus the default horizon around `now`) with `feeds`' occurrences: the one preview
    /// the hub answers and the CLI computes offline from a file.
    pub fn preview_over(
        &self,
        now: DateTime<Utc>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        feeds: Vec<crate::FeedOccurrences>,
        overrides: &[crate::Override],
    ) -> Result<Preview, crate::PolicyError> {
        let calendars = crate::Calendars::at(now)
            .covering(from, to)
            .with_feeds(feeds);
        Ok(self.compile_with(&calendars)?.preview(from, to, overrides))
    }
}
