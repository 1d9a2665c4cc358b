//! INTERIM: which role an identity gets, from the settings file's `roles`
//! list (group, subject or email → role; the highest match wins; else
//! `defaultRole`; else refused). Access policies (the teams work) replace
//! this one function with their resolver; nothing else decides a role.

use fleetgate_api_types::Identity;

use super::config::{IdentityConfig, RoleGrant};
use crate::service::Actor;
use crate::{Error, Result};

/// The actor for `identity`, or 403 when no grant names it.
pub fn actor_for(config: &IdentityConfig, identity: &Identity) -> Result<Actor> {
    let role = config
        .roles
        .iter()
        .filter(|g| grants(g, identity))
        .map(|g| g.role)
        .max()
        .or(config.default_role)
        .ok_or_else(|| {
            Error::Forbidden(format!(
                "{} is signed in but has no role on this hub: ask an admin to grant one of your groups ({}) a role",
                identity.audit_name(),
                if identity.groups.is_empty() {
                    "none".to_string()
                } else {
                    identity.groups.join(", ")
                }
            ))
        })?;
    Ok(Actor::new(identity.audit_name(), role))
}

fn grants(g: &RoleGrant, identity: &Identity) -> bool {
    if let Some(group) = &g.group {
        return identity.groups.iter().any(|x| x == group);
    }
    if let Some(subject) = &g.subject {
        return *subject == identity.subject;
    }
    if let Some(email) = &g.email {
        return identity
            .email
            .as_deref()
            .is_some_and(|e| e.eq_ignore_ascii_case(email));
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetgate_api_types::{IdentityKind, Role};

    fn who(groups: &[&str]) -> Identity {
        Identity {
            kind: IdentityKind::Person,
            issuer: "https://idp".into(),
            subject: "u1".into(),
            name: "Ann".into(),
            email: Some("ann@example.com".into()),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    #[test]
    fn highest_grant_wins_then_default_then_refused() {
        let c = IdentityConfig::parse(
            "roles: [{group: sre, role: operator}, {email: ANN@example.com, role: admin}, {group: dev, role: viewer}]",
        )
        .unwrap();
        assert_eq!(actor_for(&c, &who(&["dev"])).unwrap().role, Role::Admin);
        let c = IdentityConfig::parse(
            "roles: [{group: sre, role: operator}, {group: dev, role: viewer}]",
        )
        .unwrap();
        assert_eq!(
            actor_for(&c, &who(&["dev", "sre"])).unwrap().role,
            Role::Operator
        );
        assert!(matches!(
            actor_for(&c, &who(&["x"])),
            Err(Error::Forbidden(_))
        ));
        let c = IdentityConfig::parse("defaultRole: viewer").unwrap();
        let a = actor_for(&c, &who(&[])).unwrap();
        assert_eq!(a.role, Role::Viewer);
        assert_eq!(a.name, "Ann <ann@example.com> (u1@https://idp)");
    }
}
