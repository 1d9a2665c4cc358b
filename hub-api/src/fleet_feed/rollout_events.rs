//! Rollout events: the difference of two fleet views' newest rollout per gate, named for
//! what happened (started, released a wave, healthy, paused, resumed, halted, completed,
//! aborted, ended). Comparing persisted rollouts (not the driver's in-memory steps) makes
//! every replica's watchers see every step, whichever replica's driver took it.

use crate::rollout::State;
use crate::service::fleet::{FleetView, RolloutSummary};

/// What happened to a gate's rollout between two views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutAction {
    /// The rollout as it stands when the watcher subscribed (initial events only).
    Current,
    /// A new rollout started (the gate opened).
    Started,
    /// A wave was released (or more clusters of it: joins, bypasses, re-releases).
    Released,
    /// The current wave became healthy: its soak runs.
    Healthy,
    Paused,
    Resumed,
    Halted,
    Completed,
    Aborted,
    /// The gate closed (or opened anew): the rollout is over.
    Ended,
    /// Anything else that changed (a cluster's release withdrawn, the detail).
    Updated,
}

impl RolloutAction {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Current => "current",
            Self::Started => "started",
            Self::Released => "released",
            Self::Healthy => "healthy",
            Self::Paused => "paused",
            Self::Resumed => "resumed",
            Self::Halted => "halted",
            Self::Completed => "completed",
            Self::Aborted => "aborted",
            Self::Ended => "ended",
            Self::Updated => "updated",
        }
    }
}

/// A gate's rollout changed; the fields are its state after the change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutChange {
    pub gate: String,
    pub rollout_id: String,
    pub action: RolloutAction,
    /// `running`, `paused`, `halted`, `aborted`, `completed` or `ended`.
    pub state: String,
    /// The current wave, 1-based, and how many waves there are.
    pub wave: u32,
    pub waves: u32,
    /// Clusters released so far / in the rollout.
    pub released: u32,
    pub clusters: u32,
    /// Why it halted (the failing clusters and objects), when it did.
    pub detail: Option<String>,
}

/// What turned `before` into `now` (`None` before: the rollout is new to this view).
pub fn action(before: Option<&RolloutSummary>, now: &RolloutSummary) -> Option<RolloutAction> {
    let Some(b) = before.filter(|b| b.id == now.id) else {
        return Some(RolloutAction::Started);
    };
    if b == now {
        return None;
    }
    let (was, is) = (State::parse(&b.state), State::parse(&now.state));
    if was != is {
        return Some(match is {
            State::Running => RolloutAction::Resumed,
            State::Paused => RolloutAction::Paused,
            State::Halted => RolloutAction::Halted,
            State::Completed => RolloutAction::Completed,
            State::Aborted => RolloutAction::Aborted,
            State::Ended => RolloutAction::Ended,
        });
    }
    if now.released > b.released || (now.wave_released && (!b.wave_released || now.wave != b.wave))
    {
        return Some(RolloutAction::Released);
    }
    if now.healthy && !b.healthy {
        return Some(RolloutAction::Healthy);
    }
    Some(RolloutAction::Updated)
}

/// The rollout events that turn `prev` into `next` (`prev` None: the current rollouts
/// as they stand) for the gates `wanted` accepts.
pub fn diff(
    prev: Option<&FleetView>,
    next: &FleetView,
    wanted: impl Fn(&str) -> bool,
) -> Vec<RolloutChange> {
    let mut out = Vec::new();
    for (gate, now) in &next.rollouts {
        if !wanted(gate) {
            continue;
        }
        let action = match prev {
            None if State::parse(&now.state) == State::Ended => None,
            None => Some(RolloutAction::Current),
            Some(prev) => action(prev.rollouts.get(gate), now),
        };
        if let Some(action) = action {
            out.push(change(now, action));
        }
    }
    out
}

