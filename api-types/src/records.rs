//! Gates, clusters, overrides, audit entries and API tokens as the REST API
//! reads and writes them; manifests are carried as JSON objects.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub use crate::role::{Role, UnknownRole};

/// A stored gate.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateRecord {
    /// metadata.name of the manifest.
    pub name: String,
    /// Bumped on every replace; send it back in `If-Match` to replace safely.
    pub version: i64,
    /// The validated Gate manifest (apiVersion fleetgate.io/v1, kind Gate).
    #[cfg_attr(feature = "utoipa", schema(value_type = crate::schema::gate::GateManifest))]
    pub manifest: serde_json::Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Valid fields that probably do not mean what their author meant: today cron schedules
    /// whose days changed when fleetgate adopted Kubernetes CronJob's cron rules. Absent when
    /// there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<FieldWarning>,
    /// Each `calendar.url` window's feed as the hub last fetched it. Absent when the gate has
    /// no feed windows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<CalendarFeedStatus>,
}

/// A calendar feed (`calendar.url` window) as the hub last fetched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CalendarFeedStatus {
    /// The window's name.
    pub window: String,
    /// The feed's URL as the hub shows it: without user, password, query or fragment
    /// (`?…`: a query was cut); the gate's manifest keeps it as written.
    pub url: String,
    /// `notFetched` (no attempt yet: the window counts as never fetched), `ok`, `failing`
    /// (the last attempt failed; the last good copy is in use) or `stale` (no good copy for
    /// `maxStale`, or every attempt failed: the window applies `onStale`).
    #[serde(default)]
    pub state: CalendarFeedState,
    /// The last successful fetch (200 or 304); absent: never fetched.
    pub last_fetch_at: Option<DateTime<Utc>>,
    /// When the feed's content last changed (a gate change, audited by `calendar-sync`).
    pub last_change_at: Option<DateTime<Utc>>,
    /// The last attempt, successful or not.
    pub last_attempt_at: Option<DateTime<Utc>>,
    /// Why the last attempt failed; absent after a success.
    pub error: Option<String>,
    /// Failed attempts since the last success.
    pub failures: i32,
    pub next_fetch_at: DateTime<Utc>,
    /// Not fetched successfully for `maxStale`: the window applies `onStale`.
    pub stale: bool,
    /// When the copy turned (or turns) stale: last successful fetch + `maxStale`.
    pub stale_at: Option<DateTime<Utc>>,
    /// Occurrences of the last good copy within the horizon the hub sends spokes.
    pub occurrences: usize,
    /// Events of the feed that were skipped, with line and property
    /// (`line 58, DTSTART: unknown time zone …`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<String>,
}

/// Where a calendar feed stands ([`CalendarFeedStatus::state`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum CalendarFeedState {
    /// The hub has not tried to fetch it yet (a new or changed `calendar.url`).
    #[default]
    NotFetched,
    /// The last fetch succeeded.
    Ok,
    /// The last fetch failed; the last good copy is in use until `maxStale`.
    Failing,
    /// No successful fetch for `maxStale` (or never, after trying): `onStale` applies.
    Stale,
}

impl CalendarFeedState {
    /// The name the APIs use (`notFetched`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NotFetched => "notFetched",
            Self::Ok => "ok",
            Self::Failing => "failing",
            Self::Stale => "stale",
        }
    }
}

/// A warning about one manifest field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
pub struct FieldWarning {
    /// `spec.windows[0].schedule`.
    pub path: String,
    pub message: String,
}

/// A registered cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct Cluster {
    pub name: String,
    #[cfg_attr(feature = "sqlx", sqlx(json))]
    pub labels: BTreeMap<String, String>,
    pub created_at: DateTime<Utc>,
    /// Last message from its spoke.
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    /// Whether `spokeVersion` is within the hub's version-skew policy
    /// (docs/hub-operations.md, "Upgrades and version skew"): `unknown` until a
    /// spoke connected. Hubs before 0.2.0 leave it out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    pub spoke_skew: Option<crate::version::Skew>,
    /// Whether a spoke stream is open now.
    pub connected: bool,
    /// The hub replica holding the stream.
    pub connected_replica: Option<String>,
    /// Spoke clock minus hub clock, as last measured.
    pub clock_offset_ms: Option<i64>,
    /// Fleet revision of the last change to this cluster's desired state.
    pub desired_revision: i64,
    /// How its spoke signs in when registered with an issuer (absent: a cluster token).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(json(nullable)))]
    pub identity: Option<ClusterIdentity>,
    /// Whether its spoke could persist the snapshot it enforces in the cluster, as its
    /// latest report says (absent: spokes before 0.3, or no report yet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(json(nullable)))]
    pub snapshot_persistence: Option<SnapshotPersistence>,
    /// Set while the hub holds the cluster closed because its snapshot is over its budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(json(nullable)))]
    pub snapshot_over_budget: Option<SnapshotOverBudget>,
}

