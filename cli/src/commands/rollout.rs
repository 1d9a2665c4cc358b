//! `rollout status|pause|resume|abort|release-next GATE`: a gate's rollout waves, and an
//! operator's commands on the current one.

use fleetgate_api_types::ClusterStatus;
use fleetgate_api_types::rollout::{Health, RolloutState, RolloutStatus};

use crate::args::{Format, RolloutCmd};
use crate::client::{Client, seg};
use crate::error::Result;
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &RolloutCmd, format: Format) -> Result<()> {
    let (gate, command) = match cmd {
        RolloutCmd::Status { gate } => (gate, None),
        RolloutCmd::Pause { gate } => (gate, Some("pause")),
        RolloutCmd::Resume { gate } => (gate, Some("resume")),
        RolloutCmd::Abort { gate } => (gate, Some("abort")),
        RolloutCmd::ReleaseNext { gate } => (gate, Some("release-next")),
    };
    let path = format!("/gates/{}/rollout", seg(gate));
    let status: RolloutStatus = match command {
        None => client.get(&path, &[]).await?,
        Some(c) => {
            client
                .post(&format!("{path}/{c}"), &[], &serde_json::json!({}))
                .await?
        }
    };
    output::print_answer(format, &status, render)
}

/// The rollout as a header and one row per cluster.
pub fn render(s: &RolloutStatus) -> String {
    let mut out = format!(
        "gate/{} rollout {} {} — wave {} of {} (opening {})\n",
        s.gate,
        s.id,
        s.state.as_str(),
        s.wave.min(i32::try_from(s.waves.len()).unwrap_or(i32::MAX)),
        s.waves.len(),
        output::time(&s.opening_at),
    );
    if s.waiting_for_approval {
        out.push_str(&format!(
            "  waiting for approval: fleetgate rollout release-next {}\n",
            s.gate
        ));
    }
    if let Some(t) = s.soak_until {
        out.push_str(&format!("  soaking until {}\n", output::time(&t)));
    }
    // A halted wave has failed already: no deadline to meet.
    if let Some(t) = s
        .health_deadline
        .filter(|_| s.state == RolloutState::Running)
    {
        out.push_str(&format!("  healthy by {} or failed\n", output::time(&t)));
    }
    if let Some(d) = &s.detail {
        out.push_str(&format!("  {d}\n"));
    }
    let mut table = Table::new(&["WAVE", "STATE", "CLUSTER", "RELEASED", "HEALTH", "DETAIL"]);
    for w in &s.waves {
        let state = match (&w.estimated_release_at, w.approval) {
            (Some(t), true) => format!("{} (approval; ~{})", w.state, output::time(t)),
            (Some(t), false) => format!("{} (~{})", w.state, output::time(t)),
            (None, true) => format!("{} (approval)", w.state),
            (None, false) => w.state.clone(),
        };
        let label = format!("{} {}", w.index, w.name);
        if w.clusters.is_empty() {
            table.row(vec![
                label.clone(),
                state.clone(),
                "—".into(),
                String::new(),
                String::new(),
                String::new(),
            ]);
        }
        for c in &w.clusters {
            let mut name = c.name.clone();
            if c.late {
                name.push_str(" (late)");
            }
            if c.bypass {
                name.push_str(" (override)");
            }
            table.row(vec![
                label.clone(),
                state.clone(),
                name,
                output::time_or_empty(c.released_at.as_ref()),
                if c.health == Health::Closed {
                    "—".into()
                } else {
                    c.health.as_str().to_string()
                },
                c.detail.clone().unwrap_or_default(),
            ]);
        }
    }
    out.push_str(&table.render());
    out
}

/// Where the cluster is in each gate's current rollout (waiting for its wave, or
/// released and how healthy, with the failing object's Ready message).
pub(super) fn cluster_places(v: &ClusterStatus, gate: Option<&str>) -> String {
    let lines: Vec<String> = v
        .gates
        .iter()
        .filter(|g| gate.is_none_or(|n| g.gate == n))
        .filter_map(|g| {
            let r = g.rollout.as_ref()?;
            let detail = r
                .detail
                .as_deref()
                .map(|d| format!(" — {d}"))
                .unwrap_or_default();
            // The driver's verdict when the wave failed here (the live health may differ).
            let failed = g
                .rollout_failure
                .as_ref()
                .map(|f| {
                    format!(
                        "\n    FAILED at {}: {}",
                        output::time(&f.failed_at),
                        f.describe()
                    )
                })
                .unwrap_or_default();
            Some(format!("  {}: {}{detail}{failed}\n", g.gate, r.describe()))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!("\nRollouts:\n{}", lines.concat())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::commands::fixtures::cluster_status;

    #[test]
    fn a_cluster_status_lists_its_place_in_each_rollout() {
        let gate = |name: &str, rollout: serde_json::Value| {
            json!({"gate": name, "state": "closed", "reason": "r", "nextTransition": null,
                   "objects": [], "held": 0, "heldObjects": 0, "rollout": rollout})
        };
        let v = cluster_status(
            "edge-1",
            json!({
                "open": false, "closedBy": ["a"],
                "gates": [
                    gate("a", json!({"rolloutId": "r1", "state": "running", "wave": 2,
                                     "waveName": "early", "releasedAt": null, "health": "closed",
                                     "detail": null})),
                    gate("b", json!({"rolloutId": "r2", "state": "halted", "wave": 1,
                                     "waveName": "canary", "releasedAt": "2026-11-24T08:30:00Z",
                                     "health": "failed",
                                     "detail": "Kustomization flux-system/apps: Ready=False: boom"})),
                    gate("c", serde_json::Value::Null),
                ]
            }),
        );
        let out = cluster_places(&v, None);
        assert!(
            out.contains(
                "Rollouts:\n  a: waiting for wave 2 'early'\n  b: released in wave 1 'canary': failed (rollout halted) — Kustomization flux-system/apps: Ready=False: boom\n"
            ),
            "{out}"
        );
        assert!(cluster_places(&v, Some("c")).is_empty());
    }

    #[test]
    fn a_halted_wave_has_no_deadline_to_meet() {
        let status = |state: &str| -> RolloutStatus {
            serde_json::from_value(json!({
                "gate": "g", "id": "r1", "state": state,
                "openingAt": "2026-11-24T08:00:00Z", "startedAt": "2026-11-24T08:00:00Z",
                "endedAt": null, "wave": 1, "waitingForApproval": false, "soakUntil": null,
                "healthDeadline": "2026-11-24T08:30:00Z",
                "detail": "cluster c1 failed: Kustomization flux-system/apps: Ready=False: boom",
                "waves": []
            }))
            .unwrap()
        };
        assert!(render(&status("running")).contains("healthy by "));
        let halted = render(&status("halted"));
        assert!(!halted.contains("healthy by"), "{halted}");
        assert!(halted.contains("Ready=False: boom"), "{halted}");
    }
}
