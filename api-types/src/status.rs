//! Status answers: the objects spokes report, each gate's state per cluster,
//! the fleet summary and the fleet status (`fleetgate status`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::records::Cluster;

/// A governed Flux object as its spoke reports it: written by report
/// ingestion, read back by the status views (with `reported_at`, see
/// [`super::status::ObjectStatus`]). A whole report is JSON-encoded into one
/// statement parameter, so it is one upsert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct ReportedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub suspended: bool,
    /// Gates whose closure suspended it.
    pub suspended_by: Vec<String>,
    /// Gates governing it.
    pub gates: Vec<String>,
    pub last_applied_revision: Option<String>,
    pub newest_source_revision: Option<String>,
    /// A newer source revision waits for a gate to open.
    pub held: bool,
    /// Suspended by a person (fleetgate leaves it alone).
    pub suspended_by_human: bool,
    /// Annotated `fleetgate.io/ignore: "true"`: `gates` target it, but fleetgate never
    /// governs it (not counted as governed).
    pub ignored: bool,
}

/// A reported object with the time of the report that carried it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    #[serde(flatten)]
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub object: ReportedObject,
    pub reported_at: DateTime<Utc>,
}

/// Object counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ObjectCounts {
    pub governed: i64,
    pub held: i64,
    pub suspended: i64,
}

/// One gate across the fleet.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateSummary {
    pub gate: String,
    /// Clusters in scope.
    pub clusters: usize,
    pub open: usize,
    pub closed: usize,
}

/// Cluster counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterCounts {
    pub total: usize,
    pub connected: usize,
    pub disconnected: usize,
    /// All gates open.
    pub open: usize,
    /// At least one gate closed.
    pub closed: usize,
    /// At least one held object.
    pub with_held: usize,
}

/// The fleet at a glance.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetSummary {
    pub at: DateTime<Utc>,
    pub revision: i64,
    pub clusters: ClusterCounts,
    pub gates: Vec<GateSummary>,
    pub objects: ObjectCounts,
    /// Names of disconnected clusters (at most 100).
    pub disconnected: Vec<String>,
}

/// One gate's state on one cluster.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateStatus {
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which rule decided, in words.
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects this gate governs.
    pub objects: Vec<ObjectStatus>,
    /// How many of them are held.
    pub held: usize,
}

/// A cluster's status.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    pub cluster: Cluster,
    /// The instant evaluated.
    pub at: DateTime<Utc>,
    /// All gates open: changes may flow.
    pub open: bool,
    /// The closed gates.
    pub closed_by: Vec<String>,
    /// When `open` next changes (not merely some gate): absent when it does not within the
    /// look-ahead, e.g. while a gate without windows is closed. Per-gate times are in `gates`.
    pub next_transition: Option<DateTime<Utc>>,
    pub gates: Vec<GateStatus>,
    /// Every reported object.
    pub objects: Vec<ObjectStatus>,
    pub counts: ObjectCounts,
}

/// One gate's state on one cluster (without the objects).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateBrief {
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which rule decided, in words.
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects governed by this gate that are held.
    pub held: i64,
}

/// One cluster's gates now, without its objects (see the per-cluster status
/// for those).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterBrief {
    pub cluster: Cluster,
    /// All gates open: changes may flow.
    pub open: bool,
    /// The closed gates.
    pub closed_by: Vec<String>,
    /// When `open` next changes (not merely some gate): absent when it does not within the
    /// look-ahead, e.g. while a gate without windows is closed.
    pub next_transition: Option<DateTime<Utc>>,
    /// The gates applying to the cluster, by name.
    pub gates: Vec<GateBrief>,
    pub counts: ObjectCounts,
}

/// The fleet summary and every (selected) cluster's gate states.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// Counts over the whole fleet (the selector does not apply).
    pub summary: FleetSummary,
    /// Clusters by name.
    pub clusters: Vec<ClusterBrief>,
}
