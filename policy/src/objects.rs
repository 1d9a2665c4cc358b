//! `spec.objects` of a `holdObjects` gate: which objects *inside* the targeted Kustomizations
//! are held (by group/kind, namespace, name and labels), and the limits of holding them, in
//! words for `gate validate` and previews.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::{Gate, LabelSelector, Mode};

/// A Kubernetes group and kind, as in a Kustomization's inventory (`apps`/`Deployment`;
/// the core group is `""`).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GroupKind {
    #[serde(default)]
    pub group: String,
    pub kind: String,
}

impl GroupKind {
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        GroupKind {
            group: group.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for GroupKind {
    /// `Deployment.apps`, or `Service` for the core group (kubectl's spelling).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            f.write_str(&self.kind)
        } else {
            write!(f, "{}.{}", self.kind, self.group)
        }
    }
}

/// Which applied objects a `holdObjects` gate holds. Every non-empty criterion must match;
/// an empty one matches anything (`objects: {}` holds every object the Kustomization applies).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeldObjects {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<GroupKind>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

impl HeldObjects {
    /// Whether an applied object of `group`/`kind` named `namespace/name` with `labels` is held.
    pub fn matches(
        &self,
        group: &str,
        kind: &str,
        namespace: &str,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> bool {
        (self.kinds.is_empty()
            || self
                .kinds
                .iter()
                .any(|k| k.group == group && k.kind == kind))
            && (self.namespaces.is_empty() || self.namespaces.iter().any(|n| n == namespace))
            && (self.names.is_empty() || self.names.iter().any(|n| n == name))
            && self.selector.as_ref().is_none_or(|s| s.matches(labels))
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
