//! `gate apply --dry-run`: for every manifest, the hub's impact preview (`?dryRun=true`, the
//! same validation as a real apply, nothing written or audited): the clusters it would govern,
//! added and removed against the stored version, each one's state now and next change, and the
//! Flux objects it would govern and hold now. With `--prune`, the gates that would be deleted.

use fleetgate_api_types::GateRecord;
use fleetgate_api_types::impact::GateImpact;
use serde_json::json;

use crate::args::Format;
use crate::client::{Client, seg};
use crate::error::Result;
use crate::manifests::{self, Loaded};
use crate::output::{self, Table};

pub async fn apply(
    client: &Client,
    files: &[std::path::PathBuf],
    prune: bool,
    format: Format,
) -> Result<()> {
    let loaded = manifests::load_all(files)?;
    super::gate::print_warnings(&loaded);
    let q = [("dryRun", "true".to_string())];
    let mut impacts = Vec::new();
    for Loaded { gate, .. } in &loaded {
        let name = gate.name().to_string();
        let path = format!("/gates/{}", seg(&name));
        let impact: GateImpact = match client.post("/gates", &q, gate).await {
            Err(crate::error::Error::Api { status: 409, .. }) => {
                client.put(&path, &q, gate, None).await?
            }
            other => other?,
        };
        impacts.push(impact);
    }
    let mut pruned = Vec::new();
    if prune {
        for g in client.list::<GateRecord>("/gates", &[], None).await? {
            if !loaded.iter().any(|l| l.gate.name() == g.name) {
                pruned.push(g.name);
            }
        }
    }
    let out = json!({"dryRun": true, "gates": impacts, "pruned": pruned});
    output::print(format, &out, |_| render(&impacts, &pruned))
}

fn render(impacts: &[GateImpact], pruned: &[String]) -> String {
    let mut out = String::new();
    for i in impacts {
        let c = &i.counts;
        out.push_str(&format!(
            "gate/{} {} (dry run, {}): {} clusters ({} closed now; +{} added, -{} removed), \
             would govern {} objects and hold {} now\n",
            i.gate,
            i.action,
            i.enforcement,
            c.clusters,
            c.closed,
            i.added.len(),
            i.removed.len(),
            c.governed,
            c.would_hold,
        ));
        let rollout = !i.waves.is_empty();
        let mut headers = vec!["CLUSTER", "CHANGE", "STATE"];
        if rollout {
            headers.push("WAVE");
        }
        headers.extend(["GOVERNED", "WOULD HOLD", "NEXT", "REASON"]);
        let mut t = Table::new(&headers);
        for k in &i.clusters {
            let next = k
                .transitions
                .first()
                .map(|t| format!("{} {}", t.state, output::time(&t.at)))
                .unwrap_or_else(|| "none in 7 days".into());
            let count = |n: usize| {
                if k.inventory_reported || k.change == "removed" {
                    n.to_string()
                } else {
                    "?".to_string()
                }
            };
            let mut row = vec![
                k.cluster.clone(),
                k.change.clone(),
                if k.state.is_empty() {
                    "-".into()
                } else {
                    k.state.clone()
                },
            ];
            if rollout {
                row.push(match (k.wave, &k.wave_name) {
                    (Some(w), Some(n)) => format!("{w} {n}"),
                    _ => "-".into(),
                });
            }
            row.extend([
                count(k.governed.len()),
                count(k.would_hold.len()),
                if k.change == "removed" {
                    String::new()
                } else {
                    next
                },
                k.reason.clone(),
            ]);
            t.row(row);
        }
        out.push_str(&if t.is_empty() {
            "  no cluster in scope\n".into()
        } else {
            t.render()
        });
        if rollout {
            out.push_str(&waves(i));
        }
        let held: Vec<String> = i
            .clusters
            .iter()
            .flat_map(|k| {
                k.would_hold
                    .iter()
                    .map(move |o| format!("  {}  {} {}/{}", k.cluster, o.kind, o.namespace, o.name))
            })
            .collect();
        if !held.is_empty() {
            out.push_str("would hold now:\n");
            out.push_str(&held.join("\n"));
            out.push('\n');
        }
        let unknown: Vec<&str> = (i.clusters.iter())
            .filter(|k| !k.inventory_reported && k.change != "removed")
            .map(|k| k.cluster.as_str())
            .collect();
        if !unknown.is_empty() {
            out.push_str(&format!(
                "no inventory reported yet (spoke offline or older): {}\n",
                unknown.join(",")
            ));
        }
        out.push('\n');
    }
    for name in pruned {
        out.push_str(&format!("gate/{name} would be pruned\n"));
    }
    out
}

