//! Rollout waves on the spoke (docs/rollouts.md): a gate with `spec.rollout` that its
//! rules open stays closed on this cluster until the hub's release for the current open
//! period arrives in the snapshot; while it waits, the reason names its wave. Only the hub
//! releases waves, so a spoke cut off from it never opens one (fail-safe).

use chrono::{DateTime, Utc};
use fleetgate_policy::{Evaluation, GateState};
use serde::{Deserialize, Serialize};

/// The wave this cluster waits for in a rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Waiting {
    pub rollout_id: String,
    /// 0-based.
    pub wave: u32,
    pub wave_name: String,
}

/// How the reason of a gate a rollout keeps closed begins (the Gate object's
/// `WaitingForWave` condition reason is chosen by it).
pub const WAITING_FOR_WAVE: &str = "waiting for rollout wave";

/// A rollout wave's release of this cluster (docs/rollouts.md "How a rollout runs").
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Release {
    pub rollout_id: String,
    /// The instant the gate's open period that this release is for began.
    pub opening_at: DateTime<Utc>,
    pub wave: u32,
}

/// The evaluation of a rollout gate its rules open at an instant whose open period began
/// at `since`: open only with a release of this cluster for that period (`opening_at` not
/// before `since`), else closed with a reason starting [`WAITING_FOR_WAVE`]. `release` and
/// `waiting` come from the hub's rule for the gate (both `None` for local and standalone
/// gates: never released).
pub fn hold(
    release: Option<&Release>,
    waiting: Option<&Waiting>,
    eval: Evaluation,
    since: Option<DateTime<Utc>>,
) -> Evaluation {
    if let (Some(r), Some(since)) = (release, since)
        && r.opening_at >= since
    {
        return eval;
    }
    let reason = match (waiting, release) {
        (Some(w), _) => format!(
            "{WAITING_FOR_WAVE} {} '{}' (not released on this cluster yet)",
            w.wave + 1,
            w.wave_name
        ),
        (None, Some(_)) => {
            format!("{WAITING_FOR_WAVE} (the release held is for an earlier opening)")
        }
        (None, None) => format!("{WAITING_FOR_WAVE} (not released on this cluster)"),
    };
    Evaluation {
        state: GateState::Closed,
        reason,
        // Re-planned when a snapshot brings the release; the window's own close still
        // applies.
        next_transition: eval.next_transition,
    }
}

#[cfg(test)]
mod tests {
    use fleetgate_proto::{time::to_timestamp, v1 as pb};

