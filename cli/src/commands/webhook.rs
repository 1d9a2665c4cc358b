//! `webhook create|list|get|delete|test|rotate-secret|deliveries|redeliver|enable|disable`:
//! notification subscriptions (admin). The signing secret is printed once.

use fleetgate_api_types::OverrideClusters;
use fleetgate_api_types::webhooks::{
    RotateWebhookSecret, Webhook, WebhookDelivery, WebhookFormat, WebhookSpec, WebhookTestResult,
    WebhookWithSecret,
};
use fleetgate_policy::LabelSelector;

use crate::args::{Format, WebhookCmd};
use crate::client::{Client, seg};
use crate::error::{Error, Result};
use crate::output::{self, Table};

pub async fn run(client: &Client, cmd: &WebhookCmd, format: Format) -> Result<()> {
    match cmd {
        WebhookCmd::Create {
            name,
            url,
            events,
            gates,
            clusters,
            selector,
            format: fmt,
            per_cluster,
            disabled,
            description,
        } => {
            let selector = selector
                .as_deref()
                .map(|s| {
                    LabelSelector::parse(s).map_err(|e| Error::Usage(format!("--selector: {e}")))
                })
                .transpose()?;
            let clusters = (!clusters.is_empty() || selector.is_some()).then(|| OverrideClusters {
                names: clusters.clone(),
                selector,
            });
            let body = WebhookSpec {
                name: name.clone(),
                url: url.clone(),
                events: events.clone(),
                gates: gates.clone(),
                clusters,
                format: WebhookFormat::parse(fmt).unwrap_or_default(),
                per_cluster: *per_cluster,
                enabled: !disabled,
                description: description.clone(),
            };
            let v: WebhookWithSecret = client.post("/webhooks", &[], &body).await?;
            output::print_answer(format, &v, |v| {
                format!(
                    "webhook/{name} created\nsigning secret (shown once):\n{}\n",
                    v.secret
                )
            })
        }
        WebhookCmd::List => {
            let items: Vec<Webhook> = client.get("/webhooks", &[]).await?;
            output::print_answer(format, &items, |items| render(items))
        }
        WebhookCmd::Get { name } => {
            let v: Webhook = client.get(&format!("/webhooks/{}", seg(name)), &[]).await?;
            output::print_answer(format, &v, |v| render(std::slice::from_ref(v)))
        }
        WebhookCmd::Delete { name } => {
            let v: Webhook = client
                .delete(&format!("/webhooks/{}", seg(name)), &[])
                .await?;
            output::print_answer(format, &v, |_| format!("webhook/{name} deleted\n"))
        }
        WebhookCmd::Test { name } => {
            let v: WebhookTestResult = client
                .post(
                    &format!("/webhooks/{}/test", seg(name)),
                    &[],
                    &serde_json::json!({}),
                )
                .await?;
            output::print_answer(format, &v, |v| {
                format!(
                    "{} {} in {} ms{}{}\n",
                    if v.ok { "delivered:" } else { "failed:" },
                    v.status
                        .map_or_else(|| "no response".to_string(), |s| format!("HTTP {s}")),
                    v.latency_ms,
                    v.error
                        .as_deref()
                        .map(|e| format!(" ({e})"))
                        .unwrap_or_default(),
                    v.response_excerpt
                        .as_deref()
                        .map(|b| format!("\n{b}"))
                        .unwrap_or_default(),
                )
            })?;
            if !v.ok {
                return Err(Error::NotDelivered(name.clone()));
            }
            Ok(())
        }
        WebhookCmd::RotateSecret { name, overlap } => {
            let body = RotateWebhookSecret {
                overlap: overlap.clone(),
            };
            let v: WebhookWithSecret = client
                .post(
                    &format!("/webhooks/{}/rotate-secret", seg(name)),
                    &[],
                    &body,
                )
                .await?;
            output::print_answer(format, &v, |v| {
                format!(
                    "webhook/{name}: new signing secret (shown once; the old one signs too until {}):\n{}\n",
                    v.webhook
                        .previous_secret_expires_at
                        .as_ref()
                        .map(output::time)
                        .unwrap_or_default(),
                    v.secret
                )
            })
        }
        WebhookCmd::Deliveries {
            name, id: Some(id), ..
        } => {
            let v: WebhookDelivery = client
                .get(&format!("/webhooks/{}/deliveries/{id}", seg(name)), &[])
                .await?;
            output::print_answer(format, &v, render_attempts)
        }
        WebhookCmd::Deliveries {
            name,
            id: None,
            limit,
        } => {
            let v: Vec<WebhookDelivery> = client
                .get(
                    &format!("/webhooks/{}/deliveries", seg(name)),
                    &[("limit", limit.to_string())],
                )
                .await?;
            output::print_answer(format, &v, |v| render_deliveries(v))
        }
        WebhookCmd::Redeliver { name, id } => {
            let v: WebhookDelivery = client
                .post(
                    &format!("/webhooks/{}/deliveries/{id}/redeliver", seg(name)),
                    &[],
                    &serde_json::json!({}),
                )
                .await?;
            output::print_answer(format, &v, |v| {
                format!("delivery {id} queued again ({})\n", v.message_id)
            })
        }
        WebhookCmd::Enable { name } => set_enabled(client, name, true, format).await,
        WebhookCmd::Disable { name } => set_enabled(client, name, false, format).await,
    }
}

