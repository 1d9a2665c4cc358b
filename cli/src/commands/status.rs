//! `status`: the fleet at a glance (one row per cluster × gate, like
//! `flux get`), or one cluster in detail with its governed objects.

use serde_json::Value;

use crate::args::{Format, StatusArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, args: &StatusArgs, format: Format) -> Result<()> {
    match &args.cluster {
        Some(name) => {
            let v = client
                .get(&format!("/status/clusters/{}", seg(name)), &[])
                .await?;
            output::print(format, &v, |v| render_cluster(v, args.gate.as_deref()))
        }
        None => {
            let mut v = client.get("/status", &[]).await?;
            if let Some(sel) = &args.selector {
                let sel = fleetgate_policy::LabelSelector::parse(sel)
                    .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
                if let Some(Value::Array(cs)) = v.get_mut("clusters") {
                    cs.retain(|c| sel.matches(&super::cluster::labels_of(c)));
                }
            }
            output::print(format, &v, |v| render_fleet(v, args.gate.as_deref()))
        }
    }
}

fn gates_of(c: &Value) -> Vec<Value> {
    c.get("gates")
        .and_then(|g| g.as_array())
        .cloned()
        .unwrap_or_default()
}

fn state_cell(g: &Value) -> String {
    let state = output::s(g, "state");
    let held = g.get("held").and_then(|h| h.as_u64()).unwrap_or(0);
    if held > 0 {
        format!("{state} ({held} held)")
    } else {
        state
    }
}

fn render_fleet(v: &Value, gate: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(summary) = v.get("summary").filter(|s| s.is_object()) {
        let parts: Vec<String> = summary
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        out.push_str(&parts.join("  "));
        out.push('\n');
    }
    let mut t = Table::new(&["CLUSTER", "SPOKE", "GATE", "STATE", "NEXT", "REASON"]);
    for c in v
        .get("clusters")
        .and_then(|c| c.as_array())
        .into_iter()
        .flatten()
    {
        let spoke = match c.get("connected") {
            Some(Value::Bool(true)) => "connected",
            Some(Value::Bool(false)) => "disconnected",
            _ => "?",
        };
        let gates = gates_of(c);
        if gates.is_empty() && gate.is_none() {
            t.row(vec![
                output::s(c, "name"),
                spoke.into(),
                "-".into(),
                "open".into(),
                String::new(),
                "no gates".into(),
            ]);
        }
        for g in gates
            .iter()
            .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
        {
            t.row(vec![
                output::s(c, "name"),
                spoke.into(),
                output::s(g, "gate"),
                state_cell(g),
                output::s(g, "nextTransition"),
                output::s(g, "reason"),
            ]);
        }
    }
    if t.is_empty() {
        out.push_str("No clusters.\n");
    } else {
        out.push_str(&t.render());
    }
    out
}

fn render_cluster(v: &Value, gate: Option<&str>) -> String {
    let mut out = format!(
        "cluster {}  spoke: {}\n\n",
        output::s(v, "name"),
        match v.get("connected") {
            Some(Value::Bool(true)) => "connected",
            Some(Value::Bool(false)) => "disconnected",
            _ => "?",
        }
    );
    let mut t = Table::new(&["GATE", "STATE", "NEXT", "REASON"]);
    for g in gates_of(v)
        .iter()
        .filter(|g| gate.is_none_or(|n| output::s(g, "gate") == n))
    {
        t.row(vec![
            output::s(g, "gate"),
            state_cell(g),
            output::s(g, "nextTransition"),
            output::s(g, "reason"),
        ]);
    }
    out.push_str(&if t.is_empty() {
        "No gates.\n".into()
    } else {
        t.render()
    });
    let objects = v
        .get("objects")
        .and_then(|o| o.as_array())
        .cloned()
        .unwrap_or_default();
    if !objects.is_empty() {
        out.push('\n');
        let mut t = Table::new(&[
            "KIND",
            "NAMESPACE",
            "NAME",
            "SUSPENDED",
            "BY",
            "APPLIED",
            "NEWEST",
            "HELD",
        ]);
        for o in &objects {
            let by = o
                .get("suspendedBy")
                .and_then(|b| b.as_array())
                .map(|b| {
                    b.iter()
                        .filter_map(|x| x.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                })
                .unwrap_or_default();
            t.row(vec![
                output::s(o, "kind"),
                output::s(o, "namespace"),
                output::s(o, "name"),
                output::s(o, "suspended"),
                by,
                output::s(o, "lastAppliedRevision"),
                output::s(o, "newestSourceRevision"),
                output::s(o, "held"),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}
