//! Status answers: the objects spokes report, each gate's state per cluster,
//! the fleet summary and the fleet status (`fleetgate status`).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::records::{Cluster, OverrideRecord};

/// A governed Flux object as its spoke reports it: written by report
/// ingestion, read back by the status views (with `reported_at`, see
/// [`super::status::ObjectStatus`]). A whole report is JSON-encoded into one
/// statement parameter, so it is one upsert.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    /// Its Ready condition as Flux wrote it: `True`, `False` or `Unknown`; absent while it
    /// has none (never reconciled) or from a spoke that predates health reports.
    #[serde(default)]
    pub ready: Option<String>,
    /// The Ready condition's reason, e.g. `ReconciliationFailed`, `UpgradeFailed`.
    #[serde(default)]
    pub ready_reason: Option<String>,
    /// The Ready condition's message (at most 1 KiB).
    #[serde(default)]
    pub ready_message: Option<String>,
    /// `Stalled=True`: Flux stopped retrying until the object or its input changes.
    #[serde(default)]
    pub stalled: bool,
    /// `metadata.generation`.
    #[serde(default)]
    pub generation: Option<i64>,
    /// `status.observedGeneration`; behind `generation` while Flux has not reconciled the
    /// current spec successfully.
    #[serde(default)]
    pub observed_generation: Option<i64>,
    /// `status.lastAttemptedRevision`: the revision Flux tried last, applied or failed.
    #[serde(default)]
    pub last_attempted_revision: Option<String>,
    /// Closed warn-mode gates (`spec.enforcement: warn`) that would suspend it if they were
    /// enforced; the spoke holds nothing for them. Empty from spokes that predate warn mode.
    #[serde(default)]
    pub would_suspend_by: Vec<String>,
    /// A newer source revision would wait behind a closed warn gate.
    #[serde(default)]
    pub would_hold: bool,
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
    /// The snapshot revision the spoke enforced when it last reported (a report made before
    /// a change reached the spoke carries an older one); absent from spokes that predate it.
    #[serde(default)]
    pub report_revision: Option<i64>,
}

/// One object a Kustomization applied that a holdObjects gate selects, as its
/// spoke reports it. A whole report's set is JSON-encoded into one statement
/// parameter, like [`super::reports::ReportedObject`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct HeldObject {
    /// API group, `""` for the core group (e.g. `apps`).
    #[cfg_attr(feature = "sqlx", sqlx(rename = "api_group"))]
    pub group: String,
    pub kind: String,
    /// `""` for cluster-scoped objects.
    pub namespace: String,
    pub name: String,
    /// The Kustomization that applied it (its owner labels).
    pub kustomization_namespace: String,
    pub kustomization_name: String,
    /// Every holdObjects gate selecting it, open or closed.
    pub gates: Vec<String>,
    /// The closed gates fleetgate's mark names (empty: fleetgate does not hold it).
    pub held_by: Vec<String>,
    /// A person marked it `kustomize.toolkit.fluxcd.io/reconcile: disabled`
    /// (or `ssa: Ignore`); fleetgate leaves that mark alone.
    pub held_by_person: bool,
    /// The Kustomization's last applied revision when fleetgate marked it.
    pub held_since_revision: Option<String>,
    /// When fleetgate marked it.
    pub held_since: Option<DateTime<Utc>>,
    /// The Kustomization applied a newer revision since: changes to it wait.
    pub newer_revision_applied: bool,
    /// `HoldNotPermitted`: a holdObjects gate selects it but its kind is not in
    /// the spoke's `--held-kinds`, so no gate can hold it on this cluster (it
    /// rolls out while the gate is closed). `gates` names the gates.
    #[serde(default)]
    pub not_permitted: bool,
    /// Closed warn-mode gates (`spec.enforcement: warn`) that would hold it if
    /// they were enforced: what an enforced mark would name. Nothing is marked
    /// for them (`held` stays false).
    #[serde(default)]
    pub would_hold_by: Vec<String>,
    /// The Kustomization's applied revision when a warn gate first would hold it.
    #[serde(default)]
    pub would_hold_since_revision: Option<String>,
    /// The Kustomization applied a newer revision since: enforced, the changes
    /// to this object would wait.
    #[serde(default)]
    pub would_hold_newer_revision: bool,
}

