//! Evaluation results and overrides: the state of one gate for one cluster at an instant, with
//! the reason and the next transition, and the combination of several gates.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::GateState;

/// How the reason of a gate closed by a fleet freeze begins.
pub(crate) const FREEZE_PREFIX: &str = "fleet freeze";

/// A manual override of a gate for one cluster (open or closed), active on
/// `[starts_at, expires_at)`; `expires_at: None` lasts until cancelled. The newest
/// (`created_at`) active override wins and beats every window — except that a freeze
/// (a closing override of [`crate::FREEZE_GATE`]) beats every other override of any gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Override {
    pub id: String,
    pub gate: String,
    pub state: GateState,
    pub starts_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub actor: String,
    pub reason: String,
}

impl Override {
    /// Whether the override applies at `t`.
    pub fn is_active(&self, t: DateTime<Utc>) -> bool {
        self.starts_at <= t && self.expires_at.is_none_or(|e| t < e)
    }
}

/// The state of a gate at an instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Evaluation {
    pub state: GateState,
    /// Which rule decided, for people: `deny window 'no-deploy-friday' until Mon 2026-11-30 00:00 CET`.
    pub reason: String,
    /// The next instant the state changes, if there is one within the look-ahead (about 8 years).
    pub next_transition: Option<DateTime<Utc>>,
}

/// Which rule decided an [`Evaluation`] (first that applies: freeze, override, deny, allow,
/// default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    /// A fleet freeze (emergency stop).
    Freeze,
    Override,
    DenyWindow,
    AllowWindow,
    Default,
}

impl Rule {
    /// CamelCase, as a Kubernetes condition reason.
    pub fn as_str(&self) -> &'static str {
        match self {
            Rule::Freeze => "Frozen",
            Rule::Override => "Override",
            Rule::DenyWindow => "DenyWindow",
            Rule::AllowWindow => "AllowWindow",
            Rule::Default => "Default",
        }
    }
}

impl Evaluation {
    /// The rule that decided. Read back from the reason, which this crate writes
    /// (`timeline.rs`) with one fixed prefix per rule.
    pub fn rule(&self) -> Rule {
        if self.reason.starts_with(FREEZE_PREFIX) {
            Rule::Freeze
        } else if self.reason.starts_with("override ") {
            Rule::Override
        } else if self.reason.starts_with("deny window ") {
            Rule::DenyWindow
        } else if self.reason.starts_with("allow window ") {
            Rule::AllowWindow
        } else {
            Rule::Default
        }
    }
}

/// The state of several gates governing one object: it may change only while all are open.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Combined {
    pub open: bool,
    /// Names of the closed gates, in the order given.
    pub closed_by: Vec<String>,
    /// The earliest next transition of any of the gates: the combined state cannot change
    /// before it, so re-evaluate then. For when the combined state itself changes (what to
    /// show people) see [`next_combined_change`].
    pub next_transition: Option<DateTime<Utc>>,
}

/// Combines per-gate evaluations (`(gate name, evaluation)`): open only if all are open.
/// No gates at all means open.
pub fn combine<'a>(evals: impl IntoIterator<Item = (&'a str, &'a Evaluation)>) -> Combined {
    let mut closed_by = Vec::new();
    let mut next_transition: Option<DateTime<Utc>> = None;
    for (name, eval) in evals {
        if eval.state == GateState::Closed {
            closed_by.push(name.to_string());
        }
        if let Some(t) = eval.next_transition {
            next_transition = Some(next_transition.map_or(t, |n| n.min(t)));
        }
    }
    Combined {
        open: closed_by.is_empty(),
        closed_by,
        next_transition,
    }
}

/// How many instants [`next_combined_change`] looks at before giving up: gates that take turns
/// being closed (one on even minutes, one on odd) never open together, and each look costs an
/// evaluation per gate.
const COMBINED_STEPS: usize = 1_000;

/// When the combined state of several gates on one cluster (open only while all are open) next
/// changes: what a cluster's "next change" means, as opposed to the earliest transition of any
/// gate (a gate closed indefinitely keeps the cluster closed through every other gate's
/// windows). `now` holds each gate's evaluation at `at`; `evaluate(i, t)` evaluates gate `i`
/// (with its overrides) at a later instant `t` — callers may cache it across clusters.
///
/// While all are open, the first close of any gate. While some are closed: no instant before
/// the latest next transition of the closed gates can have all open, so jump there and look
/// again, until all are open at once. `None`: no change within the evaluations' look-ahead
/// (about 8 years) or within 1,000 jumps.
pub fn next_combined_change(
    at: DateTime<Utc>,
    now: &[Evaluation],
    mut evaluate: impl FnMut(usize, DateTime<Utc>) -> Evaluation,
) -> Option<DateTime<Utc>> {
    if now.iter().all(|e| e.state == GateState::Open) {
        return now.iter().filter_map(|e| e.next_transition).min();
    }
    let horizon = at + chrono::Duration::days(366 * 8);
    let mut evals: Vec<Evaluation> = now.to_vec();
    for _ in 0..COMBINED_STEPS {
        // Every closed gate must have opened: the latest of their next transitions.
        let mut t = at;
        for e in evals.iter().filter(|e| e.state == GateState::Closed) {
            t = t.max(e.next_transition?);
        }
        if t > horizon {
            return None;
        }
        evals = (0..now.len()).map(|i| evaluate(i, t)).collect();
        if evals.iter().all(|e| e.state == GateState::Open) {
            return Some(t);
        }
    }
    None
}

/// The override deciding `gate` at `t`: the newest active freeze, else the newest active
/// override of the gate.
pub(crate) fn active_override<'a>(
    overrides: impl IntoIterator<Item = &'a Override>,
    gate: &str,
    t: DateTime<Utc>,
) -> Option<&'a Override> {
    overrides
        .into_iter()
        .filter(|o| o.applies_to_gate(gate) && o.is_active(t))
        .max_by(|a, b| {
            (a.is_freeze(), a.created_at, &a.id).cmp(&(b.is_freeze(), b.created_at, &b.id))
        })
}
