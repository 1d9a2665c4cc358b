//! What the dashboard's own read endpoints answer beyond the REST API: the
//! caller (`whoami`), the fleet grid (every gate on every cluster) and a
//! gate's page.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::Preview;
use serde::{Deserialize, Serialize};

use crate::records::{GateRecord, OverrideRecord, Role};

/// The caller (`GET /api/v1/whoami`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct WhoAmI {
    /// The API token's name, or the person's or workload's audit name.
    pub name: String,
    pub role: Role,
    /// The signed-in person or workload (absent for API tokens).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity: Option<crate::identity::Identity>,
    /// For a dashboard session: the value its writes send in `X-CSRF-Token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf_token: Option<String>,
}

/// One gate on one cluster in the grid.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct Cell {
    /// `open` or `closed`.
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
    /// The rollout wave (1-based) that will release the cluster: the gate is closed here
    /// only because its rollout has not released it yet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_wave: Option<u32>,
    /// The gate is in warn mode (`spec.enforcement: warn`): closed means "would close",
    /// nothing is held for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warn: bool,
    /// Reported objects it would suspend here if enforced (a warn gate while closed).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub would_suspend: u32,
    /// The gate's current rollout failed on this cluster: the failing object and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_failure: Option<crate::status::RolloutFailure>,
    /// Objects inside Kustomizations it would hold here if enforced (a warn-mode
    /// holdObjects gate while closed; nothing is marked).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub would_hold_objects: u32,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// A row of the grid.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetRow {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub connected: bool,
    pub last_seen_at: Option<DateTime<Utc>>,
    pub spoke_version: Option<String>,
    /// Whether `spokeVersion` is within the hub's version-skew policy.
    #[serde(default = "unknown_skew")]
    pub spoke_skew: crate::version::Skew,
    /// Objects with a change waiting for a gate.
    pub held: u32,
    /// Objects inside Kustomizations that fleetgate holds (`mode: holdObjects`).
    pub held_objects: u32,
    /// Of those, objects whose Kustomization applied a newer revision since.
    pub held_objects_waiting: u32,
    /// Objects a person marked `reconcile: disabled` (of the spoke's `--held-kinds`).
    pub held_objects_by_person: u32,
    /// Objects holdObjects gates select that the spoke may not hold
    /// (`HoldNotPermitted`: kind not in its `--held-kinds`): a warning cell.
    #[serde(default)]
    pub held_objects_not_permitted: u32,
    /// Objects inside Kustomizations closed warn-mode gates would hold if
    /// enforced ("◌ would hold"; nothing is marked).
    #[serde(default)]
    pub would_hold_objects: u32,
    /// Problems of the cluster's latest stored report (objects with text the
    /// database cannot hold, stored repaired or left out; the cluster page lists them).
    #[serde(default)]
    pub report_problems: u32,
    /// The database refused the cluster's latest report as a whole: its status is older.
    #[serde(default)]
    pub report_refused: bool,
    /// Aligned with [`FleetGrid::gates`]; `None` where the gate does not apply.
    pub cells: Vec<Option<Cell>>,
}

/// The fleet grid (`GET /api/v1/dashboard/fleet`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetGrid {
    pub at: DateTime<Utc>,
    pub gates: Vec<String>,
    pub clusters: Vec<FleetRow>,
    /// Live overrides (active now or starting later).
    pub overrides: usize,
}

/// A page of the fleet grid (`GET /api/v1/dashboard/fleet?limit=…`): the rows the
/// filters keep, in the asked order, one page of them; the counts over the whole fleet the
/// caller sees. Without `limit`: every row (the grid as before).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetGridPage {
    /// The grid, `clusters` being this page's rows.
    #[serde(flatten)]
    pub grid: FleetGrid,
    /// Rows the filters keep (outside collapsed groups): what the pages add up to.
    pub total: usize,
    /// Where this page starts among them (0-based).
    pub offset: usize,
    /// The `cursor` of the next page; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Counts over every cluster the caller sees, filters aside (the page's cards).
    pub counts: FleetCounts,
    /// Every label key on the clusters the caller sees (the "group by" choices).
    pub label_keys: Vec<String>,
    /// With `group`: each group of the filtered rows, in order, with where it starts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<FleetGroup>,
}

/// The fleet page's cards: clusters by state, over every cluster the caller sees.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetCounts {
    pub clusters: usize,
    /// No enforcing gate closed.
    pub open: usize,
    /// Some enforcing gate closed.
    pub closed: usize,
    /// With held changes.
    pub held: usize,
    /// Spoke offline.
    pub offline: usize,
}

/// A group of the fleet page (rows sharing the value of the `group` label).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct FleetGroup {
    /// The label's value, `(none)` for clusters without the label.
    pub key: String,
    /// Rows of the group the filters keep.
    pub clusters: usize,
    /// Of them, with a shown gate closed.
    pub closed: usize,
    pub held: usize,
    pub offline: usize,
    /// Listed in `collapsed`: its rows are left out of the pages.
    pub collapsed: bool,
    /// Where its rows start among the paged rows (a collapsed group: where they would).
    pub at: usize,
}

/// A cluster in a gate's scope, with the gate's state there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ScopedCluster {
    pub name: String,
    pub connected: bool,
    /// Reported objects governed by this gate with a change waiting.
    pub held: u32,
    pub state: String,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// As [`Cell::rollout_wave`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rollout_wave: Option<u32>,
    /// As [`Cell::warn`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warn: bool,
    /// As [`Cell::would_suspend`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub would_suspend: u32,
    /// As [`Cell::would_hold_objects`].
    #[serde(default, skip_serializing_if = "is_zero")]
    pub would_hold_objects: u32,
    /// Whether the caller may open, close and cancel this gate on this
    /// cluster (its role and scope); the dashboard shows those buttons only then.
    #[serde(default)]
    pub may_operate: bool,
}

/// A gate's page (`GET /api/v1/dashboard/gates/{name}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct GateView {
    pub gate: GateRecord,
    /// The rules in words.
    pub rules: Vec<String>,
    /// The gate's IANA time zone (UTC when it names none).
    pub time_zone: String,
    /// The schedule over the next 7 days, without overrides.
    #[cfg_attr(feature = "utoipa", schema(value_type = crate::schema::preview::PreviewDoc))]
    pub preview: Preview,
    /// Live overrides (active now or starting later).
    pub overrides: Vec<OverrideRecord>,
    pub clusters: Vec<ScopedCluster>,
    /// The gate's current (else latest) rollout; absent when it never had one (a gate
    /// without `spec.rollout`, or one whose first window has not opened yet), so the page
    /// needs no second request that answers 404.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<crate::rollout::RolloutStatus>,
    /// Whether the caller may open, close and cancel the gate on some of its
    /// clusters (`clusters[].mayOperate` says where).
    #[serde(default)]
    pub may_operate: bool,
}

fn unknown_skew() -> crate::version::Skew {
    crate::version::Skew::Unknown
}
