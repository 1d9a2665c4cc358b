//! Approval requests: an override through a gate with `spec.approval` waits
//! here until enough other people approve it (docs/approvals.md).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::OverrideRecord;

/// An override request waiting for (or decided by) approvers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRequest {
    pub id: Uuid,
    pub gate: String,
    /// The requested override state: `open` or `closed`.
    pub state: String,
    /// Which clusters; absent = the gate's whole scope.
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<crate::schema::gate::ClusterScopeDoc>))]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<fleetgate_policy::ClusterScope>,
    /// The requested override's duration (absent: until cancelled).
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// The requested start (absent: when approved).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<DateTime<Utc>>,
    pub reason: String,
    /// The change ticket the requester gave.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// Who asked (token name, or a person's email/name/subject).
    pub requester: String,
    /// How many approvals it needs.
    pub required: u32,
    /// `pending`, `approved`, `rejected`, `expired` or `cancelled`.
    pub status: String,
    pub created_at: DateTime<Utc>,
    /// When a pending request expires.
    pub expires_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_at: Option<DateTime<Utc>>,
    /// Who approved it last, rejected or cancelled it (`system` for expiry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision_reason: Option<String>,
    /// The override the final approval created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub override_id: Option<Uuid>,
    /// The approvals given so far, oldest first.
    #[serde(default)]
    pub approvals: Vec<ApprovalEntry>,
    /// What the caller may do with it (pending requests in lists and gets).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub you_may: Option<ApprovalRights>,
}

/// What the caller may do with a pending request: approve or reject it (an
/// approver other than the requester), withdraw it (the requester, an admin).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRights {
    pub approve: bool,
    pub reject: bool,
    pub cancel: bool,
}

impl ApprovalRequest {
    /// Whether it still waits for approvers.
    pub fn is_pending(&self) -> bool {
        self.status == "pending"
    }
}

/// One approval of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApprovalEntry {
    pub approver: String,
    pub at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// Body of approve and reject (`POST /api/v1/approvals/{id}/approve|reject`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApprovalDecision {
    /// Why (required to reject, optional to approve).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What opening or closing a gate did: an override at once, or a request
/// waiting for approval (gates with `spec.approval`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(untagged)]
pub enum OverrideOutcome {
    /// 202: waiting for approvers (tried first: it has fields an override lacks).
    Pending(Box<ApprovalRequest>),
    /// 201: the override exists.
    Created(Box<OverrideRecord>),
}
