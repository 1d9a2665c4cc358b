//! What Flux says about one object's health, as the spoke reports it to the hub: the Ready
//! condition (status, reason, message), Stalled, `metadata.generation` against
//! `status.observedGeneration`, and the revision last attempted. The hub judges rollout
//! waves from it; the spoke only copies it.

use serde_json::Value;

/// Longest Ready message reported (Flux messages can list many objects); cut on a char
/// boundary so reports stay small.
pub const MAX_MESSAGE: usize = 1024;

/// An object's Ready condition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ready {
    /// "True", "False" or "Unknown".
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// Flux's view of the object's health.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Readiness {
    /// `None` while the object has no Ready condition (never reconciled).
    pub ready: Option<Ready>,
    /// `Stalled=True`: Flux stopped retrying until something changes.
    pub stalled: bool,
    /// `metadata.generation` (0 when absent).
    pub generation: i64,
    /// `status.observedGeneration` (0 when absent).
    pub observed_generation: i64,
    /// `status.lastAttemptedRevision`.
    pub last_attempted_revision: Option<String>,
}

fn condition<'a>(data: &'a Value, type_: &str) -> Option<&'a Value> {
    data.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(type_))
}

fn text(v: &Value, field: &str) -> String {
    v.get(field)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// `s` cut to at most `max` bytes on a char boundary.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
    }
    s
}

impl Readiness {
    /// Reads it from an object's JSON (`metadata` and `status`).
    pub fn from_object(data: &Value, generation: Option<i64>) -> Self {
        let ready = condition(data, "Ready").map(|c| Ready {
            status: text(c, "status"),
            reason: text(c, "reason"),
            message: cut(text(c, "message"), MAX_MESSAGE),
        });
        let stalled = condition(data, "Stalled")
            .is_some_and(|c| c.get("status").and_then(Value::as_str) == Some("True"));
        Readiness {
            ready,
            stalled,
            generation: generation.unwrap_or(0),
            observed_generation: data
                .pointer("/status/observedGeneration")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            last_attempted_revision: data
                .pointer("/status/lastAttemptedRevision")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_ready_stalled_and_generations() {
        let data = json!({"status": {
            "observedGeneration": 3, "lastAttemptedRevision": "main@sha1:bad",
            "conditions": [
                {"type": "Reconciling", "status": "True", "reason": "ProgressingWithRetry"},
                {"type": "Ready", "status": "False", "reason": "ReconciliationFailed", "message": "denied"},
                {"type": "Stalled", "status": "True", "reason": "NoRemainingRetries"}]}});
        let r = Readiness::from_object(&data, Some(4));
        assert_eq!(
            r.ready,
            Some(Ready {
                status: "False".into(),
                reason: "ReconciliationFailed".into(),
                message: "denied".into()
            })
        );
        assert!(r.stalled);
        assert_eq!((r.generation, r.observed_generation), (4, 3));
        assert_eq!(r.last_attempted_revision.as_deref(), Some("main@sha1:bad"));
        assert_eq!(
            Readiness::from_object(&json!({}), None),
            Readiness::default()
        );
    }

    #[test]
    fn long_messages_are_cut_on_a_char_boundary() {
        let long = "é".repeat(MAX_MESSAGE);
        let data = json!({"status": {"conditions": [{"type": "Ready", "status": "False", "message": long}]}});
        let msg = Readiness::from_object(&data, None).ready.unwrap().message;
        assert_eq!(msg.len(), MAX_MESSAGE);
        assert!(msg.chars().all(|c| c == 'é'));
    }
}
