//! Events of rollout steps: `rollout.started`, `rollout.wave_released`,
//! `rollout.halted`, `rollout.completed`, `rollout.aborted` and
//! `rollout.ended`, plus the `gate.opened` (cause `rollout`) of each wave's
//! clusters, enqueued in the step's own transaction (which holds the gate's
//! rollout lock, so one replica steps a gate at a time); their dedup keys
//! make a step retried after a failed commit, or seen twice, one event.
//!
//! A rollout gate opens a cluster only with its wave's release, so the
//! window edges, overrides and manifest writes of such a gate announce an
//! opening only for clusters the current rollout had already released
//! ([`only_released_opens`]); the release itself announces the others.

use chrono::{DateTime, SecondsFormat, Utc};
use fleetgate_policy::Gate;
use sqlx::PgConnection;

use super::event::{Cause, GateTransition, NewEvent};
use crate::rollout::Event;

/// The notifications of a rollout step's event (`rollout.start|release|halt|
/// complete|abort|end`; pauses, joins and the like are audited and on
/// WatchFleet, not notified). A release with clusters also opens the gate on
/// them: `gate.opened` (cause `rollout`, `next`: the gate's next scheduled change).
pub(crate) fn events(e: &Event, at: DateTime<Utc>, next: Option<DateTime<Utc>>) -> Vec<NewEvent> {
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
        "rollout.abort" => ("rollout.aborted", e.rollout_id.clone()),
        "rollout.end" => ("rollout.ended", e.rollout_id.clone()),
        _ => return Vec::new(),
    };
    let mut out = vec![NewEvent {
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
    }];
    if e.action == "rollout.release" && !e.clusters.is_empty() {
        let opened = GateTransition {
            gate: e.gate.clone(),
            state: "open".into(),
            clusters: e.clusters.clone(),
            reason: format!("released by rollout wave {}", e.wave + 1),
            cause: Cause::Rollout,
            at,
            next_transition: next,
            actor: None,
        };
        out.push(opened.keyed(&format!("rollout/{}/{}", e.rollout_id, e.wave)));
    }
    out
}

/// `transitions` of `gate` with the openings of a rollout gate narrowed to
/// the clusters its current rollout released before each one's instant
/// (dropped when none is left): the others stay closed until their wave.
/// Closings and other gates' transitions pass unchanged.
pub(crate) async fn only_released_opens(
    conn: &mut PgConnection,
    gate: Option<&Gate>,
    transitions: Vec<GateTransition>,
) -> crate::Result<Vec<GateTransition>> {
    if gate.is_none_or(|g| g.spec.rollout.is_none()) {
        return Ok(transitions);
    }
    let mut out = Vec::with_capacity(transitions.len());
    for mut t in transitions {
        if t.state == "open" {
            let released: std::collections::HashSet<String> =
                crate::db::outbox::released_before(conn, &t.gate, t.at)
                    .await?
                    .into_iter()
                    .collect();
            t.clusters.retain(|c| released.contains(c));
            if t.clusters.is_empty() {
                continue;
            }
        }
        out.push(t);
    }
    Ok(out)
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
    fn only_lifecycle_steps_are_notified_each_once() {
        let at = DateTime::parse_from_rfc3339("2026-11-25T13:00:00Z")
            .unwrap()
            .to_utc();
        let event = |e: &Event, at| events(e, at, None).into_iter().next();
        let both = events(&ev("rollout.release"), at, None);
        assert_eq!(both.len(), 2, "the wave's release and its gate.opened");
        assert_eq!(both[1].event_type, "gate.opened");
        assert_eq!(both[1].data["cause"], "rollout");
        assert_eq!(both[1].clusters, ["c2"]);
        assert_eq!(
            both[1].dedup_key.as_deref(),
            Some("gate.opened/waves/rollout/r1/1")
        );
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
        for (step, notified) in [
            ("rollout.abort", "rollout.aborted"),
            ("rollout.end", "rollout.ended"),
        ] {
            let e = event(&ev(step), at).unwrap();
            assert_eq!(e.event_type, notified);
            assert_eq!(
                e.dedup_key,
                event(&ev(step), at + chrono::Duration::seconds(5))
                    .unwrap()
                    .dedup_key,
                "one {notified} per rollout"
            );
        }
        for quiet in ["rollout.pause", "rollout.join", "rollout.update"] {
            assert!(events(&ev(quiet), at, None).is_empty(), "{quiet}");
        }
    }
}