/// The rollout waves of a preview: each wave's clusters in release order and its estimated
/// release at the gate's next opening.
fn waves(i: &GateImpact) -> String {
    let mut out =
        String::from("rollout waves (estimated at the next opening, every wave healthy):\n");
    for w in &i.waves {
        let when = match (&w.estimated_release_at, w.after_close) {
            (Some(at), false) => format!("release ~{}", output::time(at)),
            (Some(at), true) => format!("~{} is after the gate closes again", output::time(at)),
            (None, _) => "no opening in 7 days".into(),
        };
        let approval = if w.approval { ", needs approval" } else { "" };
        let clusters = if w.clusters.is_empty() {
            "(no cluster)".to_string()
        } else {
            w.clusters.join(",")
        };
        out.push_str(&format!(
            "  wave {} {}: {} ({when}{approval})\n",
            w.wave, w.name, clusters
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use chrono::{TimeZone, Utc};
    use fleetgate_api_types::impact::{ClusterImpact, ImpactCounts, ImpactWave};

    use super::*;

    fn cluster(name: &str, wave: u32, wave_name: &str) -> ClusterImpact {
        ClusterImpact {
            cluster: name.into(),
            change: "unchanged".into(),
            connected: true,
            state: "closed".into(),
            reason: "default".into(),
            transitions: Vec::new(),
            inventory_reported: true,
            governed: Vec::new(),
            would_hold: Vec::new(),
            wave: Some(wave),
            wave_name: Some(wave_name.into()),
        }
    }

    #[test]
    fn a_rollout_gate_previews_each_cluster_s_wave() {
        let at = Utc.with_ymd_and_hms(2026, 11, 25, 13, 0, 0).unwrap();
        let wave =
            |n: u32, name: &str, clusters: &[&str], offset: i64, approval: bool| ImpactWave {
                wave: n,
                name: name.into(),
                approval,
                clusters: clusters.iter().map(|c| c.to_string()).collect(),
                estimated_release_at: Some(at + chrono::Duration::minutes(offset)),
                after_close: false,
            };
        let impact = GateImpact {
            gate: "waves".into(),
            action: "replace".into(),
            stored_version: Some(1),
            at,
            enforcement: "enforce".into(),
            added: Vec::new(),
            removed: Vec::new(),
            clusters: vec![cluster("c1", 1, "canary"), cluster("c2", 2, "rest")],
            counts: ImpactCounts::default(),
            waves: vec![
                wave(1, "canary", &["c1"], 0, false),
                wave(2, "rest", &["c2"], 10, true),
            ],
            warnings: Vec::new(),
        };
        let text = render(&[impact], &[]);
        let rows: Vec<String> = (text.lines())
            .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
            .collect();
        assert!(
            rows[1].starts_with("CLUSTER CHANGE STATE WAVE GOVERNED"),
            "{text}"
        );
        assert!(
            rows[2].starts_with("c1 unchanged closed 1 canary 0 0"),
            "{text}"
        );
        assert!(
            rows[3].starts_with("c2 unchanged closed 2 rest 0 0"),
            "{text}"
        );
        assert!(
            text.contains("  wave 1 canary: c1 (release ~2026-11-25T13:00:00Z)\n"),
            "{text}"
        );
        assert!(
            text.contains("  wave 2 rest: c2 (release ~2026-11-25T13:10:00Z, needs approval)\n"),
            "{text}"
        );
    }
}