impl HeldObject {
    /// Flux skips it now: fleetgate or a person holds it.
    pub fn is_held(&self) -> bool {
        !self.held_by.is_empty() || self.held_by_person
    }
}

/// A reported held object with what the views add: whether it is held now and
/// the time of the report that carried it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "sqlx", derive(sqlx::FromRow))]
#[serde(rename_all = "camelCase")]
pub struct HeldObjectStatus {
    #[serde(flatten)]
    #[cfg_attr(feature = "sqlx", sqlx(flatten))]
    pub object: HeldObject,
    /// Flux skips it now (`heldBy` not empty, or `heldByPerson`).
    pub held: bool,
    pub reported_at: DateTime<Utc>,
}

/// Object counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ObjectCounts {
    /// Flux objects governed (not counting ignored ones).
    pub governed: i64,
    /// Flux objects with a newer revision waiting behind a closed gate.
    pub held: i64,
    pub suspended: i64,
    /// Objects inside Kustomizations held by fleetgate (holdObjects gates).
    pub held_objects: i64,
    /// Objects inside Kustomizations Flux skips because a person marked them.
    pub held_objects_by_person: i64,
    /// Objects held by fleetgate whose Kustomization applied a newer revision
    /// since (their changes wait for the gate).
    pub held_objects_waiting: i64,
    /// Objects holdObjects gates select that the spoke may not hold
    /// (`HoldNotPermitted`: their kind is not in its `--held-kinds`).
    #[serde(default)]
    pub held_objects_not_permitted: i64,
    /// Flux objects closed warn-mode gates would suspend if enforced (not counted in
    /// `suspended`: nothing is held for them).
    #[serde(default)]
    pub would_suspend: i64,
    /// Flux objects whose newer revision a closed warn gate would hold.
    #[serde(default)]
    pub would_hold: i64,
    /// Objects inside Kustomizations closed warn-mode holdObjects gates would
    /// hold if enforced (not counted in `heldObjects`: nothing is marked).
    #[serde(default)]
    pub would_hold_objects: i64,
    /// Of those, objects whose Kustomization applied a newer revision since.
    #[serde(default)]
    pub would_hold_objects_waiting: i64,
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
    /// Objects this gate holds (fleetgate's marks naming it) across the fleet.
    pub held_objects: i64,
    /// `enforce` or `warn` (`spec.enforcement`).
    #[serde(default = "enforce")]
    pub enforcement: String,
    /// Flux objects it would suspend across the fleet (a warn gate while closed).
    #[serde(default)]
    pub would_suspend: i64,
    /// Objects inside Kustomizations it would hold across the fleet if enforced
    /// (a warn-mode holdObjects gate while closed).
    #[serde(default)]
    pub would_hold_objects: i64,
}

fn enforce() -> String {
    "enforce".to_owned()
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
    /// At least one held Flux object (a newer revision waits).
    pub with_held: usize,
    /// At least one object inside a Kustomization held by fleetgate.
    pub with_held_objects: usize,
    /// Whose rollout wave failed in a gate's current rollout (see [`RolloutFailure`]).
    #[serde(default)]
    pub rollout_failed: usize,
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
    /// Clusters on which a gate's current rollout failed, by cluster then gate (at most 100).
    #[serde(default)]
    pub rollout_failures: Vec<ClusterRolloutFailure>,
}

