//! Estimated wave release times for a rollout gate's preview: for every opening in the
//! previewed range, the first wave at the opening and each next one a soak later — as if
//! every wave were healthy at once and every approval given at once. An estimate, not a
//! promise: health checks and approvals only delay waves, and a wave estimated after the
//! gate closes again waits for a later opening (a closing ends the rollout).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::{GateState, PreviewState, Rollout, Transition};

/// A rollout's estimated waves for one opening of the gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RolloutEstimate {
    /// When the gate opens (the rollout starts, releasing its first wave).
    pub opening_at: DateTime<Utc>,
    /// When the gate closes again within the preview, ending the rollout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub closes_at: Option<DateTime<Utc>>,
    pub waves: Vec<WaveEstimate>,
}

/// One wave's estimated release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WaveEstimate {
    /// 1-based.
    pub wave: u32,
    pub name: String,
    /// The earliest the wave can be released: the opening plus one soak per earlier wave.
    pub estimated_release_at: DateTime<Utc>,
    /// An operator releases it (`rollout release-next`): at the earliest then.
    #[serde(default)]
    pub approval: bool,
    /// Estimated at or after the gate closes again: this opening will not release it.
    #[serde(default)]
    pub after_close: bool,
}

/// The estimates for each closed→open change among `transitions` (starting from `initial`).
pub(crate) fn estimates(
    rollout: &Rollout,
    initial: &PreviewState,
    transitions: &[Transition],
) -> Vec<RolloutEstimate> {
    let soak = rollout.soak();
    let mut out = Vec::new();
    let mut previous = initial.state;
    for (i, t) in transitions.iter().enumerate() {
        let opens = previous == GateState::Closed && t.state == GateState::Open;
        previous = t.state;
        if !opens {
            continue;
        }
        let closes_at = transitions[i + 1..]
            .iter()
            .find(|c| c.state == GateState::Closed)
            .map(|c| c.at);
        let mut at = t.at;
        let waves = (0..rollout.waves.len())
            .map(|w| {
                if w > 0 {
                    at += soak;
                }
                WaveEstimate {
                    wave: u32::try_from(w + 1).unwrap_or(u32::MAX),
                    name: rollout.wave_name(w),
                    estimated_release_at: at,
                    approval: rollout.waves[w].approval,
                    after_close: closes_at.is_some_and(|c| at >= c),
                }
            })
            .collect();
        out.push(RolloutEstimate {
            opening_at: t.at,
            closes_at,
            waves,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use crate::parse_gate;

    fn gate(soak: &str) -> crate::CompiledGate {
        let yaml = format!(
            r#"apiVersion: fleetgate.io/v1
kind: Gate
metadata: {{name: waves}}
spec:
  clusters: {{selector: {{}}}}
  default: closed
  windows: [{{name: day, kind: allow, schedule: "0 8 * * *", duration: 9h}}]
  rollout:
    soak: {soak}
    waves:
      - {{name: canary, clusters: {{names: [c1]}}}}
      - {{name: early, percent: 25}}
      - {{name: rest, approval: true}}
"#
        );
        parse_gate(&yaml).unwrap().compile().unwrap()
    }

    #[test]
    fn each_opening_gets_its_waves_a_soak_apart() {
        let from = chrono::Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        let p = gate("30m").preview(from, from + chrono::Duration::days(2), &[]);
        assert_eq!(p.rollouts.len(), 2, "{p:?}");
        let day = &p.rollouts[0];
        assert_eq!(day.opening_at.to_rfc3339(), "2026-11-25T08:00:00+00:00");
        assert_eq!(
            day.closes_at.map(|t| t.to_rfc3339()).as_deref(),
            Some("2026-11-25T17:00:00+00:00")
        );
        let times: Vec<String> = day
            .waves
            .iter()
            .map(|w| {
                format!(
                    "{} {} {}",
                    w.wave,
                    w.name,
                    w.estimated_release_at.format("%H:%M")
                )
            })
            .collect();
        assert_eq!(times, ["1 canary 08:00", "2 early 08:30", "3 rest 09:00"]);
        assert!(day.waves[2].approval && !day.waves[0].approval);
        assert!(day.waves.iter().all(|w| !w.after_close));
        let json = serde_json::to_value(&p).unwrap();
        assert_eq!(
            json["rollouts"][1]["waves"][1]["estimatedReleaseAt"],
            "2026-11-26T08:30:00Z"
        );
    }

    #[test]
    fn waves_past_the_closing_wait_for_a_later_opening() {
        let from = chrono::Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        let p = gate("5h").preview(from, from + chrono::Duration::days(1), &[]);
        let after: Vec<bool> = p.rollouts[0].waves.iter().map(|w| w.after_close).collect();
        // 08:00, 13:00, 18:00 against a closing at 17:00.
        assert_eq!(after, [false, false, true]);
    }

    #[test]
    fn gates_without_rollout_keep_the_old_shape() {
        let g = parse_gate(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {name: g}\nspec: {clusters: {selector: {}}, default: open}\n",
        )
        .unwrap()
        .compile()
        .unwrap();
        let from = chrono::Utc.with_ymd_and_hms(2026, 11, 25, 0, 0, 0).unwrap();
        let json =
            serde_json::to_value(g.preview(from, from + chrono::Duration::days(1), &[])).unwrap();
        assert!(json.get("rollouts").is_none(), "{json}");
    }
}
