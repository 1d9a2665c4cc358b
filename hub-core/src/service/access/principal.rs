//! The principal: who is calling ([`Identity`]: an API token, a person signed
//! in through OIDC, a workload with a JWT from a trusted issuer), what it may
//! do where ([`Grant`]s: role × scope, the union of the access policies that
//! match it, or the token's own role and scope) and what granted each. Every
//! access decision of the hub is one of the methods here, called by the
//! service layer; handlers never decide. `Service::resolve`
//! (`service::access::policies`) turns an identity into an [`Actor`].

use std::collections::BTreeMap;

use fleetgate_api_types::AccessScope;
use fleetgate_policy::ClusterScope;
use serde::Serialize;

use crate::service::Role;
use crate::{Error, Result};

/// A person signed in through the organisation's OpenID Connect provider.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Person {
    pub issuer: String,
    pub sub: String,
    /// Display name (the configured name claim), when the provider sent one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    /// The configured groups claim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
}

/// A machine calling with a JWT from a trusted issuer (a CI pipeline, a
/// Kubernetes service account).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Workload {
    pub issuer: String,
    pub sub: String,
    /// The token's claims (for `workloads[].claims` in access policies).
    #[serde(skip)]
    pub claims: BTreeMap<String, serde_json::Value>,
}

/// An API token, as authentication found it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenIdentity {
    pub name: String,
    /// The token's own role.
    pub role: Role,
    /// The token's own scope (absent: unscoped).
    #[serde(skip_serializing_if = "AccessScope::is_unscoped")]
    pub scope: AccessScope,
}

/// Who is calling, as authentication established it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Identity {
    Token(TokenIdentity),
    Person(Person),
    Workload(Workload),
    /// The hub itself, tests and internal jobs (`Actor::new`).
    System {
        name: String,
    },
}

impl Identity {
    /// The name the audit log and overrides record: the token name; a
    /// person's email, else display name, else `sub`; a workload's `sub`.
    pub fn display(&self) -> String {
        match self {
            Identity::Token(t) => t.name.clone(),
            Identity::Person(p) => p
                .email
                .clone()
                .or_else(|| p.name.clone())
                .unwrap_or_else(|| p.sub.clone()),
            Identity::Workload(w) => w.sub.clone(),
            Identity::System { name } => name.clone(),
        }
    }

    /// `token`, `person`, `workload` or `system`.
    pub fn kind(&self) -> &'static str {
        match self {
            Identity::Token(_) => "token",
            Identity::Person(_) => "person",
            Identity::Workload(_) => "workload",
            Identity::System { .. } => "system",
        }
    }

    /// The issuer and subject of a person or workload.
    pub fn issuer_sub(&self) -> Option<(&str, &str)> {
        match self {
            Identity::Person(p) => Some((&p.issuer, &p.sub)),
            Identity::Workload(w) => Some((&w.issuer, &w.sub)),
            Identity::Token(_) | Identity::System { .. } => None,
        }
    }

    /// A person's groups (none for others).
    pub fn groups(&self) -> &[String] {
        match self {
            Identity::Person(p) => &p.groups,
            _ => &[],
        }
    }
}

/// What granted a [`Grant`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum GrantSource {
    /// The API token's own role and scope.
    Token { name: String },
    /// An access policy, through the subject that matched (`group payments`,
    /// `user alice@example.com`, `workload https://…`, `token ci`).
    Policy { policy: String, via: String },
    /// The hub's own writes, tests.
    System,
}

impl std::fmt::Display for GrantSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GrantSource::Token { name } => write!(f, "token {name}"),
            GrantSource::Policy { policy, via } => write!(f, "policy {policy} ({via})"),
            GrantSource::System => f.write_str("system"),
        }
    }
}

/// One permission: `role` over `scope`, and what granted it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Grant {
    pub role: Role,
    pub scope: AccessScope,
    pub source: GrantSource,
}

/// Who is calling and what it may do: the principal every service method
/// takes.
#[derive(Debug, Clone, PartialEq)]
pub struct Actor {
    /// The name recorded in the audit log and on overrides ([`Identity::display`]).
    pub name: String,
    /// The highest role of any grant (what `whoami` shows).
    pub role: Role,
    pub identity: Identity,
    /// The union of these is what the actor may do; never empty.
    pub grants: Vec<Grant>,
}