/// The identity a cluster's spoke signs in with: a JWT of `issuer` whose `sub` is exactly
/// `subject` and whose audience is the hub's `--spoke-audience`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterIdentity {
    /// The issuer URL (`iss`): the cluster's service-account issuer or a SPIFFE trust
    /// domain's OIDC discovery provider.
    pub issuer: String,
    /// The exact `sub`: `system:serviceaccount:NS:NAME` or a SPIFFE ID.
    pub subject: String,
    /// The keys were pinned (`--jwks-file`) rather than read through discovery.
    pub jwks_pinned: bool,
}

/// Whether a cluster's spoke could persist the snapshot it enforces in its cluster (the
/// ConfigMaps a restart without the hub reads), as its latest report says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotPersistence {
    /// `persisted`: the snapshot in force is persisted; `failing`: it is not (a restart
    /// without the hub would enforce `persistedRevision`, or no snapshot); `none`: nothing
    /// to persist yet.
    pub state: String,
    /// The revision of the persisted copy (0: none known).
    pub persisted_revision: u64,
    /// Bytes the persisted copy takes in the cluster (gzipped when larger than one
    /// ConfigMap), and bytes of its JSON.
    pub stored_bytes: u64,
    pub json_bytes: u64,
    /// ConfigMaps holding it: the head, and its shards past one ConfigMap.
    pub config_maps: u32,
    /// With `failing`: why the last attempt failed, the revision in force that is not
    /// persisted, and since when attempts fail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_revision: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<DateTime<Utc>>,
}

/// Set while the hub holds a cluster closed because its snapshot is over its budget
/// (`SNAPSHOT_MAX_BYTES`): its spoke gets no gates and the `snapshot-over-budget` freeze
/// until the gates that select it fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SnapshotOverBudget {
    /// The encoded size of the snapshot the cluster's gates make.
    pub bytes: u64,
    /// The budget it is over.
    pub budget: u64,
    /// The fleet revision of that snapshot.
    pub revision: u64,
    /// When a hub replica first sent the cluster the closed snapshot instead.
    pub since: DateTime<Utc>,
}

/// A cluster with its spoke token, returned once at registration / rotation.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterWithToken {
    pub cluster: Cluster,
    /// The spoke token (`fgs_...`). Shown only now; the hub stores its hash. Empty for a
    /// cluster registered with an issuer (its spoke presents the cluster's own JWT).
    pub token: String,
}

/// Register a cluster.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegisterCluster {
    /// DNS-1123 label (lowercase letters, digits, '-', at most 63).
    pub name: String,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// Sign the spoke in with a JWT of this issuer instead of a cluster token: the cluster's
    /// service-account issuer (EKS, GKE, AKS, or any cluster's API server URL), or a SPIFFE
    /// trust domain's OIDC discovery provider with `spiffeId`. An https URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub issuer: Option<String>,
    /// With `issuer`: the ServiceAccount `NAMESPACE/NAME` the spoke runs as (default
    /// `fleetgate-system/fleetgate-spoke`); its tokens carry
    /// `sub: system:serviceaccount:NAMESPACE:NAME`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<String>,
    /// With `issuer`, instead of `serviceAccount`: the SPIFFE ID of the spoke's JWT-SVID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spiffe_id: Option<String>,
    /// With `issuer`: the issuer's keys (a JWKS document, as `kubectl get --raw
    /// /openid/v1/jwks` prints it) for an issuer the hub cannot reach; else discovery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub jwks: Option<serde_json::Value>,
}

/// Replace the pinned keys of a cluster registered with an issuer (after the cluster
/// rotated its service-account signing key).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetClusterJwks {
    /// The JWKS document; `null` goes back to OIDC discovery.
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub jwks: Option<serde_json::Value>,
}

/// Replace a cluster's labels.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Relabel {
    pub labels: BTreeMap<String, String>,
}

/// Which clusters an override applies to (within the gate's scope).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OverrideClusters {
    /// Cluster names (must be registered and in the gate's scope).
    #[serde(default)]
    pub names: Vec<String>,
    /// Kubernetes label selector (`matchLabels`, `matchExpressions`) over cluster labels.
    #[serde(default)]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<crate::schema::gate::LabelSelectorDoc>))]
    pub selector: Option<fleetgate_policy::LabelSelector>,
}

