//! `spec.approval`: overrides of the chosen states (by default: opening) wait for other
//! people's approval at the hub before they exist. Closing stays instant unless a gate asks
//! otherwise ("closing never waits"). Only the shape and its validation live here; the hub
//! keeps the pending requests and decides who may approve.

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::{GateState, PolicyError};

/// How long a pending request waits for its approvals when `expires` is not set.
pub const DEFAULT_APPROVAL_EXPIRY: Duration = Duration::hours(24);
/// The longest `expires`: a change nobody approved in a week is stale.
pub const MAX_APPROVAL_EXPIRY: Duration = Duration::hours(168);
/// The most approvers a gate may ask for.
pub const MAX_APPROVERS: u32 = 10;

/// A gate's approval rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approval {
    /// How many people other than the requester must approve (default 1).
    #[serde(default = "one")]
    pub approvers: u32,
    /// Who may approve, besides needing operator or higher over the gate and its clusters;
    /// absent: anyone with that role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Approvers>,
    /// Which override states need approval (default `[open]`).
    #[serde(rename = "for", default = "open_only")]
    pub states: Vec<GateState>,
    /// How long a request waits for its approvals (Go-style duration, default 24h, at most 168h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
}

/// Who may approve: a person in one of `groups`, a person whose email or subject is in
/// `users`, or an API token named in `tokens`. Any match is enough.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Approvers {
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub groups: Vec<String>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub users: Vec<String>,
    #[serde(
        default,
        deserialize_with = "crate::yaml::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub tokens: Vec<String>,
}

fn one() -> u32 {
    1
}

fn open_only() -> Vec<GateState> {
    vec![GateState::Open]
}

impl Approval {
    /// Whether an override to `state` needs approval.
    pub fn requires(&self, state: GateState) -> bool {
        self.states.contains(&state)
    }

    /// How long a request waits (`expires`, else the default). Call after validation.
    pub fn expiry(&self) -> Duration {
        self.expires
            .as_deref()
            .and_then(|e| crate::parse_duration(e).ok())
            .unwrap_or(DEFAULT_APPROVAL_EXPIRY)
    }

    /// Checks the rule; paths are relative to `spec.approval`.
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        if self.approvers == 0 || self.approvers > MAX_APPROVERS {
            return Err(PolicyError::new(
                "approvers",
                format!("must be 1 to {MAX_APPROVERS}, got {}", self.approvers),
            ));
        }
        if self.states.is_empty() {
            return Err(PolicyError::new(
                "for",
                "name the override states that need approval (open, closed), or remove approval",
            ));
        }
        for (i, s) in self.states.iter().enumerate() {
            if self.states[..i].contains(s) {
                return Err(PolicyError::new(
                    format!("for[{i}]"),
                    format!("duplicate '{s}'"),
                ));
            }
        }
        if let Some(e) = &self.expires {
            let d = crate::parse_duration(e).map_err(|err| err.within("expires"))?;
            if d <= Duration::zero() || d > MAX_APPROVAL_EXPIRY {
                return Err(PolicyError::new(
                    "expires",
                    format!(
                        "must be more than 0 and at most {}, got '{e}'",
                        crate::format_duration(MAX_APPROVAL_EXPIRY)
                    ),
                ));
            }
        }
        if let Some(from) = &self.from {
            if from.groups.is_empty() && from.users.is_empty() && from.tokens.is_empty() {
                return Err(PolicyError::new(
                    "from",
                    "give groups, users or tokens, or leave from out (anyone with operator or higher)",
                ));
            }
            for (field, list) in [
                ("groups", &from.groups),
                ("users", &from.users),
                ("tokens", &from.tokens),
            ] {
                for (i, v) in list.iter().enumerate() {
                    let path = format!("from.{field}[{i}]");
                    if v.trim().is_empty() {
                        return Err(PolicyError::new(path, "must not be empty"));
                    }
                    if list[..i].contains(v) {
                        return Err(PolicyError::new(path, format!("duplicate '{v}'")));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::parse_gate;

    fn gate(approval: &str) -> Result<crate::Gate, crate::PolicyError> {
        let g = parse_gate(&format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{selector: {{}}}}\n  approval: {approval}\n"
        ))?;
        g.validate()?;
        Ok(g)
    }

    #[test]
    fn defaults_need_one_approver_for_opening() {
        let g = gate("{}").unwrap();
        let a = g.spec.approval.unwrap();
        assert_eq!(a.approvers, 1);
        assert!(a.requires(crate::GateState::Open));
        assert!(!a.requires(crate::GateState::Closed));
        assert_eq!(a.expiry(), chrono::Duration::hours(24));
    }

    #[test]
    fn full_shape() {
        let g = gate("{approvers: 2, from: {groups: [sre]}, for: [open, closed], expires: 1h}")
            .unwrap();
        let a = g.spec.approval.unwrap();
        assert_eq!(a.approvers, 2);
        assert_eq!(a.from.as_ref().unwrap().groups, ["sre"]);
        assert!(a.requires(crate::GateState::Closed));
        assert_eq!(a.expiry(), chrono::Duration::hours(1));
    }

    #[test]
    fn errors_name_the_field() {
        for (input, path) in [
            ("{approvers: 0}", "spec.approval.approvers"),
            ("{approvers: 11}", "spec.approval.approvers"),
            ("{for: []}", "spec.approval.for"),
            ("{for: [open, open]}", "spec.approval.for[1]"),
            ("{expires: 0s}", "spec.approval.expires"),
            ("{expires: 200h}", "spec.approval.expires"),
            ("{expires: soon}", "spec.approval.expires"),
            ("{from: {}}", "spec.approval.from"),
            ("{from: {groups: ['']}}", "spec.approval.from.groups[0]"),
            ("{from: {users: [a, a]}}", "spec.approval.from.users[1]"),
        ] {
            let err = gate(input).unwrap_err();
            assert_eq!(err.path, path, "{input}: {err}");
        }
        let err = gate("{approver: 1}").unwrap_err();
        assert!(err.to_string().contains("approver"), "{err}");
    }
}
