//! What a delivery puts on the wire, per subscription format: the body,
//! its content type and the Standard Webhooks headers (every format is
//! signed, so any receiver may verify). Pure: the worker hands in the event
//! and the subscription's secrets.

use chrono::{DateTime, Utc};
use fleetgate_api_types::webhooks::WebhookFormat;
use serde_json::{Value, json};

/// An outbox event as a delivery renders it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EventRow {
    pub id: i64,
    #[sqlx(rename = "type")]
    pub event_type: String,
    pub subject: String,
    pub seq: i64,
    pub occurred_at: DateTime<Utc>,
    pub gate: Option<String>,
    pub clusters: Vec<String>,
    pub data: Value,
}

/// A rendered message.
#[derive(Debug, Clone)]
pub struct Message {
    pub content_type: &'static str,
    pub body: String,
    /// `(name, value)` headers beside the content type.
    pub headers: Vec<(&'static str, String)>,
}

/// Where links and the CloudEvents `source` point.
#[derive(Debug, Clone, Default)]
pub struct Site {
    /// The dashboard's public base URL (`--public-url`), if configured.
    pub public_url: Option<String>,
}

impl Site {
    fn source(&self) -> String {
        self.public_url
            .clone()
            .unwrap_or_else(|| "urn:fleetgate:hub".to_string())
    }

    fn link(&self, ev: &EventRow) -> Option<String> {
        let base = self.public_url.as_deref()?.trim_end_matches('/');
        Some(match &ev.gate {
            Some(g) => format!("{base}/#/gates/{g}"),
            None => match ev.subject.strip_prefix("cluster/") {
                Some(c) => format!("{base}/#/clusters/{c}"),
                None => format!("{base}/"),
            },
        })
    }
}

/// The event's `data` as this delivery sends it: `clusters` narrowed to
/// what the subscription's filter kept (or the one cluster of a
/// per-cluster delivery).
pub fn data_for(ev: &EventRow, kept: Option<&[String]>) -> Value {
    let mut data = ev.data.clone();
    if let (Some(kept), Some(obj)) = (kept, data.as_object_mut())
        && obj.contains_key("clusters")
    {
        obj.insert("clusters".into(), json!(kept));
    }
    data
}

/// Renders `ev` for `format`, signed with `secrets` (the current one first;
/// during a rotation's overlap also the previous one) at `timestamp`.
pub fn render(
    format: WebhookFormat,
    site: &Site,
    message_id: &str,
    ev: &EventRow,
    kept: Option<&[String]>,
    secrets: &[&str],
    timestamp: DateTime<Utc>,
) -> Message {
    let data = data_for(ev, kept);
    let (content_type, body) = match format {
        WebhookFormat::Standard => (
            "application/json",
            json!({
                "type": ev.event_type,
                "timestamp": ev.occurred_at,
                "id": message_id,
                "subject": ev.subject,
                "sequence": ev.seq,
                "data": data,
            }),
        ),
        WebhookFormat::Cloudevents => (
            "application/cloudevents+json",
            json!({
                "specversion": "1.0",
                "id": message_id,
                "source": site.source(),
                "type": format!("io.fleetgate.{}", ev.event_type),
                "subject": ev.subject,
                "time": ev.occurred_at,
                "datacontenttype": "application/json",
                // The CloudEvents sequence extension: a string, ordered per source.
                "sequence": ev.seq.to_string(),
                "data": data,
            }),
        ),
        WebhookFormat::Slack => {
            let text = summary(&ev.event_type, &data);
            let mut blocks =
                vec![json!({"type": "section", "text": {"type": "mrkdwn", "text": text}})];
            if let Some(link) = site.link(ev) {
                blocks.push(json!({"type": "context", "elements": [
                    {"type": "mrkdwn", "text": format!("<{link}|Open in fleetgate>")}
                ]}));
            }
            ("application/json", json!({"text": text, "blocks": blocks}))
        }
        WebhookFormat::Teams => {
            let text = summary(&ev.event_type, &data);
            let mut card = json!({
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": [
                    {"type": "TextBlock", "text": format!("fleetgate: {}", ev.event_type), "weight": "Bolder", "wrap": true},
                    {"type": "TextBlock", "text": text.replace('*', "**"), "wrap": true},
                ],
            });
            if let Some(link) = site.link(ev) {
                card["actions"] =
                    json!([{"type": "Action.OpenUrl", "title": "Open in fleetgate", "url": link}]);
            }
            (
                "application/json",
                json!({"type": "message", "attachments": [{
                    "contentType": "application/vnd.microsoft.card.adaptive",
                    "content": card,
                }]}),
            )
        }
    };
    let body = body.to_string();
    let ts = timestamp.timestamp();
    let signature = secrets
        .iter()
        .filter_map(|s| standardwebhooks::Webhook::new(s).ok())
        .filter_map(|w| w.sign(message_id, ts, body.as_bytes()).ok())
        .collect::<Vec<_>>()
        .join(" ");
    Message {
        content_type,
        headers: vec![
            ("webhook-id", message_id.to_string()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", signature),
        ],
        body,
    }
}

fn count(data: &Value) -> String {
    let n = data["clusters"].as_array().map_or(0, Vec::len);
    if n == 1 {
        format!("cluster {}", data["clusters"][0].as_str().unwrap_or("?"))
    } else {
        format!("{n} clusters")
    }
}

fn s<'a>(data: &'a Value, key: &str) -> &'a str {
    data[key].as_str().unwrap_or("")
}

/// One line a person reads (Slack mrkdwn; Teams gets `**` for bold).
pub fn summary(event_type: &str, data: &Value) -> String {
    let when = |key: &str| {
        data[key]
            .as_str()
            .map(|t| format!(" Next change: {t}."))
            .unwrap_or_default()
    };
    match event_type {
        "gate.opened" | "gate.closed" => format!(
            "Gate *{}* {} on {} ({}; cause: {}).{}",
            s(data, "gate"),
            if event_type == "gate.opened" {
                "opened"
            } else {
                "closed"
            },
            count(data),
            s(data, "reason"),
            s(data, "cause"),
            when("nextTransition"),
        ),
        "gate.upcoming" => format!(
            "Gate *{}* {} {} at {} (in {}): {}.",
            s(data, "gate"),
            if s(data, "state") == "open" {
                "opens"
            } else {
                "closes"
            },
            count(data),
            s(data, "at"),
            s(data, "lead"),
            s(data, "reason"),
        ),
        "override.created" => format!(
            "Override: gate *{}* {} on {} by {} ({}).",
            data["override"]["gate"].as_str().unwrap_or(""),
            if data["override"]["state"] == "open" {
                "opened"
            } else {
                "closed"
            },
            count(data),
            data["override"]["actor"].as_str().unwrap_or(""),
            data["override"]["reason"].as_str().unwrap_or(""),
        ),
        "override.ended" => format!(
            "Override on gate *{}* {} ({}).",
            data["override"]["gate"].as_str().unwrap_or(""),
            s(data, "how"),
            data["override"]["reason"].as_str().unwrap_or(""),
        ),
        "webhook.test" => {
            "fleetgate test message: this endpoint receives fleetgate notifications.".into()
        }
        other => format!("fleetgate {other}: {data}"),
    }
}