/// A cluster on which a gate's current rollout failed (the fleet summary's list).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterRolloutFailure {
    pub cluster: String,
    pub gate: String,
    pub failure: RolloutFailure,
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
    /// Objects inside Kustomizations this gate holds (fleetgate's mark names it).
    pub held_objects: usize,
    /// `enforce` or `warn` (`spec.enforcement`): a closed warn gate holds nothing.
    #[serde(default = "enforce")]
    pub enforcement: String,
    /// Reported objects it would suspend if enforced (a warn gate while closed).
    #[serde(default)]
    pub would_suspend: usize,
    /// Of those, the ones whose newer revision it would hold.
    #[serde(default)]
    pub would_hold: usize,
    /// Objects inside Kustomizations it would hold if enforced (a warn-mode
    /// holdObjects gate while closed; nothing is marked for it).
    #[serde(default)]
    pub would_hold_objects: usize,
    /// For a gate with `spec.rollout` whose current rollout placed this cluster: its wave,
    /// release and health there (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<ClusterRollout>,
    /// The gate's current rollout failed on this cluster (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_failure: Option<RolloutFailure>,
    /// Whether the caller may open, close and cancel this gate on this
    /// cluster (its role and scope).
    #[serde(default)]
    pub may_operate: bool,
}

/// A cluster on which a gate's current rollout failed: its wave failed there (halting the
/// rollout, or tolerated by `maxFailures`), with the failing object and why, as the rollout
/// driver judged it. It stays until an operator resumes the rollout or the rollout ends, so a
/// failed canary never reads as merely open (`fleetgate status`, the dashboard grid).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RolloutFailure {
    pub rollout_id: String,
    /// The rollout's state now (`halted` until an operator resumes it).
    pub state: crate::rollout::RolloutState,
    /// The cluster's wave, 1-based.
    pub wave: i32,
    pub wave_name: String,
    /// When the rollout driver found the wave failed here.
    pub failed_at: DateTime<Utc>,
    /// The failing object and its Ready message
    /// (`Kustomization flux-system/apps: Ready=False: …`), or why the cluster was not healthy
    /// in time.
    pub detail: String,
}

impl RolloutFailure {
    /// In words: `rollout wave 1 'canary' failed: Kustomization flux-system/apps: …`.
    pub fn describe(&self) -> String {
        format!(
            "rollout wave {} '{}' failed: {}",
            self.wave, self.wave_name, self.detail
        )
    }
}

/// One cluster's place in a gate's current rollout (`fleetgate status CLUSTER`, the
/// dashboard's cluster page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClusterRollout {
    pub rollout_id: String,
    /// The rollout's state.
    pub state: crate::rollout::RolloutState,
    /// The cluster's wave, 1-based (late joiners: a wave after the spec's last).
    pub wave: i32,
    pub wave_name: String,
    /// When its wave released it (absent: waiting for its wave).
    pub released_at: Option<DateTime<Utc>>,
    /// `closed` while waiting for its wave; then progressing, healthy, failed or unknown.
    pub health: crate::rollout::Health,
    /// Why it is not healthy: the failing object and its Ready message.
    pub detail: Option<String>,
}

impl ClusterRollout {
    /// In words: `waiting for wave 2 'early'`, `released in wave 1 'canary': healthy`.
    pub fn describe(&self) -> String {
        let wave = format!("wave {} '{}'", self.wave, self.wave_name);
        let mut out = if self.released_at.is_none() {
            format!("waiting for {wave}")
        } else {
            format!("released in {wave}: {}", self.health.as_str())
        };
        if !matches!(
            self.state,
            crate::rollout::RolloutState::Running | crate::rollout::RolloutState::Completed
        ) {
            out.push_str(&format!(" (rollout {})", self.state.as_str()));
        }
        out
    }
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
    /// The closed gates in warn mode (`spec.enforcement: warn`): they would hold the
    /// cluster's objects if enforced; not in `closedBy`, they hold nothing.
    #[serde(default)]
    pub would_close_by: Vec<String>,
    /// When `open` next changes (not merely some gate): absent when it does not within the
    /// look-ahead, e.g. while a gate without windows is closed. Per-gate times are in `gates`.
    pub next_transition: Option<DateTime<Utc>>,
    pub gates: Vec<GateStatus>,
    /// Every reported object.
    pub objects: Vec<ObjectStatus>,
    /// Objects inside Kustomizations that holdObjects gates select (held ones
    /// first): which are held, by which gates or by a person, since which
    /// revision, and whether newer changes wait. Empty for spokes that
    /// predate object holds.
    pub held_objects: Vec<HeldObjectStatus>,
    pub counts: ObjectCounts,
    /// Live open/close requests made inside this cluster (annotations on its
    /// Gate objects), as the overrides they were recorded as, newest first;
    /// an admin cancels one like any override.
    #[serde(default)]
    pub local_requests: Vec<OverrideRecord>,
    /// Gate objects made in the cluster (delivered from Git, not the hub's),
    /// as its spoke last reported them, by name: read-only here. Enforced
    /// ones count in `open` / `closedBy`. Empty for spokes that predate them.
    #[serde(default)]
    pub local_gates: Vec<LocalGate>,
    /// What the hub had to change or leave out of the cluster's latest
    /// report, and whether the database refused a report as a whole.
    #[serde(default)]
    pub report_problems: ReportProblems,
}