/// `webhook enable|disable`: only the enabled flag changes (not a replace,
/// which would give the subscription this admin's scope).
async fn set_enabled(client: &Client, name: &str, enabled: bool, format: Format) -> Result<()> {
    let verb = if enabled { "enable" } else { "disable" };
    let v: Webhook = client
        .post(
            &format!("/webhooks/{}/{verb}", seg(name)),
            &[],
            &serde_json::json!({}),
        )
        .await?;
    output::print_answer(format, &v, |_| format!("webhook/{name} {verb}d\n"))
}

fn render(items: &[Webhook]) -> String {
    if items.is_empty() {
        return "No webhooks.\n".into();
    }
    let mut t = Table::new(&[
        "NAME",
        "FORMAT",
        "ENABLED",
        "EVENTS",
        "URL",
        "FAILING SINCE",
    ]);
    for w in items {
        let events = if w.spec.events.is_empty() {
            "*".to_string()
        } else {
            w.spec.events.join(",")
        };
        t.row(vec![
            w.spec.name.clone(),
            w.spec.format.as_str().to_string(),
            match (&w.spec.enabled, &w.disabled_reason) {
                (true, _) => "yes".into(),
                (false, Some(r)) => format!("no ({r})"),
                (false, None) => "no".into(),
            },
            events,
            w.spec.url.clone(),
            output::time_or_empty(w.failing_since.as_ref()),
        ]);
    }
    t.render()
}

fn render_deliveries(items: &[WebhookDelivery]) -> String {
    if items.is_empty() {
        return "No deliveries.\n".into();
    }
    let mut t = Table::new(&[
        "ID", "EVENT", "SUBJECT", "STATE", "ATTEMPTS", "LAST", "CREATED",
    ]);
    for d in items {
        t.row(vec![
            d.id.to_string(),
            d.event_type.clone(),
            d.subject.clone(),
            d.state.clone(),
            d.attempts.to_string(),
            d.last_status
                .map(|s| s.to_string())
                .or_else(|| d.last_error.clone())
                .unwrap_or_default(),
            output::time(&d.created_at),
        ]);
    }
    t.render()
}

fn render_attempts(d: &WebhookDelivery) -> String {
    let mut out = format!(
        "delivery {} ({}), {} {}, webhook-id {}\n",
        d.id, d.event_type, d.subject, d.state, d.message_id
    );
    let mut t = Table::new(&["#", "AT", "REPLICA", "STATUS", "MS", "ERROR", "RESPONSE"]);
    for a in &d.attempt_log {
        t.row(vec![
            a.attempt.to_string(),
            output::time(&a.at),
            a.replica.clone(),
            a.status.map(|s| s.to_string()).unwrap_or_default(),
            a.latency_ms.to_string(),
            a.error.clone().unwrap_or_default(),
            a.response_excerpt
                .as_deref()
                .map(|r| r.chars().take(60).collect())
                .unwrap_or_default(),
        ]);
    }
    out.push_str(&t.render());
    out
}
