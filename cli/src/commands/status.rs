//! `status`: the fleet at a glance — counts, each gate's open/closed split,
//! and one row per cluster (like `flux get`: may it change now, what holds
//! it, what is waiting, when the next transition is) — or one cluster in
//! detail with its governed objects.

use serde_json::Value;

use crate::args::{Format, StatusArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, args: &StatusArgs, format: Format) -> Result<()> {
    if let Some(name) = &args.cluster {
        let v = client
            .get(&format!("/clusters/{}/status", seg(name)), &[])
            .await?;
        return output::print(format, &v, |v| render_cluster(v, args.gate.as_deref()));
    }
    if let Some(sel) = &args.selector {
        // A usage error before any request, like the other `-l` commands.
        fleetgate_policy::LabelSelector::parse(sel)
            .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
    }
    // One request: the fleet summary and every (selected) cluster's gates.
    let query: Vec<(&str, String)> = args
        .selector
        .iter()
        .map(|s| ("selector", s.clone()))
        .collect();
    let v = client.get("/status/clusters", &query).await?;
    output::print(format, &v, |v| render_fleet(v, args.gate.as_deref()))
}

fn gates_of(c: &Value) -> Vec<Value> {
    c.get("gates")
        .and_then(|g| g.as_array())
        .cloned()
        .unwrap_or_default()
}

fn spoke(cluster: &Value) -> &'static str {
    match cluster.get("connected") {
        Some(Value::Bool(true)) => "connected",
        Some(Value::Bool(false)) => "disconnected",
        _ => "?",
    }
}

fn strs(v: Option<&Value>) -> String {
    v.and_then(|x| x.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str())
                .collect::<Vec<_>>()
                .join(",")
        })
        .unwrap_or_default()
}

fn n(v: &Value, ptr: &str) -> String {
    v.pointer(ptr).map(|x| x.to_string()).unwrap_or_default()
}

fn render_fleet(v: &Value, gate: Option<&str>) -> String {
    let s = &v["summary"];
    let mut out = format!(
        "clusters: {} ({} connected, {} disconnected)   may change now: {}   closed: {}   with held changes: {}\n\
         objects: {} governed, {} suspended, {} held   fleet revision {}\n\n",
        n(s, "/clusters/total"),
        n(s, "/clusters/connected"),
        n(s, "/clusters/disconnected"),
        n(s, "/clusters/open"),
        n(s, "/clusters/closed"),
        n(s, "/clusters/withHeld"),
        n(s, "/objects/governed"),
        n(s, "/objects/suspended"),
        n(s, "/objects/held"),
        n(s, "/revision"),
    );
    let mut gates = Table::new(&["GATE", "CLUSTERS", "OPEN", "CLOSED"]);
    for g in s
        .get("gates")
        .and_then(|g| g.as_array())
        .into_iter()
        .flatten()
        .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
    {
        gates.row(vec![
            output::s(g, "gate"),
            output::s(g, "clusters"),
            output::s(g, "open"),
            output::s(g, "closed"),
        ]);
    }
    if !gates.is_empty() {
        out.push_str(&gates.render());
        out.push('\n');
    }
    let mut t = Table::new(&[
        "CLUSTER",
        "SPOKE",
        "READY",
        "CLOSED BY",
        "HELD",
        "NEXT",
        "MESSAGE",
    ]);
    for c in v
        .get("clusters")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        let gates = gates_of(c);
        if let Some(g) = gate
            && !gates.iter().any(|x| output::s(x, "gate") == g)
        {
            continue;
        }
        let open = c.get("open").and_then(|o| o.as_bool()).unwrap_or(true);
        // The message is the reason of the first closed gate (or the first gate).
        let first = gates
            .iter()
            .find(|g| output::s(g, "state") == "closed")
            .or(gates.first());
        t.row(vec![
            c.pointer("/cluster/name")
                .and_then(|x| x.as_str())
                .unwrap_or_default()
                .to_string(),
            spoke(&c["cluster"]).into(),
            if open { "True" } else { "False" }.into(),
            strs(c.get("closedBy")),
            n(c, "/counts/held"),
            or_dash(output::s(c, "nextTransition")),
            first
                .map(|g| format!("{}: {}", output::s(g, "gate"), output::s(g, "reason")))
                .unwrap_or_else(|| "no gates".into()),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No clusters.\n".into()
    } else {
        t.render()
    });
    out
}

/// "—" for a time that is absent: the state does not change within the look-ahead.
fn or_dash(s: String) -> String {
    if s.is_empty() { "—".into() } else { s }
}

