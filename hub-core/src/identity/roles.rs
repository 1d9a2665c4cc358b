//! From a signed-in person or workload to the service layer's `Actor`:
//! the access-policy resolver (`service::access::resolve`) decides, and the
//! settings file's `roles` list counts as one more, unscoped policy named
//! `identity-config` (group, subject or email → role), so a hub without
//! access policies can still let its people in. `defaultRole` grants every
//! signed-in identity that role.

use fleetgate_api_types::{AccessScope, IdentityKind};
use serde_json::{Map, Value};

use super::config::{IdentityConfig, RoleGrant};
use crate::Result;
use crate::service::access::principal::{Grant, GrantSource, Identity, Person, Workload};
use crate::service::access::resolve::grants_for;
use crate::service::{Actor, Service};

/// The policy name config grants carry in the audit log.
pub const CONFIG_POLICY: &str = "identity-config";

impl Service {
    /// The actor of an authenticated person or workload (with its token's
    /// claims, for workload policies); 403 when nothing grants it a role.
    pub async fn actor_of(
        &self,
        who: &fleetgate_api_types::Identity,
        claims: &Map<String, Value>,
    ) -> Result<Actor> {
        let identity = principal_of(who, claims);
        let mut conn = self.conn().await?;
        let policies = self.access_policies_now(&mut conn).await?;
        drop(conn);
        let mut grants = grants_for(&identity, &policies);
        grants.extend(config_grants(&self.identities().config, who));
        Actor::from_grants(identity, grants)
    }
}

/// The service layer's identity of `who`.
pub fn principal_of(who: &fleetgate_api_types::Identity, claims: &Map<String, Value>) -> Identity {
    match who.kind {
        IdentityKind::Person => Identity::Person(Person {
            issuer: who.issuer.clone(),
            sub: who.subject.clone(),
            name: Some(who.name.clone()),
            email: who.email.clone(),
            groups: who.groups.clone(),
        }),
        IdentityKind::Workload => Identity::Workload(Workload {
            issuer: who.issuer.clone(),
            sub: who.subject.clone(),
            claims: claims.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        }),
    }
}

/// The grants of the settings file's `roles` (and `defaultRole`) for `who`.
pub fn config_grants(config: &IdentityConfig, who: &fleetgate_api_types::Identity) -> Vec<Grant> {
    let grant = |role, via: String| Grant {
        role,
        scope: AccessScope::default(),
        source: GrantSource::Policy {
            policy: CONFIG_POLICY.into(),
            via,
        },
    };
    let mut out: Vec<Grant> = config
        .roles
        .iter()
        .filter_map(|g| matches(g, who).map(|via| grant(g.role, via)))
        .collect();
    if let Some(role) = config.default_role {
        out.push(grant(role, "defaultRole".into()));
    }
    out
}

fn matches(g: &RoleGrant, who: &fleetgate_api_types::Identity) -> Option<String> {
    if let Some(group) = &g.group {
        return who.groups.contains(group).then(|| format!("group {group}"));
    }
    if let Some(subject) = &g.subject {
        return (*subject == who.subject).then(|| format!("subject {subject}"));
    }
    let email = g.email.as_ref()?;
    who.email
        .as_deref()
        .is_some_and(|e| e.eq_ignore_ascii_case(email))
        .then(|| format!("user {email}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetgate_api_types::Role;

    fn who(groups: &[&str]) -> fleetgate_api_types::Identity {
        fleetgate_api_types::Identity {
            kind: IdentityKind::Person,
            issuer: "https://idp".into(),
            subject: "u1".into(),
            name: "Ann".into(),
            email: Some("ann@example.com".into()),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        }
    }

    fn best(c: &IdentityConfig, w: &fleetgate_api_types::Identity) -> Option<Role> {
        config_grants(c, w).iter().map(|g| g.role).max()
    }

    #[test]
    fn config_roles_grant_by_group_subject_email_and_default() {
        let c = IdentityConfig::parse(
            "roles: [{group: sre, role: operator}, {email: ANN@example.com, role: admin}, {group: dev, role: viewer}]",
        )
        .unwrap();
        assert_eq!(best(&c, &who(&["dev"])), Some(Role::Admin));
        let c = IdentityConfig::parse(
            "roles: [{group: sre, role: operator}, {group: dev, role: viewer}]",
        )
        .unwrap();
        assert_eq!(best(&c, &who(&["dev", "sre"])), Some(Role::Operator));
        assert_eq!(best(&c, &who(&["x"])), None);
        let c = IdentityConfig::parse("defaultRole: viewer").unwrap();
        assert_eq!(best(&c, &who(&[])), Some(Role::Viewer));
        let g = &config_grants(&c, &who(&[]))[0];
        assert_eq!(g.source.to_string(), "policy identity-config (defaultRole)");
    }
}
