//! Access policies (`kind: AccessPolicy`): which subjects (OIDC groups,
//! people by email or `sub`, workload identities, API token names) hold which
//! role over which scope (a cluster selector and a gate selector). Declarative
//! manifests, applied and diffed like gates; the hub unions the policies that
//! match a caller. Parsing and validation live here so the hub and the CLI
//! report the same errors, naming the field.

use std::collections::BTreeMap;

use fleetgate_policy::{ClusterScope, LabelSelector, Metadata, PolicyError};
use serde::{Deserialize, Serialize};

use crate::role::Role;

/// The `apiVersion` of an access policy (the gates' one).
pub const API_VERSION: &str = fleetgate_policy::API_VERSION;
/// The `kind` of an access policy.
pub const KIND: &str = "AccessPolicy";

/// An access policy manifest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessPolicy {
    pub api_version: String,
    pub kind: String,
    #[cfg_attr(feature = "utoipa", schema(value_type = Object))]
    pub metadata: Metadata,
    pub spec: AccessPolicySpec,
}

/// Who holds which role where.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessPolicySpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub subjects: Subjects,
    pub role: Role,
    /// Where the role holds; absent: everywhere (an unscoped grant).
    #[serde(default, skip_serializing_if = "AccessScope::is_unscoped")]
    pub scope: AccessScope,
}

/// The callers a policy grants to; any one matching is enough.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subjects {
    /// OIDC groups (the configured groups claim), exactly.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// People, by email (case-insensitive) or by `sub`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub users: Vec<String>,
    /// Workload identities (CI pipelines, service accounts) by issuer,
    /// subject and claims.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadSubject>,
    /// API tokens, by name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
}

/// A workload identity: a JWT from `issuer` whose `sub` is `subject` (when
/// given) and whose claims have every listed value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadSubject {
    pub issuer: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Claim name → required value (string claims; other claims compare
    /// as their JSON text).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
}

/// Where a grant holds: clusters and gates (absent: all of them).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AccessScope {
    /// Clusters by name and/or label selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub clusters: Option<ClusterScope>,
    /// Gates by name and/or a selector over the gate's `metadata.labels`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gates: Option<GateScope>,
}

/// Gates by name or by a selector over their labels (either one matching).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GateScope {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "utoipa", schema(value_type = Option<Object>))]
    pub selector: Option<LabelSelector>,
}

impl GateScope {
    /// Whether the gate named `name` with `labels` is in scope.
    pub fn matches(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.names.iter().any(|n| n == name)
            || self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }
}

impl AccessScope {
    /// No restriction at all.
    pub fn is_unscoped(&self) -> bool {
        self.clusters.is_none() && self.gates.is_none()
    }

    /// Whether the cluster is in scope.
    pub fn cluster(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.clusters
            .as_ref()
            .is_none_or(|c| c.matches(name, labels))
    }

    /// Whether the gate is in scope.
    pub fn gate(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.gates.as_ref().is_none_or(|g| g.matches(name, labels))
    }

    /// Checks names and selectors; paths relative to the scope.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if let Some(c) = &self.clusters {
            selection(&c.names, c.selector.as_ref()).map_err(|e| e.within("clusters"))?;
        }
        if let Some(g) = &self.gates {
            selection(&g.names, g.selector.as_ref()).map_err(|e| e.within("gates"))?;
        }
        Ok(())
    }
}

fn selection(names: &[String], selector: Option<&LabelSelector>) -> Result<(), PolicyError> {
    if names.is_empty() && selector.is_none() {
        return Err(PolicyError::new(
            "",
            "give names, a selector, or both (leave the field out for all)",
        ));
    }
    for (i, n) in names.iter().enumerate() {
        fleetgate_policy::dns_label(n).map_err(|e| e.within(&format!("names[{i}]")))?;
    }
    if let Some(s) = selector {
        s.validate().map_err(|e| e.within("selector"))?;
    }
    Ok(())
}

impl AccessPolicy {
    /// metadata.name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }

    /// Checks the whole manifest; the first error names its field path.
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.api_version != API_VERSION {
            return Err(PolicyError::new(
                "apiVersion",
                format!("must be '{API_VERSION}', got '{}'", self.api_version),
            ));
        }
        if self.kind != KIND {
            return Err(PolicyError::new(
                "kind",
                format!("must be '{KIND}', got '{}'", self.kind),
            ));
        }
        fleetgate_policy::dns_label(&self.metadata.name).map_err(|e| e.within("metadata.name"))?;
        let spec = &self.spec;
        if spec.description.as_ref().is_some_and(|d| d.len() > 1024) {
            return Err(PolicyError::new(
                "spec.description",
                "longer than 1024 characters",
            ));
        }
        let s = &spec.subjects;
        if s.groups.is_empty()
            && s.users.is_empty()
            && s.workloads.is_empty()
            && s.tokens.is_empty()
        {
            return Err(PolicyError::new(
                "spec.subjects",
                "name at least one of groups, users, workloads, tokens",
            ));
        }
        for (field, list) in [("groups", &s.groups), ("users", &s.users)] {
            for (i, v) in list.iter().enumerate() {
                if v.trim().is_empty() || v.len() > 256 {
                    return Err(PolicyError::new(
                        format!("spec.subjects.{field}[{i}]"),
                        "must be 1-256 characters, not blank",
                    ));
                }
            }
        }
        for (i, t) in s.tokens.iter().enumerate() {
            fleetgate_policy::dns_label(t)
                .map_err(|e| e.within(&format!("spec.subjects.tokens[{i}]")))?;
        }
        for (i, w) in s.workloads.iter().enumerate() {
            let at = format!("spec.subjects.workloads[{i}]");
            if !(w.issuer.starts_with("https://") || w.issuer.starts_with("http://")) {
                return Err(PolicyError::new(
                    format!("{at}.issuer"),
                    "must be the issuer URL (https://...)",
                ));
            }
            if w.subject.is_none() && w.claims.is_empty() {
                return Err(PolicyError::new(
                    at,
                    "give a subject or claims: a bare issuer would match every workload it signs for",
                ));
            }
        }
        spec.scope.validate().map_err(|e| e.within("spec.scope"))
    }
}

/// Parses an access policy from YAML or JSON text, errors naming the field.
pub fn parse_access_policy(text: &str) -> Result<AccessPolicy, PolicyError> {
    if text.trim().is_empty() {
        return Err(PolicyError::new("", "empty access policy manifest"));
    }
    fleetgate_policy::yaml::from_str(text)
}

/// An access policy as the hub stores it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct AccessPolicyRecord {
    pub name: String,
    /// Bumped by each replace (`If-Match`).
    pub version: i64,
    pub manifest: AccessPolicy,
    pub created_at: chrono::DateTime<chrono::Utc>,
    pub updated_at: chrono::DateTime<chrono::Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<AccessPolicy, PolicyError> {
        let p = parse_access_policy(text)?;
        p.validate()?;
        Ok(p)
    }

    const OK: &str = r"
apiVersion: fleetgate.io/v1
kind: AccessPolicy
metadata: {name: payments}
spec:
  subjects: {groups: [payments]}
  role: operator
  scope:
    clusters: {selector: {matchLabels: {team: payments}}}
    gates: {names: [payments-window]}
";

    #[test]
    fn examples_are_valid() {
        for text in [
            include_str!("../../examples/access/team-payments.yaml"),
            include_str!("../../examples/access/team-payments-admins.yaml"),
            include_str!("../../examples/access/everyone-views.yaml"),
        ] {
            parse(text).unwrap();
        }
    }

    #[test]
    fn parses_and_matches() {
        let p = parse(OK).unwrap();
        let labels = BTreeMap::from([("team".to_string(), "payments".to_string())]);
        assert!(p.spec.scope.cluster("x", &labels));
        assert!(!p.spec.scope.cluster("x", &BTreeMap::new()));
        assert!(p.spec.scope.gate("payments-window", &BTreeMap::new()));
        assert!(!p.spec.scope.gate("other", &labels));
    }

    #[test]
    fn errors_name_the_field() {
        let bad = |from: &str, to: &str, path: &str| {
            let e = parse(&OK.replace(from, to)).unwrap_err();
            assert_eq!(e.path, path, "{e}");
        };
        bad("role: operator", "role: owner", "spec.role");
        bad("{groups: [payments]}", "{}", "spec.subjects");
        bad(
            "names: [payments-window]",
            "names: [Bad_Name]",
            "spec.scope.gates.names[0]",
        );
        bad(
            "gates: {names: [payments-window]}",
            "gates: {}",
            "spec.scope.gates",
        );
        bad("kind: AccessPolicy", "kind: Gate", "kind");
        bad(
            "{groups: [payments]}",
            "{workloads: [{issuer: 'https://x'}]}",
            "spec.subjects.workloads[0]",
        );
        bad(
            "matchLabels: {team: payments}",
            "matchLabels: {'bad key!': x}",
            "spec.scope.clusters.selector.matchLabels.bad key!",
        );
    }
}