/// A gate as access decisions see it.
#[derive(Debug, Clone, Copy)]
pub struct GateRef<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// A cluster as access decisions see it.
#[derive(Debug, Clone, Copy)]
pub struct ClusterRef<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// Which of a gate's clusters an actor may act on.
#[derive(Debug, Clone, PartialEq)]
pub enum Clusters<'a> {
    /// Every cluster.
    All,
    /// Those in any of these scopes (never empty).
    Within(Vec<&'a ClusterScope>),
}

impl Clusters<'_> {
    /// Whether the cluster is covered.
    pub fn contains(&self, c: ClusterRef<'_>) -> bool {
        match self {
            Clusters::All => true,
            Clusters::Within(scopes) => scopes.iter().any(|s| s.matches(c.name, c.labels)),
        }
    }
}

impl Actor {
    /// An unscoped actor with `role` (tests, internal jobs).
    pub fn new(name: impl Into<String>, role: Role) -> Self {
        let name = name.into();
        Self::from_grants(
            Identity::System { name },
            vec![Grant {
                role,
                scope: AccessScope::default(),
                source: GrantSource::System,
            }],
        )
        .unwrap_or_else(|_| unreachable!("one grant"))
    }

    /// The actor of `identity` holding `grants`; 403 if there are none.
    pub fn from_grants(identity: Identity, grants: Vec<Grant>) -> Result<Self> {
        let Some(role) = grants.iter().map(|g| g.role).max() else {
            return Err(Error::Forbidden(format!(
                "{} '{}' is signed in, but no access policy grants it any role",
                identity.kind(),
                identity.display()
            )));
        };
        Ok(Self {
            name: identity.display(),
            role,
            identity,
            grants,
        })
    }

    fn holding(&self, role: Role) -> impl Iterator<Item = &Grant> {
        self.grants.iter().filter(move |g| g.role >= role)
    }