    use crate::hub::snapshot::{CompiledSnapshot, Snapshot};

    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn rollout_gate(
        release: Option<pb::RolloutRelease>,
        waiting: Option<pb::RolloutWaiting>,
    ) -> CompiledSnapshot {
        let manifest = serde_json::json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "w"},
            "spec": {"clusters": {"names": ["c1"]}, "targets": {"kinds": ["Kustomization"]},
                     "default": "closed",
                     "windows": [{"name": "day", "kind": "allow", "schedule": "0 8 * * *", "duration": "4h",
                                  "timeZone": "UTC"}],
                     "rollout": {"waves": [{"clusters": {"names": ["c1"]}}, {"percent": 100}]}}
        });
        let msg = pb::Snapshot {
            revision: 3,
            cluster: "c1".into(),
            gates: vec![pb::GateRule {
                name: "w".into(),
                version: 1,
                manifest_json: manifest.to_string(),
                release,
                waiting,
                opening_fence: None,
                calendars: vec![],
            }],
            ..Default::default()
        };
        CompiledSnapshot::compile(Snapshot::from_proto(msg).unwrap()).unwrap()
    }

    fn release(opening_at: &str) -> Option<pb::RolloutRelease> {
        Some(pb::RolloutRelease {
            rollout_id: "r1".into(),
            opening_at: Some(to_timestamp(at(opening_at))),
            wave: 0,
        })
    }

    #[test]
    fn a_rollout_gate_opens_only_with_its_release_for_this_opening() {
        let inside = at("2026-11-27T09:00:00Z");
        // Not released: closed inside the window, with the reason.
        let eval = rollout_gate(None, None).evaluate(inside);
        assert!(!eval.gates[0].open);
        assert!(
            eval.gates[0].reason.contains("waiting for rollout wave"),
            "{eval:?}"
        );
        // Released for today's opening: open.
        let snap = rollout_gate(release("2026-11-27T08:00:00Z"), None);
        assert!(snap.evaluate(inside).gates[0].open);
        // The same release tomorrow (a later opening, e.g. a spoke cut off from
        // the hub): closed again.
        assert!(!snap.evaluate(at("2026-11-28T09:00:00Z")).gates[0].open);
        // Outside the window a release opens nothing: closing never waits.
        assert!(!snap.evaluate(at("2026-11-27T13:00:00Z")).gates[0].open);
        // Same judgement for one gate by name (Gate objects, the Flagger endpoint).
        let one = snap.evaluate_gate("w", inside, &[]).unwrap();
        assert!(one.state.is_open());
        let stale = rollout_gate(release("2026-11-26T08:00:00Z"), None);
        assert!(
            !stale.evaluate(inside).gates[0].open,
            "a release from yesterday"
        );
    }

    #[test]
    fn a_release_from_before_the_opening_fence_opens_nothing() {
        let inside = at("2026-11-27T11:00:00Z");
        let fenced = |release, fence: &str| {
            let mut snap = rollout_gate(release, None);
            snap.snapshot.gates[0].opening_fence = Some(at(fence));
            CompiledSnapshot::compile(snap.snapshot).unwrap()
        };
        // A freeze 09:30-10:00 the hub no longer sends: today's 08:00 release is stale.
        let snap = fenced(release("2026-11-27T08:00:00Z"), "2026-11-27T10:00:00Z");
        let eval = snap.evaluate(inside);
        assert!(!eval.gates[0].open);
        assert!(eval.gates[0].reason.contains("earlier opening"), "{eval:?}");
        assert!(
            !snap
                .evaluate_gate("w", inside, &[])
                .unwrap()
                .state
                .is_open()
        );
        // The release for the reopening opens it; a fence from yesterday changes nothing.
        let snap = fenced(release("2026-11-27T10:00:00Z"), "2026-11-27T10:00:00Z");
        assert!(snap.evaluate(inside).gates[0].open);
        let snap = fenced(release("2026-11-27T08:00:00Z"), "2026-11-26T10:00:00Z");
        assert!(snap.evaluate(inside).gates[0].open);
        // The fence survives the persisted form (an offline restart keeps it).
        let json = serde_json::to_string(&snap.snapshot).unwrap();
        assert!(json.contains("openingFence"), "{json}");
        assert_eq!(
            serde_json::from_str::<Snapshot>(&json).unwrap(),
            snap.snapshot
        );
    }

    #[test]
    fn the_reason_names_the_wave_the_cluster_waits_for() {
        let inside = at("2026-11-27T09:00:00Z");
        let waiting = Some(pb::RolloutWaiting {
            rollout_id: "r2".into(),
            wave: 1,
            wave_name: "early".into(),
        });
        let eval = rollout_gate(None, waiting.clone()).evaluate(inside);
        assert!(!eval.gates[0].open);
        assert_eq!(
            eval.gates[0].reason,
            "waiting for rollout wave 2 'early' (not released on this cluster yet)"
        );
        // A stale release beside the current rollout's wave: the wave is named.
        let eval = rollout_gate(release("2026-11-26T08:00:00Z"), waiting).evaluate(inside);
        assert!(!eval.gates[0].open);
        assert!(eval.gates[0].reason.contains("wave 2 'early'"), "{eval:?}");
        let eval = rollout_gate(release("2026-11-26T08:00:00Z"), None).evaluate(inside);
        assert!(eval.gates[0].reason.contains("earlier opening"), "{eval:?}");
    }
}
