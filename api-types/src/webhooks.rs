//! Webhook subscriptions (`/api/v1/webhooks`), their deliveries and
//! attempts, and the events they carry.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::records::OverrideClusters;

/// How a subscription's messages are shaped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
pub enum WebhookFormat {
    /// Standard Webhooks: JSON body, `webhook-id`/`-timestamp`/`-signature` headers.
    #[default]
    Standard,
    /// CloudEvents 1.0, structured mode (`application/cloudevents+json`), signed
    /// like Standard Webhooks.
    Cloudevents,
    /// A Slack incoming-webhook message (`text` + blocks).
    Slack,
    /// A Microsoft Teams message (Adaptive Card via a workflow/incoming webhook).
    Teams,
}

impl WebhookFormat {
    /// The name stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Cloudevents => "cloudevents",
            Self::Slack => "slack",
            Self::Teams => "teams",
        }
    }

    /// Parses a stored or typed name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "standard" => Self::Standard,
            "cloudevents" => Self::Cloudevents,
            "slack" => Self::Slack,
            "teams" => Self::Teams,
            _ => return None,
        })
    }
}

/// Create or replace a subscription.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WebhookSpec {
    /// Unique name (DNS label).
    pub name: String,
    /// Where to POST (https unless the hub allows plain http).
    pub url: String,
    /// Event types (`gate.closed`, `override.created`, ...; `gate.*` for a
    /// family); empty = every type.
    #[serde(default)]
    pub events: Vec<String>,
    /// Gate names; empty = every gate.
    #[serde(default)]
    pub gates: Vec<String>,
    /// Which clusters (names and/or a label selector); absent = every cluster.
    #[serde(default)]
    pub clusters: Option<OverrideClusters>,
    #[serde(default)]
    pub format: WebhookFormat,
    /// One message per cluster instead of one per (gate, instant, state).
    #[serde(default)]
    pub per_cluster: bool,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub description: String,
}

fn yes() -> bool {
    true
}

/// A subscription (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub id: Uuid,
    pub spec: WebhookSpec,
    pub created_at: DateTime<Utc>,
    pub created_by: String,
    pub updated_at: DateTime<Utc>,
    /// Why the hub disabled it (410 Gone, failing for days).
    pub disabled_reason: Option<String>,
    /// Start of the current run of failed deliveries.
    pub failing_since: Option<DateTime<Utc>>,
    /// While a rotated-out secret still signs (both signatures are sent).
    pub previous_secret_expires_at: Option<DateTime<Utc>>,
}

/// A new subscription, or a rotated secret, with the signing secret
/// (`whsec_...`), shown only now.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookWithSecret {
    pub webhook: Webhook,
    pub secret: String,
}

/// Rotate a subscription's signing secret.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateWebhookSecret {
    /// How long the old secret keeps signing beside the new one, Go-style
    /// (default `24h`, at most `720h`).
    #[serde(default)]
    pub overlap: Option<String>,
}

/// One event for one subscription (and cluster, for per-cluster ones).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    pub id: i64,
    pub event_id: i64,
    pub event_type: String,
    pub subject: String,
    /// The `webhook-id` header: the same on every attempt and redelivery.
    pub message_id: String,
    /// `pending`, `delivered` or `failed` (gave up).
    pub state: String,
    pub attempts: i32,
    pub next_attempt_at: DateTime<Utc>,
    pub last_status: Option<i32>,
    pub last_error: Option<String>,
    pub delivered_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    /// Every attempt, oldest first (in `GET .../deliveries/{id}` only).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attempt_log: Vec<WebhookAttempt>,
}

/// One HTTP attempt of a delivery.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookAttempt {
    pub attempt: i32,
    pub at: DateTime<Utc>,
    /// The hub replica that made it.
    pub replica: String,
    /// HTTP status, absent when no response came.
    pub status: Option<i32>,
    pub latency_ms: i32,
    pub error: Option<String>,
    /// The first bytes of the response body.
    pub response_excerpt: Option<String>,
}

/// `POST /api/v1/webhooks/{name}/test`: what the test message got.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookTestResult {
    pub message_id: String,
    pub ok: bool,
    pub status: Option<i32>,
    pub latency_ms: i32,
    pub error: Option<String>,
    pub response_excerpt: Option<String>,
}