/// How the hub stored a cluster's latest report. Reports are the cluster's
/// own data, never refused for one object's content: an object with text
/// PostgreSQL cannot store is stored with U+0000 replaced by U+FFFD, an
/// object the hub cannot store at all is left out, and both are listed here.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportProblems {
    /// The problems of the latest stored report (at most 100 listed).
    pub items: Vec<ReportProblem>,
    /// How many problems that report had in all.
    pub total: u32,
    /// Set when the database refused the cluster's latest report as a whole
    /// (its status shown is from an older report); cleared by the next report
    /// stored. Never blocks another cluster's report.
    pub write_error: Option<String>,
    pub write_error_at: Option<DateTime<Utc>>,
}

/// One object of a report that the hub stored changed, or left out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportProblem {
    /// The field in the spoke's report: `report.objects[3].ready_message`.
    pub field: String,
    /// The object, `Kind namespace/name`, when known.
    pub object: String,
    /// `replaced`: stored with each U+0000 replaced by U+FFFD; `dropped`:
    /// left out of the stored report (the rest of the report is stored).
    pub action: String,
    pub message: String,
}

/// A Gate object made in a cluster (not mirrored from the hub), as the
/// cluster's spoke evaluates it. The hub only shows it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LocalGate {
    /// The Gate object's name.
    pub name: String,
    /// The spoke enforces it beside the hub's gates (hub `--local-gates
    /// enforce`, a valid spec or its last valid version, selecting the
    /// cluster, no hub gate of that name).
    pub enforced: bool,
    /// `open` or `closed` on the cluster now; `closed` when not enforced.
    pub state: String,
    /// The rule that decided (`DenyWindow`, `AllowWindow`, `Default`,
    /// `OpenRequested`, `CloseRequested`, ...); empty when not enforced.
    pub reason: String,
    /// The evaluator's reason text.
    pub message: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Flux objects it governs on the cluster.
    pub governed: u32,
    /// Of those, the ones with a change waiting behind it.
    pub held: u32,
    /// The Gate's Ready condition: `True` or `False`.
    pub ready: String,
    /// `Enforced`, `OtherCluster`, `InvalidSpec`, `NotEnforced`, `NameConflict`.
    pub ready_reason: String,
    pub ready_message: String,
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
    /// Objects inside Kustomizations this gate holds.
    pub held_objects: i64,
    /// `enforce` or `warn` (`spec.enforcement`): a closed warn gate holds nothing.
    #[serde(default = "enforce")]
    pub enforcement: String,
    /// Reported objects it would suspend if enforced (a warn gate while closed).
    #[serde(default)]
    pub would_suspend: i64,
    /// The gate's current rollout failed on this cluster (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout_failure: Option<RolloutFailure>,
    /// Objects inside Kustomizations it would hold if enforced (a warn-mode
    /// holdObjects gate while closed).
    #[serde(default)]
    pub would_hold_objects: i64,
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
    /// The closed gates in warn mode (`spec.enforcement: warn`): they would hold the
    /// cluster's objects if enforced; not in `closedBy`, they hold nothing.
    #[serde(default)]
    pub would_close_by: Vec<String>,
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
    /// Fleet freezes in force now (the emergency stop), oldest first.
    #[serde(default)]
    pub freezes: Vec<crate::records::FreezeRecord>,
    /// With `limit`: the `cursor` of the next page of clusters; absent on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