fn render_cluster(v: &Value, gate: Option<&str>) -> String {
    let c = &v["cluster"];
    let open = v.get("open").and_then(|o| o.as_bool()).unwrap_or(true);
    let mut out = format!(
        "cluster {}   spoke: {} {}   last seen: {}   labels: {}\n\
         may change now: {}   next change: {}\n\n",
        output::s(c, "name"),
        spoke(c),
        output::s(c, "spokeVersion"),
        match output::s(c, "lastSeenAt") {
            s if s.is_empty() => "never".to_string(),
            s => s,
        },
        output::labels(c.get("labels")),
        if open {
            "yes".to_string()
        } else {
            format!("no (closed by {})", strs(v.get("closedBy")))
        },
        or_dash(output::s(v, "nextTransition")),
    );
    let mut t = Table::new(&["GATE", "STATE", "HELD", "NEXT", "REASON"]);
    for g in gates_of(v)
        .iter()
        .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
    {
        t.row(vec![
            output::s(g, "gate"),
            output::s(g, "state"),
            output::s(g, "held"),
            output::s(g, "nextTransition"),
            output::s(g, "reason"),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No gates apply to this cluster.\n".into()
    } else {
        t.render()
    });
    let objects: Vec<&Value> = v
        .get("objects")
        .and_then(|o| o.as_array())
        .into_iter()
        .flatten()
        .filter(|o| gate.is_none_or(|g| strs(o.get("gates")).split(',').any(|x| x == g)))
        .collect();
    if !objects.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "KIND",
            "NAMESPACE",
            "NAME",
            "READY",
            "SUSPENDED",
            "BY",
            "HELD",
            "APPLIED",
            "NEWEST",
        ]);
        let mut not_ready = Vec::new();
        for o in objects {
            if let Some(line) = not_ready_line(o) {
                not_ready.push(line);
            }
            let suspended = match (o.get("suspended"), o.get("suspendedByHuman")) {
                // fleetgate.io/ignore: "true": the gates target it, fleetgate leaves it be.
                _ if o.get("ignored") == Some(&Value::Bool(true)) => "ignored".to_string(),
                (_, Some(Value::Bool(true))) => "by hand".to_string(),
                (Some(Value::Bool(true)), _) => "yes".to_string(),
                _ => "no".to_string(),
            };
            t.row(vec![
                output::s(o, "kind"),
                output::s(o, "namespace"),
                output::s(o, "name"),
                ready(o),
                suspended,
                strs(o.get("suspendedBy")),
                output::s(o, "held"),
                output::s(o, "lastAppliedRevision"),
                output::s(o, "newestSourceRevision"),
            ]);
        }
        out.push_str(&t.render());
        if !not_ready.is_empty() {
            out.push_str("\nnot ready:\n");
            for line in not_ready {
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// Flux's Ready condition in one cell: `True`, `False (Reason)`, `Unknown`, `-` while none
/// was reported; `, stalled` when Flux stopped retrying.
fn ready(o: &Value) -> String {
    let status = output::s(o, "ready");
    let reason = output::s(o, "readyReason");
    let mut cell = match status.as_str() {
        "" => "-".to_string(),
        "True" => status,
        _ if reason.is_empty() => status,
        _ => format!("{status} ({reason})"),
    };
    if o.get("stalled") == Some(&Value::Bool(true)) {
        cell.push_str(", stalled");
    }
    cell
}

/// `  Kustomization apps/web: health check failed …` for an object whose Ready is not True
/// and which has a message (messages are too long for the table).
fn not_ready_line(o: &Value) -> Option<String> {
    let status = output::s(o, "ready");
    let message = output::s(o, "readyMessage");
    if status.is_empty() || status == "True" || message.is_empty() {
        return None;
    }
    Some(format!(
        "  {} {}/{}: {message}",
        output::s(o, "kind"),
        output::s(o, "namespace"),
        output::s(o, "name")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn cluster_view_shows_ready_and_the_failure_message() {
        let v = json!({
            "cluster": {"name": "edge-1", "connected": true, "labels": {}},
            "open": true, "gates": [],
            "objects": [
                {"kind": "Kustomization", "namespace": "apps", "name": "api", "gates": ["g"],
                 "ready": "True", "readyReason": "ReconciliationSucceeded",
                 "readyMessage": "Applied revision: main@sha1:aaa", "held": false},
                {"kind": "Kustomization", "namespace": "apps", "name": "web", "gates": ["g"],
                 "ready": "False", "readyReason": "HealthCheckFailed", "stalled": true,
                 "readyMessage": "health check failed after 5m: Deployment/apps/web not ready",
                 "held": false},
                {"kind": "HelmRelease", "namespace": "apps", "name": "old", "gates": ["g"],
                 "held": false}
            ]
        });
        let out = render_cluster(&v, None);
        assert!(out.contains("READY"), "{out}");
        assert!(out.contains("False (HealthCheckFailed), stalled"), "{out}");
        assert!(
            out.contains(
                "not ready:\n  Kustomization apps/web: health check failed after 5m: Deployment/apps/web not ready"
            ),
            "{out}"
        );
        assert!(
            !out.contains("Applied revision"),
            "a Ready message is not repeated: {out}"
        );
        let old = out.lines().find(|l| l.contains(" old ")).unwrap();
        assert!(old.contains(" - "), "no Ready reported: {old}");
    }
}
