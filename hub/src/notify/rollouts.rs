//! Events of rollout steps: `rollout.started`, `rollout.wave_released`,
//! `rollout.halted` and `rollout.completed`, enqueued in the step's own
//! transaction (which holds the gate's rollout lock, so one replica steps a
//! gate at a time); their dedup keys make a step retried after a failed
//! commit, or seen twice, one event.

use chrono::{DateTime, SecondsFormat, Utc};

use super::event::NewEvent;
use crate::rollout::Event;

/// The notification of a rollout step's event, if subscribers get one for
/// it (`rollout.start|release|halt|complete`; pauses, joins and the like are
/// audited and on WatchFleet, not notified).
pub(crate) fn event(e: &Event, at: DateTime<Utc>) -> Option<NewEvent> {
    let (event_type, key) = match e.action {
        "rollout.start" => ("rollout.started", e.rollout_id.clone()),
        "rollout.release" => (
            "rollout.wave_released",
            format!("{}/{}", e.rollout_id, e.wave),
        ),
        // A resumed wave may halt again: each halt is its own event.
        "rollout.halt" => (
            "rollout.halted",
            format!(
                "{}/{}/{}",
                e.rollout_id,
                e.wave,
                at.to_rfc3339_opts(SecondsFormat::Millis, true)
            ),
        ),
        "rollout.complete" => ("rollout.completed", e.rollout_id.clone()),
        _ => return None,
    };
    Some(NewEvent {
        event_type: event_type.into(),
        subject: format!("rollout/{}", e.gate),
        dedup_key: Some(format!("{event_type}/{}/{key}", e.gate)),
        occurred_at: at,
        gate: Some(e.gate.clone()),
        clusters: e.clusters.clone(),
        data: serde_json::json!({
            "gate": e.gate,
            "rolloutId": e.rollout_id,
            // 1-based, as people count waves (and as the audit log shows them).
            "wave": e.wave + 1,
            "clusters": e.clusters,
            "detail": e.detail,
            "at": at,
        }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(action: &'static str) -> Event {
        Event {
            action,
            gate: "waves".into(),
            rollout_id: "r1".into(),
            wave: 1,
            clusters: vec!["c2".into()],
            detail: None,
        }
    }

    #[test]
    fn only_the_four_lifecycle_steps_are_notified_each_once() {
        let at = DateTime::parse_from_rfc3339("2026-11-25T13:00:00Z")
            .unwrap()
            .to_utc();
        let released = event(&ev("rollout.release"), at).unwrap();
        assert_eq!(released.event_type, "rollout.wave_released");
        assert_eq!(released.data["wave"], 2);
        assert_eq!(
            released.dedup_key.as_deref(),
            Some("rollout.wave_released/waves/r1/1")
        );
        let later = event(&ev("rollout.release"), at + chrono::Duration::seconds(5)).unwrap();
        assert_eq!(later.dedup_key, released.dedup_key, "one event per wave");
        let h1 = event(&ev("rollout.halt"), at).unwrap();
        let h2 = event(&ev("rollout.halt"), at + chrono::Duration::minutes(5)).unwrap();
        assert_ne!(h1.dedup_key, h2.dedup_key, "a wave halting again is news");
        for quiet in [
            "rollout.pause",
            "rollout.join",
            "rollout.end",
            "rollout.update",
        ] {
            assert!(event(&ev(quiet), at).is_none(), "{quiet}");
        }
    }
}
