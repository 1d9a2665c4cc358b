//! `spec.objects` of a `holdObjects` gate: which objects *inside* the targeted Kustomizations
//! are held (by group/kind, namespace, name and labels), and the limits of holding them, in
//! words for `gate validate` and previews.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use crate::LabelSelector;

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
