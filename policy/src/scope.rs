//! Which clusters a gate or a rollout wave applies to.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::selector::LabelSelector;

/// Which clusters a gate applies to: listed by name, or matched by a selector over cluster labels.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterScope {
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

impl ClusterScope {
    /// In scope if the name is listed, or a selector is present and matches (`{}` matches all).
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.names.iter().any(|n| n == name)
            || self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}
