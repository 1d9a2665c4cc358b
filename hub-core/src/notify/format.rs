//! What a delivery puts on the wire, per subscription format: the body,
//! its content type and the Standard Webhooks headers (every format is
//! signed, so any receiver may verify). Pure: the worker hands in the event
//! and the subscription's secrets.

use chrono::{DateTime, Utc};
use fleetgate_api_types::webhooks::WebhookFormat;
use serde_json::{Value, json};

pub use crate::db::webhooks::EventRow;

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

    /// The dashboard page of what `ev` is about: an approval's queue, a
    /// gate's page (edges, overrides, rollouts, calendars), a cluster's page,
    /// the fleet (freezes, tests).
    fn link(&self, ev: &EventRow) -> Option<String> {
        let base = self.public_url.as_deref()?.trim_end_matches('/');
        let (kind, name) = ev.subject.split_once('/').unwrap_or((&ev.subject, ""));
        Some(match (kind, &ev.gate) {
            ("approval", _) => format!("{base}/#/approvals"),
            ("cluster", _) => format!("{base}/#/clusters/{name}"),
            (_, Some(g)) => format!("{base}/#/gates/{g}"),
            _ => format!("{base}/#/fleet"),
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
        WebhookFormat::Slack => (
            "application/json",
            slack(&ev.event_type, &data, site.link(ev)),
        ),
        WebhookFormat::Teams => (
            "application/json",
            teams(&ev.event_type, &data, site.link(ev)),
        ),
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

/// Slack's reserved characters in mrkdwn (`<!channel>` would ping everyone):
/// <https://api.slack.com/reference/surfaces/formatting#escaping>.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Teams renders Adaptive Card `TextBlock` text and `FactSet` values as
/// Markdown (bold, italic, lists, links): a `*` or `_` in a reason must not
/// turn the rest of the line bold or italic, nor `[x](y)` into a link, nor a
/// leading `- ` into a list. Each such character is escaped with a backslash
/// (<https://learn.microsoft.com/adaptive-cards/authoring-cards/text-features>).
fn teams_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for line in s.split_inclusive('\n') {
        let body = line.trim_start();
        out.push_str(&line[..line.len() - body.len()]);
        if body.starts_with("- ") || body.starts_with("+ ") {
            out.push('\\');
        }
        for ch in body.chars() {
            if matches!(ch, '\\' | '*' | '_' | '[' | ']' | '`' | '~') {
                out.push('\\');
            }
            out.push(ch);
        }
    }
    out
}

/// At most `max` characters (Slack's text limits are in characters).
fn cut(s: String, max: usize) -> String {
    if s.chars().count() <= max {
        return s;
    }
    let mut out: String = s.chars().take(max - 1).collect();
    out.push('…');
    out
}

/// A Slack incoming-webhook message
/// (<https://api.slack.com/messaging/webhooks>): `text` (the notification's
/// plain fallback) and Block Kit `blocks` — a `section` with the headline in
/// bold, a `section` of `fields` (at most 10, each at most 2,000 characters),
/// and a `context` with the link to the dashboard.
pub fn slack(event_type: &str, data: &Value, link: Option<String>) -> Value {
    let n = super::notice::notice(event_type, data);
    let mut blocks = vec![json!({"type": "section", "text": {
        "type": "mrkdwn",
        "text": cut(format!("*{}*", slack_escape(&n.headline)), 3000),
    }})];
    let fields: Vec<Value> = n
        .facts
        .iter()
        .take(10)
        .map(|(label, value)| {
            json!({"type": "mrkdwn", "text": cut(format!("*{label}*\n{}", slack_escape(value)), 2000)})
        })
        .collect();
    if !fields.is_empty() {
        blocks.push(json!({"type": "section", "fields": fields}));
    }
    if let Some(link) = link {
        blocks.push(json!({"type": "context", "elements": [
            {"type": "mrkdwn", "text": format!("<{}|Open in fleetgate>", slack_escape(&link))}
        ]}));
    }
    json!({"text": cut(slack_escape(&n.headline), 3000), "blocks": blocks})
}

/// A Microsoft Teams incoming-webhook message carrying an Adaptive Card
/// (<https://learn.microsoft.com/microsoftteams/platform/webhooks-and-connectors/how-to/connectors-using#send-adaptive-cards-using-an-incoming-webhook>):
/// `type: message`, one attachment of content type
/// `application/vnd.microsoft.card.adaptive` with `contentUrl: null`, the card
/// (version 1.4) with the headline, a `FactSet` and an `Action.OpenUrl` to
/// the dashboard.
pub fn teams(event_type: &str, data: &Value, link: Option<String>) -> Value {
    let n = super::notice::notice(event_type, data);
    let facts: Vec<Value> = n
        .facts
        .iter()
        .map(|(label, value)| json!({"title": label, "value": teams_escape(value)}))
        .collect();
    let mut body = vec![json!({
        "type": "TextBlock", "text": teams_escape(&n.headline), "weight": "Bolder", "size": "Medium", "wrap": true,
    })];
    if !facts.is_empty() {
        body.push(json!({"type": "FactSet", "facts": facts}));
    }
    let mut card = json!({
        "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
        "type": "AdaptiveCard",
        "version": "1.4",
        "body": body,
    });
    if let Some(link) = link {
        card["actions"] =
            json!([{"type": "Action.OpenUrl", "title": "Open in fleetgate", "url": link}]);
    }
    json!({"type": "message", "attachments": [{
        "contentType": "application/vnd.microsoft.card.adaptive",
        "contentUrl": null,
        "content": card,
    }]})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn teams_text_and_facts_are_not_markdown() {
        assert_eq!(teams_escape("a*b_c"), r"a\*b\_c");
        assert_eq!(
            teams_escape(r"[x](y) \ `z` ~w~"),
            r"\[x\](y) \\ \`z\` \~w\~"
        );
        assert_eq!(teams_escape("- one\n  + two"), "\\- one\n  \\+ two");
        assert_eq!(
            teams_escape("plain text, 2 clusters"),
            "plain text, 2 clusters"
        );
        let data = json!({
            "gate": "no_deploy", "state": "closed", "clusters": ["c_1"],
            "reason": "**incident** _P1_", "cause": "override",
            "at": "2026-11-27T22:00:00Z",
        });
        let msg = teams("gate.closed", &data, None);
        let card = &msg["attachments"][0]["content"];
        let headline = card["body"][0]["text"].as_str().unwrap();
        assert!(headline.contains(r"no\_deploy"), "{headline}");
        let facts = card["body"][1]["facts"].as_array().unwrap();
        let reason = facts.iter().find(|f| f["title"] == "Reason").unwrap();
        assert_eq!(reason["value"], r"\*\*incident\*\* \_P1\_");
        // Slack keeps its own escaping: `*` and `_` stay as they are there.
        let slack = slack("gate.closed", &data, None);
        assert!(slack["text"].as_str().unwrap().contains("no_deploy"));
    }
}
