//! The gate manifest (`apiVersion: fleetgate.io/v1`, `kind: Gate`) as serde types, and parsing
//! from YAML or JSON with unknown fields rejected and errors naming the field path.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{ClusterScope, FluxKind, GateState, HeldObjects, LabelSelector, PolicyError};

/// The `apiVersion` every gate manifest carries.
pub const API_VERSION: &str = "fleetgate.io/v1";
/// The `kind` every gate manifest carries.
pub const KIND: &str = "Gate";

/// A gate manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Gate {
    pub api_version: String,
    pub kind: String,
    pub metadata: Metadata,
    pub spec: GateSpec,
}

/// Kubernetes-style object metadata; `name` identifies the gate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    pub name: String,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
}

/// What the gate governs and when it is open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GateSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub clusters: ClusterScope,
    #[serde(default)]
    pub targets: Targets,
    #[serde(default)]
    pub mode: Mode,
    /// `enforce` (the default) or `warn`: a warn gate is evaluated everywhere as if enforced,
    /// but spokes hold nothing for it and report what it *would* hold.
    #[serde(default, skip_serializing_if = "Enforcement::is_enforce")]
    pub enforcement: Enforcement,
    /// What a `holdObjects` gate holds inside its target Kustomizations (that mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub objects: Option<HeldObjects>,
    #[serde(default)]
    pub default: GateState,
    /// IANA zone for windows that set none; UTC when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub windows: Vec<Window>,
    /// How long an open or close request made on the Gate object in a cluster lasts (the
    /// Flux gating RFC's `window`): [`DEFAULT_REQUEST_WINDOW`] when absent, at most
    /// [`MAX_REQUEST_WINDOW`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<String>,
    /// Which requests made on the Gate object in a cluster are honoured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_requests: Option<LocalRequests>,
    /// Open the clusters progressively, in waves, on every closed→open change of the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<crate::Rollout>,
    /// Overrides of the chosen states wait for other people's approval at the hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval: Option<crate::Approval>,
}

/// How long a request lasts when the gate sets no `window`.
pub const DEFAULT_REQUEST_WINDOW: chrono::Duration = chrono::Duration::hours(1);
/// The longest `window`: a longer freeze belongs in a dated deny window, in Git.
pub const MAX_REQUEST_WINDOW: chrono::Duration = chrono::Duration::hours(168);

/// Whether open and close requests made in a cluster (annotations on the Gate object) are
/// honoured; unset means the default of where the gate comes from (closing always; opening
/// only for gates defined in the cluster itself, not for the hub's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalRequests {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub close: Option<bool>,
}

impl GateSpec {
    /// How long a local request lasts (`spec.window`, else the default). Call after
    /// validation: an invalid window falls back to the default.
    pub fn request_window(&self) -> chrono::Duration {
        self.window
            .as_deref()
            .and_then(|w| crate::parse_duration(w).ok())
            .unwrap_or(DEFAULT_REQUEST_WINDOW)
    }

    /// Whether an override to `state` must wait for approval (`spec.approval.for`).
    pub fn needs_approval(&self, state: GateState) -> bool {
        self.approval.as_ref().is_some_and(|a| a.requires(state))
    }

    /// Whether a local request to open (`open == true`) or close is honoured; `from_hub`
    /// picks the default when `localRequests` does not say.
    pub fn allows_local_request(&self, open: bool, from_hub: bool) -> bool {
        let set = self.local_requests.unwrap_or_default();
        if open {
            set.open.unwrap_or(!from_hub)
        } else {
            set.close.unwrap_or(true)
        }
    }
}

/// Which Flux objects on an in-scope cluster the gate governs. Every non-empty criterion must
/// match; an empty one matches anything.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Targets {
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub kinds: Vec<FluxKind>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub namespaces: Vec<String>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

impl Targets {
    /// Whether an object of `kind` named `namespace/name` with `labels` is targeted.
    pub fn matches(
        &self,
        kind: FluxKind,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&kind))
            && (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace))
            && (self.names.is_empty() || self.names.iter().any(|n| n == name))
            && self.selector.as_ref().is_none_or(|s| s.matches(labels))
    }
}

