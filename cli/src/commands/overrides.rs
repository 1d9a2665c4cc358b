//! `gate open|close|cancel|overrides`: manual overrides (the RFC's "open for
//! 1 h", close ahead of schedule, break-glass). The duration and selector
//! are checked locally first, so typos fail before reaching the hub.

use serde_json::{Value, json};

use crate::args::{Format, OverrideArgs};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn set(client: &Client, args: &OverrideArgs, open: bool, format: Format) -> Result<()> {
    if let Some(d) = &args.duration {
        fleetgate_policy::parse_duration(d)
            .map_err(|e| Error::Usage(format!("--for: {}", e.message)))?;
    }
    if args.reason.trim().is_empty() {
        return Err(Error::Usage("--reason must not be empty".into()));
    }
    let mut body = json!({"reason": args.reason});
    if let Some(d) = &args.duration {
        body["for"] = json!(d);
    }
    if !args.clusters.is_empty() || args.selector.is_some() {
        let mut clusters = json!({});
        if !args.clusters.is_empty() {
            clusters["names"] = json!(args.clusters);
        }
        if let Some(sel) = &args.selector {
            let parsed = fleetgate_policy::LabelSelector::parse(sel)
                .map_err(|e| Error::Usage(format!("--selector: {e}")))?;
            clusters["selector"] =
                serde_json::to_value(&parsed).map_err(|e| Error::Other(e.to_string()))?;
        }
        body["clusters"] = clusters;
    }
    let verb = if open { "open" } else { "close" };
    let resp = client
        .post(&format!("/gates/{}/{verb}", seg(&args.name)), &[], &body)
        .await?;
    output::print(format, &resp, |o| {
        let until = match output::s(o, "expiresAt") {
            u if u.is_empty() => "cancelled".to_string(),
            u => u,
        };
        let on = match o.get("clusters") {
            Some(c) if !c.is_null() => format!(" on {}", scope(Some(c))),
            _ => String::new(),
        };
        format!(
            "gate/{} {}{on} until {until} (override {})\n",
            args.name,
            if open { "opened" } else { "closed" },
            output::s(o, "id"),
        )
    })
}

/// A label selector in kubectl `-l` syntax, for people.
fn selector_text(sel: &Value) -> String {
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(|m| m.as_object())
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for e in sel
        .get("matchExpressions")
        .and_then(|m| m.as_array())
        .into_iter()
        .flatten()
    {
        let key = output::s(e, "key");
        let values = e
            .get("values")
            .and_then(|v| v.as_array())
            .map(|v| {
                v.iter()
                    .filter_map(|x| x.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default();
        parts.push(match output::s(e, "operator").as_str() {
            "In" => format!("{key} in ({values})"),
            "NotIn" => format!("{key} notin ({values})"),
            "Exists" => key,
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({values})"),
        });
    }
    if parts.is_empty() {
        "<all>".into()
    } else {
        parts.join(",")
    }
}

fn query(gate: &str, all: bool) -> Vec<(&'static str, String)> {
    let mut q = vec![("gate", gate.to_string())];
    if all {
        q.push(("all", "true".into()));
    }
    q
}

pub async fn list(client: &Client, gate: &str, all: bool, format: Format) -> Result<()> {
    let items = client.list("/overrides", &query(gate, all), None).await?;
    output::print(format, &items, |items| render(items))
}

fn render(items: &[Value]) -> String {
    if items.is_empty() {
        return "No overrides.\n".into();
    }
    let mut t = Table::new(&[
        "ID", "STATE", "CLUSTERS", "STARTS", "EXPIRES", "ACTOR", "REASON",
    ]);
    for o in items {
        let expires = match output::s(o, "cancelledAt") {
            c if !c.is_empty() => format!("cancelled {c}"),
            _ => match output::s(o, "expiresAt") {
                e if e.is_empty() => "when cancelled".into(),
                e => e,
            },
        };
        t.row(vec![
            output::s(o, "id"),
            output::s(o, "state"),
            scope(o.get("clusters")),
            output::s(o, "startsAt"),
            expires,
            output::s(o, "actor"),
            output::s(o, "reason"),
        ]);
    }
    t.render()
}

/// The override's cluster scope in a few words.
fn scope(v: Option<&Value>) -> String {
    let Some(v) = v.filter(|v| !v.is_null()) else {
        return "<gate scope>".into();
    };
    let mut parts = Vec::new();
    if let Some(names) = v.get("names").and_then(|n| n.as_array())
        && !names.is_empty()
    {
        parts.push(
            names
                .iter()
                .filter_map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if let Some(sel) = v.get("selector").filter(|s| !s.is_null()) {
        parts.push(format!("selector {}", selector_text(sel)));
    }
    if parts.is_empty() {
        "<gate scope>".into()
    } else {
        parts.join(" + ")
    }
}

pub async fn cancel(
    client: &Client,
    gate: &str,
    id: Option<&str>,
    all: bool,
    reason: &Option<String>,
    format: Format,
) -> Result<()> {
    let ids: Vec<String> = match (id, all) {
        (Some(id), _) => vec![id.to_string()],
        (None, true) => client
            .list("/overrides", &query(gate, false), None)
            .await?
            .iter()
            .map(|o| output::s(o, "id"))
            .filter(|i| !i.is_empty())
            .collect(),
        (None, false) => {
            return Err(Error::Usage(
                "gate cancel needs an override ID or --all".into(),
            ));
        }
    };
    let mut done = Vec::new();
    for id in &ids {
        client
            .delete(
                &format!("/overrides/{}", seg(id)),
                &crate::client::reason(reason),
            )
            .await?;
        done.push(json!({"gate": gate, "override": id, "action": "cancelled"}));
    }
    output::print(format, &done, |d| {
        if d.is_empty() {
            return format!("gate/{gate}: no active overrides\n");
        }
        d.iter()
            .map(|x| {
                format!(
                    "gate/{gate} override {} cancelled\n",
                    output::s(x, "override")
                )
            })
            .collect()
    })
}
