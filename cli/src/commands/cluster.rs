//! `cluster register|list|get|label|rotate-token|set-jwks|delete`. Spoke tokens are
//! shown once (register, rotate-token): the hub stores only their hash. A cluster
//! registered with `--issuer` has none: its spoke presents the cluster's own JWT.

use std::collections::BTreeMap;

use fleetgate_api_types::{
    Cluster, ClusterWithToken, RegisterCluster, Relabel, SetClusterJwks, Skew,
};
use serde_json::json;

use crate::args::{ClusterCmd, Format};
use crate::client::{Client, reason as reason_q, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &ClusterCmd, format: Format) -> Result<()> {
    match cmd {
        ClusterCmd::Register {
            name,
            labels,
            issuer,
            jwks_file,
            service_account,
            spiffe_id,
            reason,
        } => {
            let labels = parse_labels(labels)?;
            let body = RegisterCluster {
                name: name.clone(),
                labels,
                issuer: issuer.clone(),
                service_account: service_account.clone(),
                spiffe_id: spiffe_id.clone(),
                jwks: jwks_file.as_deref().map(read_jwks).transpose()?,
            };
            let v = client.post("/clusters", &reason_q(reason), &body).await?;
            print_token(format, name, "registered", &v)
        }
        ClusterCmd::SetJwks {
            name,
            jwks_file,
            discovery: _,
            reason,
        } => {
            let body = SetClusterJwks {
                jwks: jwks_file.as_deref().map(read_jwks).transpose()?,
            };
            let v: Cluster = client
                .put(
                    &format!("/clusters/{}/jwks", seg(name)),
                    &reason_q(reason),
                    &body,
                    None,
                )
                .await?;
            output::print_answer(format, &v, |_| format!("cluster/{name} keys replaced\n"))
        }
        ClusterCmd::List { selector } => list(client, selector.as_deref(), format).await,
        ClusterCmd::Get { name } => {
            let v: Cluster = client.get(&format!("/clusters/{}", seg(name)), &[]).await?;
            output::print_answer(format, &v, |c| {
                render(std::slice::from_ref(c)) + &snapshot_lines(c)
            })
        }
        ClusterCmd::Label {
            name,
            changes,
            reason,
        } => label(client, name, changes, reason, format).await,
        ClusterCmd::RotateToken { name, reason } => {
            let v = client
                .post(
                    &format!("/clusters/{}/rotate-token", seg(name)),
                    &reason_q(reason),
                    &json!({}),
                )
                .await?;
            print_token(format, name, "token rotated", &v)
        }
        ClusterCmd::Delete { name, reason } => {
            client
                .delete::<()>(&format!("/clusters/{}", seg(name)), &reason_q(reason))
                .await?;
            let v = json!({"cluster": name, "action": "deleted"});
            output::print(format, &v, |_| format!("cluster/{name} deleted\n"))
        }
    }
}

fn print_token(format: Format, name: &str, what: &str, v: &ClusterWithToken) -> Result<()> {
    output::print_answer(format, v, |v| match &v.cluster.identity {
        Some(id) => format!(
            "cluster/{name} {what}\nits spoke signs in with a JWT of {} for {} (no token to store)\n",
            id.issuer, id.subject
        ),
        None => format!(
            "cluster/{name} {what}\nspoke token (shown once, store it in the spoke's Secret):\n{}\n",
            v.token
        ),
    })
}

/// A JWKS file (`kubectl get --raw /openid/v1/jwks`) as JSON; the hub checks its keys.
fn read_jwks(path: &std::path::Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Usage(format!("--jwks-file {}: {e}", path.display())))?;
    serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("--jwks-file {}: not JSON: {e}", path.display())))
}

async fn list(client: &Client, selector: Option<&str>, format: Format) -> Result<()> {
    let mut items: Vec<Cluster> = client.list("/clusters", &[], None).await?;
    if let Some(sel) = selector {
        // Filtered here so it works whatever the hub supports server-side.
        let sel = fleetgate_policy::LabelSelector::parse(sel)
            .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
        items.retain(|c| sel.matches(&c.labels));
    }
    output::print_answer(format, &items, |items| render(items))
}

fn render(items: &[Cluster]) -> String {
    if items.is_empty() {
        return "No clusters.\n".into();
    }
    let mut t = Table::new(&[
        "NAME",
        "CONNECTED",
        "LAST SEEN",
        "SPOKE",
        "SIGNS IN WITH",
        "LABELS",
    ]);
    for c in items {
        t.row(vec![
            c.name.clone(),
            if c.connected { "yes" } else { "no" }.into(),
            non_empty(output::time_or_empty(c.last_seen_at.as_ref()), "never"),
            spoke_version(c),
            credential(c),
            output::labels(&c.labels),
        ]);
    }
    t.render()
}

