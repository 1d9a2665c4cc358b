//! What Flux says about one object's health, as the spoke reports it to the hub: the Ready
//! condition (status, reason, message), Stalled, `metadata.generation` against
//! `status.observedGeneration`, and the revision last attempted. The hub judges rollout
//! waves from it; the spoke only copies it.

use std::sync::Arc;

use crate::cluster::flux_object::{Condition, FluxObject};

/// Longest Ready message reported (Flux messages can list many objects); cut on a char
/// boundary so reports stay small.
pub const MAX_MESSAGE: usize = 1024;

/// An object's Ready condition.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Ready {
    /// "True", "False" or "Unknown".
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// Flux's view of the object's health. The condition and the revision are
/// shared (`Arc`) with every object and report entry that has the same: a
/// thousand Kustomizations that applied one revision say so once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// `None` while the object has no Ready condition (never reconciled).
    pub ready: Option<Arc<Ready>>,
    /// `Stalled=True`: Flux stopped retrying until something changes.
    pub stalled: bool,
    /// `metadata.generation` (0 when absent).
    pub generation: i64,
    /// `status.observedGeneration` (0 when absent).
    pub observed_generation: i64,
    /// `status.lastAttemptedRevision`.
    pub last_attempted_revision: Option<Arc<str>>,
}

fn condition<'a>(obj: &'a FluxObject, type_: &str) -> Option<&'a Condition> {
    obj.status
        .conditions
        .as_deref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// `s` cut to at most `max` bytes on a char boundary.
fn cut(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl Ready {
    /// The object's Ready condition, its message cut to [`MAX_MESSAGE`].
    pub fn of(obj: &FluxObject) -> Option<Ready> {
        condition(obj, "Ready").map(|c| Ready {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: cut(&c.message, MAX_MESSAGE).to_owned(),
        })
    }
}

/// `Stalled=True`.
pub fn stalled(obj: &FluxObject) -> bool {
    condition(obj, "Stalled").is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::flux_object::from_value;
    use serde_json::json;

    #[test]
    fn reads_ready_stalled() {
        let obj = from_value(json!({"metadata": {"generation": 4}, "status": {
            "observedGeneration": 3, "lastAttemptedRevision": "main@sha1:bad",
            "conditions": [
                {"type": "Reconciling", "status": "True", "reason": "ProgressingWithRetry"},
                {"type": "Ready", "status": "False", "reason": "ReconciliationFailed", "message": "denied"},
                {"type": "Stalled", "status": "True", "reason": "NoRemainingRetries"}]}}))
        .unwrap();
        assert_eq!(
            Ready::of(&obj),
            Some(Ready {
                status: "False".into(),
                reason: "ReconciliationFailed".into(),
                message: "denied".into()
            })
        );
        assert!(stalled(&obj));
        let none = from_value(json!({})).unwrap();
        assert_eq!(Ready::of(&none), None);
        assert!(!stalled(&none));
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_MESSAGE);
        let obj = from_value(
            json!({"status": {"conditions": [{"type": "Ready", "status": "False", "message": long}]}}),
        )
        .unwrap();
        let msg = Ready::of(&obj).unwrap().message;
        assert_eq!(msg.len(), MAX_MESSAGE);
        assert!(msg.chars().all(|c| c == 'é'));
    }
}
