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
        let mut t = Table::new(&[
            "CLUSTER",
            "CHANGE",
            "STATE",
            "GOVERNED",
            "WOULD HOLD",
            "NEXT",
            "REASON",
        ]);
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
            t.row(vec![
                k.cluster.clone(),
                k.change.clone(),
                if k.state.is_empty() {
                    "-".into()
                } else {
                    k.state.clone()
                },
                count(k.governed.len()),
                count(k.would_hold.len()),
                if k.change == "removed" {
                    String::new()
                } else {
                    next
                },
                k.reason.clone(),
            ]);
        }
        out.push_str(&if t.is_empty() {
            "  no cluster in scope\n".into()
        } else {
            t.render()
        });
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