/// Open or close a gate manually.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
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
    /// A change ticket (e.g. `CHG0031337`), passed to the admission webhooks and recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ticket: Option<String>,
    /// Break-glass (admins): skip the gate's approval. The reason is mandatory and the
    /// audit entry, dashboard and notifications mark the override.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emergency: bool,
}

/// A stored override.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct OverrideRecord {
    pub id: Uuid,
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which clusters; absent = the gate's whole scope.
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<crate::schema::gate::ClusterScopeDoc>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(rename = "scope", json(nullable)))]
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
    /// Set in the answer to a request by a principal scoped to some
    /// clusters: how the override was narrowed to them (not stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(skip))]
    pub narrowed: Option<String>,
    /// Break-glass: an admin skipped the gate's approval (`--emergency`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub emergency: bool,
    /// The approval request this override was created by, on a gate with `spec.approval`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_request: Option<Uuid>,
}

/// One audit-log entry.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    pub at: DateTime<Utc>,
    /// Who made the change: the API token's name; a person's email (else
    /// display name, else `sub`); a workload's `sub`.
    pub actor: String,
    /// e.g. `gate.create`, `override.open`, `cluster.rotate_token`.
    pub action: String,
    /// gate, override, cluster, api_token.
    pub target_kind: String,
    pub target_name: String,
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub before: Option<serde_json::Value>,
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
    /// token, person, workload or system (absent on entries written before
    /// the hub knew people).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_kind: Option<String>,
    /// A person's or workload's OIDC issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_issuer: Option<String>,
    /// A person's or workload's `sub`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_subject: Option<String>,
    /// A person's email.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_email: Option<String>,
    /// A person's groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor_groups: Option<Vec<String>>,
    /// What granted the action: `token ci`, `policy payments (group payments)`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub granted_by: Option<Vec<String>>,
}

/// An API token (never its secret).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiToken {
    pub id: Uuid,
    pub name: String,
    /// viewer, operator or admin.
    pub role: String,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    /// Where the token's role holds (absent: everywhere).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::AccessScope>,
}

/// A new API token with its secret, returned once.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ApiTokenWithSecret {
    pub token: ApiToken,
    /// The secret (`fga_...`). Shown only now; the hub stores its hash.
    pub secret: String,
}

/// Create an API token.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToken {
    pub name: String,
    /// viewer, operator or admin.
    pub role: String,
    /// Where the role holds (clusters and gates); absent: everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<crate::AccessScope>,
}

/// Freeze clusters at once (the emergency stop): every gate on them closes, above every
/// override, and every Kustomization/HelmRelease no gate covers is suspended.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FreezeRequest {
    /// Why (required: an incident id; shown wherever the freeze has an effect).
    #[serde(default)]
    pub reason: String,
    /// Which clusters; absent = every cluster (within the caller's scope).
    #[serde(default)]
    pub clusters: Option<OverrideClusters>,
    /// How long, Go-style (`2h`); absent (and no `until`) = until unfrozen.
    #[serde(rename = "for", default)]
    pub duration: Option<String>,
    /// When it ends by itself (instead of `for`).
    #[serde(default)]
    pub until: Option<DateTime<Utc>>,
}

/// End freezes (`fleetgate unfreeze`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnfreezeRequest {
    /// Why (required; recorded in the audit log).
    #[serde(default)]
    pub reason: String,
    /// Only this freeze; absent = every freeze in force the caller may end.
    #[serde(default)]
    pub id: Option<Uuid>,
}

/// A fleet freeze.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct FreezeRecord {
    pub id: Uuid,
    /// Which clusters; absent = every cluster.
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<crate::schema::gate::ClusterScopeDoc>))]
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "sqlx", sqlx(rename = "scope", json(nullable)))]
    pub clusters: Option<fleetgate_policy::ClusterScope>,
    pub reason: String,
    pub starts_at: DateTime<Utc>,
    /// When it ends by itself; absent = until unfrozen.
    pub expires_at: Option<DateTime<Utc>>,
    /// Who froze.
    pub actor: String,
    pub created_at: DateTime<Utc>,
    /// Set for a freeze made inside that cluster (its `fleetgate-freeze` ConfigMap), as
    /// its spoke reported it; such a freeze is ended in the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_in: Option<String>,
    /// The Kubernetes user that made it there (the ConfigMap's field manager), when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
    pub ended_at: Option<DateTime<Utc>>,
    pub ended_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_reason: Option<String>,
}

impl FreezeRecord {
    /// In force at `t` or starting later (neither ended nor expired).
    pub fn is_live(&self, t: DateTime<Utc>) -> bool {
        self.ended_at.is_none() && self.expires_at.is_none_or(|e| e > t)
    }
}
