//! `gate open|close|cancel|overrides`: manual overrides (the RFC's "open for
//! 1 h", close ahead of schedule, break-glass). The duration and selector
//! are checked locally first, so typos fail before reaching the hub.

use fleetgate_api_types::{OverrideClusters, OverrideOutcome, OverrideRecord, OverrideRequest};
use fleetgate_policy::{ClusterScope, LabelSelector, SelectorOperator};
use serde::de::IgnoredAny;
use serde_json::json;

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
    let clusters = if !args.clusters.is_empty() || args.selector.is_some() {
        let selector = match &args.selector {
            Some(sel) => Some(
                LabelSelector::parse(sel).map_err(|e| Error::Usage(format!("--selector: {e}")))?,
            ),
            None => None,
        };
        Some(OverrideClusters {
            names: args.clusters.clone(),
            selector,
        })
    } else {
        None
    };
    let body = OverrideRequest {
        duration: args.duration.clone(),
        reason: args.reason.clone(),
        clusters,
        starts_at: None,
        ticket: args.ticket.clone(),
        emergency: args.emergency,
    };
    let verb = if open { "open" } else { "close" };
    let resp: OverrideOutcome = client
        .post(&format!("/gates/{}/{verb}", seg(&args.name)), &[], &body)
        .await?;
    let o = match resp {
        OverrideOutcome::Pending(p) => {
            return output::print_answer(format, &p, |p| {
                format!(
                    "gate/{} {verb} pending #{} (needs {} approval{} by {}): fleetgate override approve {}\n",
                    args.name,
                    p.id,
                    p.required,
                    if p.required == 1 { "" } else { "s" },
                    output::time(&p.expires_at),
                    p.id
                )
            });
        }
        OverrideOutcome::Created(o) => o,
    };
    output::print_answer(format, &*o, |o| {
        let until = match o.expires_at {
            Some(u) => output::time(&u),
            None => "cancelled".to_string(),
        };
        let on = match &o.clusters {
            Some(c) => format!(" on {}", scope(Some(c))),
            None => String::new(),
        };
        format!(
            "gate/{} {}{on} until {until} (override {}){}\n",
            args.name,
            if open { "opened" } else { "closed" },
            o.id,
            if o.emergency {
                " EMERGENCY: approval skipped"
            } else {
                ""
            },
        )
    })
}

/// A label selector in kubectl `-l` syntax, for people.
pub(crate) fn selector_text(sel: &LabelSelector) -> String {
    let mut parts: Vec<String> = sel
        .match_labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    for e in &sel.match_expressions {
        let key = e.key.clone();
        let values = e.values.join(",");
        parts.push(match e.operator {
            SelectorOperator::In => format!("{key} in ({values})"),
            SelectorOperator::NotIn => format!("{key} notin ({values})"),
            SelectorOperator::Exists => key,
            SelectorOperator::DoesNotExist => format!("!{key}"),
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
    let items: Vec<OverrideRecord> = client.list("/overrides", &query(gate, all), None).await?;
    output::print_answer(format, &items, |items| render(items))
}

fn render(items: &[OverrideRecord]) -> String {
    if items.is_empty() {
        return "No overrides.\n".into();
    }
    let mut t = Table::new(&[
        "ID", "STATE", "CLUSTERS", "STARTS", "EXPIRES", "ACTOR", "REASON",
    ]);
    for o in items {
        let expires = match (&o.cancelled_at, &o.expires_at) {
            (Some(c), _) => format!("cancelled {}", output::time(c)),
            (None, Some(e)) => output::time(e),
            (None, None) => "when cancelled".into(),
        };
        t.row(vec![
            o.id.to_string(),
            o.state.clone(),
            scope(o.clusters.as_ref()),
            output::time(&o.starts_at),
            expires,
            o.actor.clone(),
            o.reason.clone(),
        ]);
    }
    t.render()
}

/// The override's cluster scope in a few words.
pub(crate) fn scope(v: Option<&ClusterScope>) -> String {
    let Some(v) = v else {
        return "<gate scope>".into();
    };
    let mut parts = Vec::new();
    if !v.names.is_empty() {
        parts.push(v.names.join(","));
    }
    if let Some(sel) = &v.selector {
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
            .list::<OverrideRecord>("/overrides", &query(gate, false), None)
            .await?
            .iter()
            .map(|o| o.id.to_string())
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
            .delete::<IgnoredAny>(
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
