//! `--held-kinds`: the kinds whose objects holdObjects gates may mark on this
//! cluster, as `group/version/Kind` (`apps/v1/Deployment`, `v1/ConfigMap`).
//! The list is explicit so the spoke's RBAC can be too (deploy/spoke's
//! `hold-objects` component grants patch on exactly these), and it is fixed
//! for the process: a mark is never stranded because its kind stopped being
//! watched when a gate was edited.

use std::{fmt, str::FromStr};

use fleetgate_policy::GroupKind;

/// One enabled kind, with the version to watch it at.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeldKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl HeldKind {
    pub fn group_kind(&self) -> GroupKind {
        GroupKind::new(self.group.clone(), self.kind.clone())
    }
}

impl fmt::Display for HeldKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.kind)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.kind)
        }
    }
}

impl FromStr for HeldKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let parts: Vec<&str> = s.trim().split('/').collect();
        let (group, version, kind) = match parts.as_slice() {
            [version, kind] => ("", *version, *kind),
            [group, version, kind] => (*group, *version, *kind),
            _ => {
                return Err(format!(
                    "'{s}': expected group/version/Kind (apps/v1/Deployment) or version/Kind (v1/ConfigMap)"
                ));
            }
        };
        if version.is_empty()
            || kind.is_empty()
            || !kind.starts_with(|c: char| c.is_ascii_uppercase())
        {
            return Err(format!(
                "'{s}': expected group/version/Kind with the Kind capitalised (apps/v1/Deployment)"
            ));
        }
        Ok(HeldKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_core_and_grouped_kinds() {
        let d: HeldKind = "apps/v1/Deployment".parse().unwrap();
        assert_eq!(d.group_kind(), GroupKind::new("apps", "Deployment"));
        assert_eq!(d.to_string(), "apps/v1/Deployment");
        let c: HeldKind = "v1/ConfigMap".parse().unwrap();
        assert_eq!(c.group, "");
        assert_eq!(c.to_string(), "v1/ConfigMap");
        assert!("Deployment".parse::<HeldKind>().is_err());
        assert!("apps/v1/deployments".parse::<HeldKind>().is_err());
    }
}
