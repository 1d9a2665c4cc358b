//! `rollout status|pause|resume|abort|release-next GATE`: a gate's rollout waves, and an
//! operator's commands on the current one.

use fleetgate_api_types::rollout::{Health, RolloutStatus};

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
    if let Some(t) = s.health_deadline {
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