    /// 403 unless some grant has at least `role` (anywhere).
    pub fn require(&self, role: Role) -> Result<()> {
        if self.holding(role).next().is_some() {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{} '{}' has role {}; this needs {role}",
                self.identity.kind(),
                self.name,
                self.role
            )))
        }
    }

    /// Whether some grant has `role` everywhere.
    pub fn is_unscoped(&self, role: Role) -> bool {
        self.holding(role).any(|g| g.scope.is_unscoped())
    }

    /// 403 unless some grant has `role` without a scope: managing tokens,
    /// clusters, access policies and identity settings.
    pub fn require_unscoped(&self, role: Role) -> Result<()> {
        self.require(role)?;
        if self.is_unscoped(role) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "{} '{}' holds {role} only within a scope; this needs an unscoped {role}",
                self.identity.kind(),
                self.name
            )))
        }
    }

    /// The grant with at least `role` that covers `gate` on `cluster`, if any.
    pub fn grant_for(
        &self,
        role: Role,
        gate: GateRef<'_>,
        cluster: ClusterRef<'_>,
    ) -> Option<&Grant> {
        self.holding(role).find(|g| {
            g.scope.gate(gate.name, gate.labels) && g.scope.cluster(cluster.name, cluster.labels)
        })
    }

    /// Whether some grant with at least `role` covers `gate` (on some cluster).
    pub fn covers_gate(&self, role: Role, gate: GateRef<'_>) -> bool {
        self.holding(role)
            .any(|g| g.scope.gate(gate.name, gate.labels))
    }

    /// Whether some grant with at least `role` covers `cluster` (for some gate).
    pub fn covers_cluster(&self, role: Role, cluster: ClusterRef<'_>) -> bool {
        self.holding(role)
            .any(|g| g.scope.cluster(cluster.name, cluster.labels))
    }

    /// The clusters on which the actor holds `role` for `gate`; 403 naming
    /// the gate when there are none.
    pub fn clusters_for(&self, role: Role, gate: GateRef<'_>) -> Result<Clusters<'_>> {
        let mut within = Vec::new();
        for g in self
            .holding(role)
            .filter(|g| g.scope.gate(gate.name, gate.labels))
        {
            match &g.scope.clusters {
                None => return Ok(Clusters::All),
                Some(c) => within.push(c),
            }
        }
        if within.is_empty() {
            self.require(role)?;
            return Err(Error::Forbidden(format!(
                "{} '{}' has no {role} grant for gate '{}'",
                self.identity.kind(),
                self.name,
                gate.name
            )));
        }
        Ok(Clusters::Within(within))
    }

    /// 403 naming the cluster unless the actor holds `role` for `gate` on it.
    pub fn require_on(
        &self,
        role: Role,
        gate: GateRef<'_>,
        cluster: ClusterRef<'_>,
    ) -> Result<&Grant> {
        self.grant_for(role, gate, cluster).ok_or_else(|| {
            Error::Forbidden(format!(
                "{} '{}' has no {role} grant for gate '{}' on cluster '{}'",
                self.identity.kind(),
                self.name,
                gate.name,
                cluster.name
            ))
        })
    }

    /// What reads show this actor: `None` when it sees everything.
    pub fn read_scope(&self) -> Option<ReadScope> {
        if self.is_unscoped(Role::Viewer) {
            return None;
        }
        Some(ReadScope {
            scopes: self.grants.iter().map(|g| g.scope.clone()).collect(),
        })
    }

    /// 403 naming the cluster unless the actor may see it.
    pub fn require_visible_cluster(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.require(Role::Viewer)?;
        if self.read_scope().is_none_or(|r| r.cluster(name, labels)) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "cluster '{name}' is outside the scope of {} '{}'",
                self.identity.kind(),
                self.name
            )))
        }
    }

    /// 403 naming the gate unless the actor may see it.
    pub fn require_visible_gate(
        &self,
        name: &str,
        labels: &BTreeMap<String, String>,
    ) -> Result<()> {
        self.require(Role::Viewer)?;
        if self.read_scope().is_none_or(|r| r.gate(name, labels)) {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "gate '{name}' is outside the scope of {} '{}'",
                self.identity.kind(),
                self.name
            )))
        }
    }

    /// What granted the actor's access, for the audit log: each grant's
    /// source, one per line-free string (`policy payments (group payments)`).
    pub fn granted_by(&self, role: Role) -> Vec<String> {
        let mut out: Vec<String> = self.holding(role).map(|g| g.source.to_string()).collect();
        out.dedup();
        out
    }

    /// The names of the access policies behind the actor's grants.
    pub fn policies(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .grants
            .iter()
            .filter_map(|g| match &g.source {
                GrantSource::Policy { policy, .. } => Some(policy.clone()),
                _ => None,
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

impl Actor {
    /// The audit log's record of who this is and what granted it.
    pub(crate) fn audit_who(&self) -> crate::db::audit::Who {
        let (issuer, subject) = self.identity.issuer_sub().map_or((None, None), |(i, s)| {
            (Some(i.to_string()), Some(s.to_string()))
        });
        let (email, groups) = match &self.identity {
            Identity::Person(p) => (p.email.clone(), Some(p.groups.clone())),
            _ => (None, None),
        };
        let policies = self.policies();
        crate::db::audit::Who {
            kind: Some(self.identity.kind().to_string()),
            issuer,
            subject,
            email,
            groups,
            granted_by: Some(self.grants.iter().map(|g| g.source.to_string()).collect()),
            policies: (!policies.is_empty()).then_some(policies),
        }
    }
}

/// The part of the fleet a scoped actor sees: a (gate, cluster) pair, a
/// gate or a cluster is visible when one of its grants covers it.
#[derive(Debug, Clone, PartialEq)]
pub struct ReadScope {
    scopes: Vec<AccessScope>,
}

impl ReadScope {
    /// Whether one scope describes it all (then every gate and cluster it
    /// sees, it sees in every pair).
    pub fn is_single(&self) -> bool {
        self.scopes.len() <= 1
    }

    /// The access scopes it is the union of.
    pub fn scopes(&self) -> &[AccessScope] {
        &self.scopes
    }

    /// Whether `gate` is visible.
    pub fn gate(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.scopes.iter().any(|s| s.gate(name, labels))
    }

    /// Whether `cluster` is visible.
    pub fn cluster(&self, name: &str, labels: &BTreeMap<String, String>) -> bool {
        self.scopes.iter().any(|s| s.cluster(name, labels))
    }

    /// Whether `gate`'s state on `cluster` is visible.
    pub fn pair(&self, gate: GateRef<'_>, cluster: ClusterRef<'_>) -> bool {
        self.scopes
            .iter()
            .any(|s| s.gate(gate.name, gate.labels) && s.cluster(cluster.name, cluster.labels))
    }
}

#[cfg(test)]
mod tests {
    use fleetgate_api_types::GateScope;
    use fleetgate_policy::LabelSelector;

    use super::*;

    fn labels(team: &str) -> BTreeMap<String, String> {
        BTreeMap::from([("team".to_string(), team.to_string())])
    }

    fn team_scope(team: &str) -> AccessScope {
        AccessScope {
            clusters: Some(ClusterScope {
                names: vec![],
                selector: Some(LabelSelector {
                    match_labels: labels(team),
                    ..LabelSelector::default()
                }),
            }),
            gates: Some(GateScope {
                names: vec![],
                selector: Some(LabelSelector {
                    match_labels: labels(team),
                    ..LabelSelector::default()
                }),
            }),
        }
    }

    fn person(grants: Vec<(Role, AccessScope)>) -> Actor {
        let identity = Identity::Person(Person {
            issuer: "https://idp".into(),
            sub: "u1".into(),
            name: Some("Alice".into()),
            email: Some("alice@example.com".into()),
            groups: vec!["payments".into()],
        });
        let grants = grants
            .into_iter()
            .map(|(role, scope)| Grant {
                role,
                scope,
                source: GrantSource::Policy {
                    policy: "p".into(),
                    via: "group payments".into(),
                },
            })
            .collect();
        Actor::from_grants(identity, grants).unwrap()
    }

    #[test]
    fn union_of_grants() {
        let a = person(vec![
            (Role::Operator, team_scope("payments")),
            (Role::Viewer, AccessScope::default()),
        ]);
        assert_eq!(a.name, "alice@example.com");
        assert_eq!(a.role, Role::Operator);
        let (pay, web) = (labels("payments"), labels("web"));
        let gate = GateRef {
            name: "g",
            labels: &pay,
        };
        let other_gate = GateRef {
            name: "h",
            labels: &web,
        };
        let in_c = ClusterRef {
            name: "c1",
            labels: &pay,
        };
        let out_c = ClusterRef {
            name: "c2",
            labels: &web,
        };
        assert!(a.require_on(Role::Operator, gate, in_c).is_ok());
        assert!(a.require_on(Role::Operator, gate, out_c).is_err());
        assert!(a.require_on(Role::Operator, other_gate, in_c).is_err());
        assert!(
            a.read_scope().is_none(),
            "an unscoped viewer grant sees all"
        );
        assert!(a.require_unscoped(Role::Admin).is_err());
        let Clusters::Within(w) = a.clusters_for(Role::Operator, gate).unwrap() else {
            panic!("scoped")
        };
        assert_eq!(w.len(), 1);
        assert!(a.clusters_for(Role::Operator, other_gate).is_err());
    }

    #[test]
    fn scoped_reads_and_no_grants() {
        let a = person(vec![(Role::Viewer, team_scope("payments"))]);
        let r = a.read_scope().unwrap();
        let (pay, web) = (labels("payments"), labels("web"));
        assert!(r.cluster("c", &pay) && !r.cluster("c", &web));
        assert!(r.pair(
            GateRef {
                name: "g",
                labels: &pay
            },
            ClusterRef {
                name: "c",
                labels: &pay
            }
        ));
        assert!(!r.pair(
            GateRef {
                name: "g",
                labels: &pay
            },
            ClusterRef {
                name: "c",
                labels: &web
            }
        ));
        let none = Actor::from_grants(Identity::System { name: "x".into() }, vec![]);
        assert!(matches!(none, Err(Error::Forbidden(_))));
    }
}
