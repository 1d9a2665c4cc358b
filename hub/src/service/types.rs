//! The service's (and REST's) input and output types. Field names are
//! camelCase on the wire; manifests are carried as JSON objects.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

use crate::db::audit::AuditRow;
use crate::db::clusters::ClusterRow;
use crate::db::gates::GateRow;
use crate::db::overrides::OverrideRow;
use crate::db::tokens::TokenRow;

/// A stored gate.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateRecord {
    /// metadata.name of the manifest.
    pub name: String,
    /// Bumped on every replace; send it back in `If-Match` to replace safely.
    pub version: i64,
    /// The validated Gate manifest (apiVersion fleetgate.io/v1, kind Gate).
    #[schema(value_type = crate::schema::gate::GateManifest)]
    pub manifest: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Valid fields that probably do not mean what their author meant: today cron schedules
    /// whose days changed when fleetgate adopted Kubernetes CronJob's cron rules. Absent when
    /// there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<FieldWarning>,
}

/// A warning about one manifest field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct FieldWarning {
    /// `spec.windows[0].schedule`.
    pub path: String,
    pub message: String,
}

impl From<GateRow> for GateRecord {
    fn from(r: GateRow) -> Self {
        // Stored manifests were validated when written; one that no longer parses has no
        // warnings to give (reading it fails elsewhere with a clear error).
        let warnings = fleetgate_policy::parse_gate_json(r.manifest.clone())
            .map(|g| g.warnings())
            .unwrap_or_default()
            .into_iter()
            .map(|w| FieldWarning {
                path: w.path,
                message: w.message,
            })
            .collect();
        Self {
            name: r.name,
            version: r.version,
            manifest: r.manifest,
            created_at: r.created_at,
            updated_at: r.updated_at,
            warnings,
        }
    }
}

/// A registered cluster.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    /// Last message from its spoke.
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    /// Whether a spoke stream is open now.
    pub connected: bool,
    /// The hub replica holding the stream.
    pub connected_replica: Option<String>,
    /// Spoke clock minus hub clock, as last measured.
    pub clock_offset_ms: Option<i64>,
    /// Fleet revision of the last change to this cluster's desired state.
    pub desired_revision: i64,
}

impl From<ClusterRow> for Cluster {
    fn from(r: ClusterRow) -> Self {
        Self {
            name: r.name,
            labels: r.labels.0,
            created_at: r.created_at,
            last_seen_at: r.last_seen_at,
            spoke_version: r.spoke_version,
            connected: r.connected,
            connected_replica: r.connected_replica,
            clock_offset_ms: r.clock_offset_ms,
            desired_revision: r.desired_revision,
        }
    }
}

/// A cluster with its spoke token, returned once at registration / rotation.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterWithToken {
    pub cluster: Cluster,
    /// The spoke token (`fgs_...`). Shown only now; the hub stores its hash.
    pub token: String,
}

/// Register a cluster.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterCluster {
    /// DNS-1123 label (lowercase letters, digits, '-', at most 63).
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
}

/// Replace a cluster's labels.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Relabel {
    pub labels: BTreeMap<String, String>,
}

/// Which clusters an override applies to (within the gate's scope).
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideClusters {
    /// Cluster names (must be registered and in the gate's scope).
    #[serde(default)]
    pub names: Vec<String>,
    /// Kubernetes label selector (`matchLabels`, `matchExpressions`) over cluster labels.
    #[serde(default)]
    #[schema(value_type = Option<crate::schema::gate::LabelSelectorDoc>)]
    pub selector: Option<fleetgate_policy::LabelSelector>,
}

/// Open or close a gate manually.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideRequest {
    /// How long, Go-style (`90m`, `1h30m`); absent = until cancelled.
    #[serde(rename = "for", default)]
    pub duration: Option<String>,
    /// Why (required; recorded in the audit log and shown in status).
    #[serde(default)]
    pub reason: String,
    /// Which clusters; absent = the gate's whole scope.
    #[serde(default)]
    pub clusters: Option<OverrideClusters>,
    /// When it takes effect (default now).
    #[serde(default)]
    pub starts_at: Option<DateTime<Utc>>,
}

/// A stored override.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverrideRecord {
    pub id: Uuid,
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which clusters; absent = the gate's whole scope.
    #[schema(value_type = Option<crate::schema::gate::ClusterScopeDoc>)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clusters: Option<fleetgate_policy::ClusterScope>,
    pub starts_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub actor: String,
    pub reason: String,
    pub created_at: DateTime<Utc>,
    pub cancelled_at: Option<DateTime<Utc>>,
    pub cancelled_by: Option<String>,
    /// Set for a request made inside that cluster (an open/close annotation on
    /// its Gate object, reported by its spoke); absent for overrides made at the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_in: Option<String>,
    /// The Kubernetes user that made such a request (the field manager named in
    /// the Gate object's managedFields), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

impl From<OverrideRow> for OverrideRecord {
    fn from(r: OverrideRow) -> Self {
        Self {
            id: r.id,
            gate: r.gate,
            state: r.state,
            clusters: r.scope.map(|s| s.0),
            starts_at: r.starts_at,
            expires_at: r.expires_at,
            actor: r.actor,
            reason: r.reason,
            created_at: r.created_at,
            cancelled_at: r.cancelled_at,
            cancelled_by: r.cancelled_by,
            requested_in: r.requested_in,
            requested_by: r.requested_by,
        }
    }
}

/// One audit-log entry.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// Name of the API token that made the change.
    pub actor: String,
    /// e.g. `gate.create`, `override.open`, `cluster.rotate_token`.
    pub action: String,
    /// gate, override, cluster, api_token.
    pub target_kind: String,
    pub target_name: String,
    #[schema(value_type = Option<Object>)]
    pub before: Option<serde_json::Value>,
    #[schema(value_type = Option<Object>)]
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
}

impl From<AuditRow> for AuditEntry {
    fn from(r: AuditRow) -> Self {
        Self {
            id: r.id,
            at: r.at,
            actor: r.actor,
            action: r.action,
            target_kind: r.target_kind,
            target_name: r.target_name,
            before: r.before,
            after: r.after,
            reason: r.reason,
        }
    }
}

/// An API token (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiToken {
    pub id: Uuid,
    pub name: String,
    /// viewer, operator or admin.
    pub role: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<TokenRow> for ApiToken {
    fn from(r: TokenRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            role: r.role,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
        }
    }
}

/// A new API token with its secret, returned once.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiTokenWithSecret {
    pub token: ApiToken,
    /// The secret (`fga_...`). Shown only now; the hub stores its hash.
    pub secret: String,
}

/// Create an API token.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
    /// viewer, operator or admin.
    pub role: String,
}
