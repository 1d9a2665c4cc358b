//! The impact preview of a gate before it is applied (`POST/PUT /api/v1/gates?dryRun=true`,
//! `fleetgate gate apply --dry-run`): which clusters it would govern (added and removed against
//! the stored version), each one's state now and next transitions, and, from the spokes' latest
//! inventories, the Flux objects it would govern and hold now. Also the inventory entry spokes
//! report for it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// One Flux object a spoke sees, governed or not, as its latest report carried it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct InventoryObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The sources it consumes, `Kind/namespace/name`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<String>,
    /// `spec.suspend` set by a person: fleetgate leaves it alone.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub suspended_by_human: bool,
    /// Annotated `fleetgate.io/ignore: "true"`: never governed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
}

/// A Flux object in a preview.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// A state change in a preview.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImpactTransition {
    pub at: DateTime<Utc>,
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
}

/// What the gate would do on one cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterImpact {
    pub cluster: String,
    /// `added` (in the new scope only), `removed` (in the stored scope only) or
    /// `unchanged` (in both; for a new gate every cluster is `added`).
    pub change: String,
    pub connected: bool,
    /// The new manifest's state here now (`open`/`closed`), with the live overrides of a
    /// gate of that name; empty for a removed cluster.
    pub state: String,
    pub reason: String,
    /// State changes in the coming 7 days.
    pub transitions: Vec<ImpactTransition>,
    /// The cluster's spoke reported its Flux inventory (spokes that predate it do not: the
    /// object lists are then empty and say nothing).
    pub inventory_reported: bool,
    /// Flux objects it would govern here (targets, as the spoke matches them).
    pub governed: Vec<ObjectRef>,
    /// Of the objects on the cluster, those it would suspend now if enforced: its
    /// targets (freezeSources: the sources they consume) while it is closed, without what a
    /// person suspended or `fleetgate.io/ignore` exempts. Empty while it is open.
    pub would_hold: Vec<ObjectRef>,
    /// For a gate with `spec.rollout`: the wave (1-based) this cluster would be in when a
    /// rollout starts, as the hub assigns waves over the new manifest's scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wave_name: Option<String>,
}

/// One wave of a rollout gate's preview: its clusters, in release order, and its estimated
/// release at the gate's next opening in the coming 7 days.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImpactWave {
    /// 1-based.
    pub wave: u32,
    pub name: String,
    /// An operator releases it (`fleetgate rollout release-next`).
    #[serde(default)]
    pub approval: bool,
    pub clusters: Vec<String>,
    /// The earliest release at the next opening (the opening plus one soak per earlier
    /// wave, every wave healthy at once); absent when the gate does not open (from closed)
    /// within 7 days.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimated_release_at: Option<DateTime<Utc>>,
    /// Estimated at or after the gate closes again: that opening will not release it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub after_close: bool,
}

/// Totals over the clusters the new manifest governs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ImpactCounts {
    pub clusters: usize,
    pub closed: usize,
    pub governed: usize,
    pub would_hold: usize,
}

/// The impact preview of a gate manifest: nothing written, nothing audited.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateImpact {
    pub gate: String,
    /// `create` (no stored gate of that name), `replace`, or `unchanged` (same manifest).
    pub action: String,
    /// The stored version replaced (absent for `create`).
    pub stored_version: Option<i64>,
    /// The instant evaluated.
    pub at: DateTime<Utc>,
    /// `enforce` or `warn`: a warn gate would hold nothing; `wouldHold` says what it would
    /// hold once enforced.
    pub enforcement: String,
    /// Clusters the new manifest governs that the stored one does not.
    pub added: Vec<String>,
    /// Clusters the stored manifest governs that the new one does not.
    pub removed: Vec<String>,
    /// Every cluster in either scope, by name.
    pub clusters: Vec<ClusterImpact>,
    pub counts: ImpactCounts,
    /// For a gate with `spec.rollout`: its waves over the new scope (empty otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<ImpactWave>,
    /// Validation warnings, as a real apply returns them.
    #[serde(default)]
    pub warnings: Vec<crate::FieldWarning>,
}
