//! Change-ticket admission webhooks: HTTP endpoints the hub asks, synchronously,
//! before it accepts an override (and, if they subscribe, an approval)
//! (docs/approvals.md#admission-webhooks).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// What an admission webhook is for and how to call it (`PUT /api/v1/admission-webhooks/{name}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdmissionWebhookSpec {
    /// `https://…` (plain http only where the hub allows it).
    pub url: String,
    /// What it is asked about: `override` (opening or closing a gate, default) and/or
    /// `approval` (each approval of a pending request).
    #[serde(default = "default_operations")]
    pub operations: Vec<String>,
    /// How long the hub waits for an answer (Go-style, default `5s`, at most `30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// What a timeout, a connection failure, a 5xx or a malformed answer means: `Fail`
    /// (deny, the default) or `Ignore` (allow), as in a Kubernetes
    /// ValidatingWebhookConfiguration.
    #[serde(default)]
    pub failure_policy: FailurePolicy,
    /// PEM CA certificates trusted for this webhook's HTTPS (beside the built-in roots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_bundle: Option<String>,
}

fn default_operations() -> Vec<String> {
    vec!["override".into()]
}

/// `Fail` or `Ignore`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub enum FailurePolicy {
    #[default]
    Fail,
    Ignore,
}

impl FailurePolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fail => "Fail",
            Self::Ignore => "Ignore",
        }
    }
}

/// A stored admission webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdmissionWebhook {
    pub name: String,
    #[serde(flatten)]
    pub spec: AdmissionWebhookSpec,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What the hub POSTs to an admission webhook.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdmissionRequest {
    /// A new UUID per call, for the receiver's logs.
    pub uid: String,
    /// `override` or `approval`.
    pub operation: String,
    pub gate: String,
    /// The clusters it would cover now.
    pub clusters: Vec<String>,
    /// `open` or `closed`.
    pub state: String,
    /// Go-style; absent: until cancelled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    pub reason: String,
    /// Who asked for the override.
    pub requester: String,
    /// Who approves (operation `approval`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approver: Option<String>,
    /// The change ticket the requester gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// Break-glass: an admin skipping approval.
    pub emergency: bool,
}

/// What an admission webhook may answer (any 2xx with an empty body allows too).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdmissionResponse {
    /// `false` denies even with a 2xx status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<bool>,
    /// Shown to the person denied (and recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One webhook call, as the audit entry records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AdmissionOutcome {
    pub webhook: String,
    /// `allowed`, `denied`, `failed` (denied by failurePolicy Fail) or `ignored` (a
    /// failure allowed by failurePolicy Ignore).
    pub outcome: String,
    /// The HTTP status; absent when none came.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// The webhook's message, or what failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub latency_ms: u64,
}