/// How a closed gate holds changes back.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Mode {
    /// Suspend the targeted objects themselves.
    #[default]
    Suspend,
    /// Suspend the sources the targeted Kustomizations/HelmReleases consume, so the last
    /// approved revision keeps being applied (drift is corrected) and only new revisions wait.
    FreezeSources,
    /// Hold chosen objects *inside* the targeted Kustomizations (`spec.objects`): they get
    /// kustomize-controller's `reconcile: disabled` mark while the gate is closed, and the
    /// rest of what the Kustomization applies stays real-time (drift correction included).
    HoldObjects,
}

impl Mode {
    /// The manifest spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Mode::Suspend => "suspend",
            Mode::FreezeSources => "freezeSources",
            Mode::HoldObjects => "holdObjects",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Mode {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "suspend" => Ok(Mode::Suspend),
            "freezeSources" => Ok(Mode::FreezeSources),
            "holdObjects" => Ok(Mode::HoldObjects),
            _ => Err(PolicyError::new(
                "",
                format!("unknown mode '{s}', expected suspend, freezeSources or holdObjects"),
            )),
        }
    }
}

/// Whether a closed gate holds anything (`enforce`) or only reports what it would hold
/// (`warn`: try a gate on the fleet before it bites).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Enforcement {
    /// Closed means held: today's behaviour.
    #[default]
    Enforce,
    /// Closed means "would hold": evaluated, reported and shown, never enforced.
    Warn,
}

impl Enforcement {
    /// The manifest spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            Enforcement::Enforce => "enforce",
            Enforcement::Warn => "warn",
        }
    }

    /// Whether this is [`Enforcement::Enforce`] (the default, left out when serialising so
    /// manifests stored before warn mode keep their exact JSON).
    pub fn is_enforce(&self) -> bool {
        *self == Enforcement::Enforce
    }

    /// Whether this is [`Enforcement::Warn`].
    pub fn is_warn(&self) -> bool {
        *self == Enforcement::Warn
    }
}

impl fmt::Display for Enforcement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Whether a window opens (`allow`) or closes (`deny`) the gate while active.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WindowKind {
    Allow,
    Deny,
}

impl WindowKind {
    /// `"allow"` or `"deny"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            WindowKind::Allow => "allow",
            WindowKind::Deny => "deny",
        }
    }
}

impl fmt::Display for WindowKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A time window. Exactly one shape: `schedule` + `duration` (cron), `rrule` + `dtstart` +
/// `duration` (RFC 5545), `start` + `end` (dated, e.g. a freeze), or `calendar` (every event of
/// an iCalendar, inline or a feed; optionally only those that `match`). Times are wall-clock in
/// `timeZone` (the window's, else the gate's, else UTC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Window {
    pub name: String,
    pub kind: WindowKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rrule: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dtstart: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calendar: Option<crate::CalendarSource>,
    /// With `calendar`: only the events that match.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub event_match: Option<crate::EventMatch>,
}

impl Gate {
    /// `metadata.name`.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}

impl Gate {
    /// What this gate cannot hold back, in words (empty when nothing needs saying). Shown by
    /// `fleetgate gate validate` and previews so nobody learns it from an incident.
    pub fn limitations(&self) -> Vec<String> {
        if self.spec.mode != Mode::HoldObjects {
            return Vec::new();
        }
        vec![
            "holdObjects marks live objects: an object a new revision adds is created at once \
             (there is nothing to mark before it exists); it is held from then on. Combine with a \
             mode: suspend gate on the Kustomization if new objects must wait too."
                .into(),
            "holdObjects works on Kustomizations only: helm-controller has no per-object hold, so \
             HelmReleases cannot be targeted."
                .into(),
            "Held objects keep their live state: drift on them is not corrected until the gate \
             opens; everything else the Kustomization applies stays real-time."
                .into(),
        ]
    }
}

/// Parses a gate manifest from YAML or JSON text (JSON is valid YAML). Unknown fields, wrong
/// types and missing fields are errors naming the field path. Does not validate values; call
/// [`Gate::validate`] or [`Gate::compile`] for that.
pub fn parse_gate(text: &str) -> Result<Gate, PolicyError> {
    if text.trim().is_empty() {
        return Err(PolicyError::new("", "empty gate manifest"));
    }
    crate::yaml::from_str(text)
}

/// Parses a gate manifest from a JSON value, with the same errors as [`parse_gate`].
pub fn parse_gate_json(value: serde_json::Value) -> Result<Gate, PolicyError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = crate::yaml::path_of(e.path());
        PolicyError::new(path, e.into_inner().to_string())
    })
}
