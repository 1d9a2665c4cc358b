//! Evaluation results and overrides: the state of one gate for one cluster at an instant, with
//! the reason and the next transition, and the combination of several gates.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::GateState;

/// A manual override of a gate for one cluster (open or closed), active on
/// `[starts_at, expires_at)`; `expires_at: None` lasts until cancelled. The newest
/// (`created_at`) active override wins and beats every window.
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

/// Which rule decided an [`Evaluation`] (first that applies: override, deny, allow, default).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rule {
    Override,
    DenyWindow,
    AllowWindow,
    Default,
}

impl Rule {
    /// CamelCase, as a Kubernetes condition reason.
    pub fn as_str(&self) -> &'static str {
        match self {
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
        if self.reason.starts_with("override ") {
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
    /// before it, so re-evaluate then.
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

/// The newest override active at `t` among those for `gate`.
pub(crate) fn active_override<'a>(
    overrides: impl IntoIterator<Item = &'a Override>,
    gate: &str,
    t: DateTime<Utc>,
) -> Option<&'a Override> {
    overrides
        .into_iter()
        .filter(|o| o.gate == gate && o.is_active(t))
        .max_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)))
}