/// The cluster's snapshot as its spoke persisted it, and the hub's over-budget hold, in
/// words (`fleetgate cluster get`, `fleetgate status CLUSTER`); empty when there is nothing
/// to say (a spoke that predates it).
pub fn snapshot_lines(c: &Cluster) -> String {
    let mut out = String::new();
    if let Some(o) = &c.snapshot_over_budget {
        out.push_str(&format!(
            "snapshot over budget: revision {} is {} bytes, over {}, since {}: the cluster is held closed until its gates fit\n",
            o.revision,
            o.bytes,
            o.budget,
            output::time(&o.since)
        ));
    }
    let Some(p) = &c.snapshot_persistence else {
        return out;
    };
    let copy = if p.persisted_revision == 0 {
        "no snapshot".to_owned()
    } else {
        format!(
            "revision {} ({} bytes in {} ConfigMap{})",
            p.persisted_revision,
            p.stored_bytes,
            p.config_maps,
            if p.config_maps == 1 { "" } else { "s" }
        )
    };
    match p.state.as_str() {
        "failing" => out.push_str(&format!(
            "snapshot persisted: FAILING since {}: revision {} is enforced but not persisted ({}); a restart without the hub would enforce {copy}\n",
            p.failing_since.as_ref().map(output::time).unwrap_or_default(),
            p.failing_revision.unwrap_or_default(),
            p.error.as_deref().unwrap_or("no reason given"),
        )),
        "persisted" => out.push_str(&format!("snapshot persisted: {copy}\n")),
        _ => out.push_str("snapshot persisted: nothing to persist yet\n"),
    }
    out
}

/// How the cluster's spoke signs in: `token`, or the issuer and subject of its own JWT.
fn credential(c: &Cluster) -> String {
    match &c.identity {
        None => "token".into(),
        Some(id) => format!(
            "{} {}{}",
            id.issuer,
            id.subject,
            if id.jwks_pinned { " (pinned keys)" } else { "" }
        ),
    }
}

/// The spoke's version as a table shows it: flagged when the hub finds it
/// outside the supported skew (`0.1.0 (unsupported)`).
pub fn spoke_version(c: &Cluster) -> String {
    let v = c.spoke_version.clone().unwrap_or_default();
    match c.spoke_skew {
        Some(Skew::Unsupported) => format!("{v} (unsupported)"),
        _ => v,
    }
}

fn non_empty(s: String, default: &str) -> String {
    if s.is_empty() { default.into() } else { s }
}

/// `key=value` pairs (repeatable `-L`) to a label map.
fn parse_labels(pairs: &[String]) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for p in pairs {
        let (k, v) = p
            .split_once('=')
            .ok_or_else(|| Error::Usage(format!("--label '{p}': expected KEY=VALUE")))?;
        if k.is_empty() {
            return Err(Error::Usage(format!("--label '{p}': empty key")));
        }
        out.insert(k.to_string(), v.to_string());
    }
    Ok(out)
}

/// kubectl-style `key=value` (set) and `key-` (remove), applied to the
/// current labels and sent as the full new label set.
async fn label(
    client: &Client,
    name: &str,
    changes: &[String],
    reason: &Option<String>,
    format: Format,
) -> Result<()> {
    let cur: Cluster = client.get(&format!("/clusters/{}", seg(name)), &[]).await?;
    let mut labels = cur.labels;
    for c in changes {
        if let Some(key) = c.strip_suffix('-')
            && !c.contains('=')
        {
            labels.remove(key);
        } else {
            let (k, v) = c.split_once('=').ok_or_else(|| {
                Error::Usage(format!("'{c}': expected KEY=VALUE or KEY- to remove"))
            })?;
            labels.insert(k.to_string(), v.to_string());
        }
    }
    let v: Cluster = client
        .put(
            &format!("/clusters/{}/labels", seg(name)),
            &reason_q(reason),
            &Relabel { labels },
            None,
        )
        .await?;
    output::print_answer(format, &v, |_| format!("cluster/{name} labeled\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_need_key_and_equals() {
        let l = parse_labels(&["region=eu".into(), "tier=".into()]).unwrap();
        assert_eq!(l.get("region").map(String::as_str), Some("eu"));
        assert_eq!(l.get("tier").map(String::as_str), Some(""));
        assert!(parse_labels(&["region".into()]).is_err());
        assert!(parse_labels(&["=x".into()]).is_err());
    }
}