fn change(r: &RolloutSummary, action: RolloutAction) -> RolloutChange {
    let n = |v: i64| u32::try_from(v).unwrap_or(u32::MAX);
    RolloutChange {
        gate: r.gate.clone(),
        rollout_id: r.id.to_string(),
        action,
        state: r.state.clone(),
        wave: u32::try_from(r.wave + 1).unwrap_or(0),
        waves: u32::try_from(r.waves).unwrap_or(0),
        released: n(r.released),
        clusters: n(r.clusters),
        detail: r.detail.clone(),
    }
}

#[cfg(test)]
mod tests {
    use uuid::Uuid;

    use super::*;

    fn rollout(id: u128, state: &str, wave: i32, released: i64) -> RolloutSummary {
        RolloutSummary {
            gate: "g".into(),
            id: Uuid::from_u128(id),
            state: state.into(),
            wave,
            waves: 3,
            wave_released: true,
            healthy: false,
            released,
            clusters: 6,
            detail: None,
        }
    }

    fn view(rollouts: &[RolloutSummary]) -> FleetView {
        FleetView {
            rollouts: rollouts
                .iter()
                .map(|r| (r.gate.clone(), r.clone()))
                .collect(),
            ..FleetView::default()
        }
    }

    fn named(before: Option<&RolloutSummary>, now: &RolloutSummary) -> Option<&'static str> {
        action(before, now).map(RolloutAction::as_str)
    }

    #[test]
    fn each_step_is_named() {
        let started = rollout(1, "running", 0, 1);
        assert_eq!(named(None, &started), Some("started"));
        assert_eq!(named(Some(&started), &started), None);
        let healthy = RolloutSummary {
            healthy: true,
            ..started.clone()
        };
        assert_eq!(named(Some(&started), &healthy), Some("healthy"));
        let second = rollout(1, "running", 1, 3);
        assert_eq!(named(Some(&healthy), &second), Some("released"));
        let halted = RolloutSummary {
            detail: Some("c2: Kustomization apps not Ready".into()),
            ..rollout(1, "halted", 1, 3)
        };
        assert_eq!(named(Some(&second), &halted), Some("halted"));
        assert_eq!(named(Some(&halted), &second), Some("resumed"));
        let paused = rollout(1, "paused", 1, 3);
        assert_eq!(named(Some(&second), &paused), Some("paused"));
        assert_eq!(named(Some(&paused), &second), Some("resumed"));
        let aborted = rollout(1, "aborted", 1, 3);
        assert_eq!(named(Some(&paused), &aborted), Some("aborted"));
        let done = rollout(1, "completed", 2, 6);
        assert_eq!(named(Some(&second), &done), Some("completed"));
        let ended = rollout(1, "ended", 2, 6);
        assert_eq!(named(Some(&done), &ended), Some("ended"));
        // The next opening's rollout is a new one, whatever the old one's state.
        let next = rollout(2, "running", 0, 1);
        assert_eq!(named(Some(&ended), &next), Some("started"));
        // onFailure close withdrew releases: not a release.
        let withdrawn = rollout(1, "running", 1, 1);
        assert_eq!(named(Some(&second), &withdrawn), Some("updated"));
    }

    #[test]
    fn initial_events_show_live_rollouts_and_filters_apply() {
        let live = rollout(1, "halted", 1, 3);
        let over = RolloutSummary {
            gate: "h".into(),
            ..rollout(2, "ended", 2, 6)
        };
        let v = view(&[live.clone(), over]);
        let first = diff(None, &v, |_| true);
        assert_eq!(first.len(), 1);
        assert_eq!(first[0].action, RolloutAction::Current);
        assert_eq!((first[0].wave, first[0].waves), (2, 3));
        assert_eq!((first[0].released, first[0].clusters), (3, 6));
        assert!(diff(None, &v, |g| g == "h").is_empty());
        let moved = view(&[rollout(1, "running", 1, 3)]);
        assert!(diff(Some(&v), &moved, |g| g != "g").is_empty());
    }
}
