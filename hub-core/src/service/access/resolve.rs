//! The one resolver from an authenticated identity to its [`Actor`]: the
//! token's own grant plus every access policy whose subjects match, each
//! grant remembering which policy and which subject granted it. REST, gRPC,
//! the dashboard, SSE and WatchFleet all get their principal from here
//! (`Service::resolve`), so they all see the same permissions.

use fleetgate_api_types::{AccessPolicy, Subjects, WorkloadSubject};
use std::sync::Arc;

use sqlx::PgConnection;

pub use super::policy_cache::PolicyCache;
pub(crate) use super::policy_cache::stored_policy;
use crate::Result;
use crate::service::access::principal::{Grant, GrantSource, Identity, Person, Workload};
use crate::service::{Actor, Service};

impl Service {
    /// The actor of an authenticated `identity`: its grants are the union of
    /// the matching access policies (and a token's own role and scope). 403
    /// when nothing grants it anything. The identity engineer's sign-in,
    /// sessions and bearer-JWT validation call this with the person or
    /// workload they authenticated; API tokens come here through
    /// [`Service::authenticate_api`].
    pub async fn resolve(&self, identity: Identity) -> Result<Actor> {
        let mut conn = self.conn().await?;
        self.resolve_on(&mut conn, identity).await
    }

    /// [`Service::resolve`] on a connection the caller holds (one connection
    /// per authentication: a burst of requests must not wait on the pool for a
    /// second one while holding the first).
    pub(crate) async fn resolve_on(
        &self,
        conn: &mut PgConnection,
        identity: Identity,
    ) -> Result<Actor> {
        let policies = self.access_policies_now(conn).await?;
        let grants = grants_for(&identity, &policies);
        Actor::from_grants(identity, grants)
    }

    /// Every access policy as committed now, from the replica's copy while
    /// it is current ([`PolicyCache`]).
    pub(crate) async fn access_policies_now(
        &self,
        conn: &mut PgConnection,
    ) -> Result<Arc<Vec<AccessPolicy>>> {
        self.policies.current(conn).await
    }
}

/// The grants `identity` holds under `policies`: a token's own first, then
/// one per matching policy, in policy order.
pub fn grants_for(identity: &Identity, policies: &[AccessPolicy]) -> Vec<Grant> {
    let mut grants = Vec::new();
    if let Identity::Token(t) = identity {
        grants.push(Grant {
            role: t.role,
            scope: t.scope.clone(),
            source: GrantSource::Token {
                name: t.name.clone(),
            },
        });
    }
    for p in policies {
        if let Some(via) = matching_subject(identity, &p.spec.subjects) {
            grants.push(Grant {
                role: p.spec.role,
                scope: p.spec.scope.clone(),
                source: GrantSource::Policy {
                    policy: p.name().to_string(),
                    via,
                },
            });
        }
    }
    grants
}

/// The first subject of `subjects` that `identity` is, as `group payments`,
/// `user alice@example.com`, `workload <issuer> <sub>` or `token ci`.
fn matching_subject(identity: &Identity, subjects: &Subjects) -> Option<String> {
    match identity {
        Identity::Token(t) => subjects
            .tokens
            .iter()
            .find(|n| **n == t.name)
            .map(|n| format!("token {n}")),
        Identity::Person(p) => person_subject(p, subjects),
        Identity::Workload(w) => subjects
            .workloads
            .iter()
            .find(|s| workload_matches(w, s))
            .map(|_| format!("workload {} {}", w.issuer, w.sub)),
        Identity::System { .. } => None,
    }
}

fn person_subject(p: &Person, subjects: &Subjects) -> Option<String> {
    let user = subjects.users.iter().find(|u| {
        **u == p.sub
            || p.email
                .as_deref()
                .is_some_and(|e| e.eq_ignore_ascii_case(u))
    });
    if let Some(u) = user {
        return Some(format!("user {u}"));
    }
    subjects
        .groups
        .iter()
        .find(|g| p.groups.contains(g))
        .map(|g| format!("group {g}"))
}

fn workload_matches(w: &Workload, s: &WorkloadSubject) -> bool {
    s.issuer == w.issuer
        && s.subject.as_ref().is_none_or(|sub| *sub == w.sub)
        && s.claims.iter().all(|(k, want)| {
            w.claims.get(k).is_some_and(|v| match v {
                serde_json::Value::String(s) => s == want,
                other => serde_json::from_str::<serde_json::Value>(want).is_ok_and(|w| w == *other),
            })
        })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use fleetgate_api_types::{AccessScope, Role, parse_access_policy};

    use super::super::principal::TokenIdentity;
    use super::*;

    fn policy(text: &str) -> AccessPolicy {
        let p = parse_access_policy(text).unwrap();
        p.validate().unwrap();
        p
    }

    fn policies() -> Vec<AccessPolicy> {
        vec![
            policy(
                "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {name: payments}\n\
                 spec: {subjects: {groups: [payments], users: [bob@example.com]}, role: operator,\n\
                 scope: {clusters: {selector: {matchLabels: {team: payments}}}}}",
            ),
            policy(
                "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {name: ci}\n\
                 spec: {subjects: {workloads: [{issuer: 'https://token.actions.githubusercontent.com',\n\
                 claims: {repository: acme/payments}}], tokens: [deployer]}, role: viewer}",
            ),
        ]
    }

    fn person(email: &str, groups: &[&str]) -> Identity {
        Identity::Person(Person {
            issuer: "https://idp".into(),
            sub: "s-1".into(),
            name: None,
            email: Some(email.into()),
            groups: groups.iter().map(|g| g.to_string()).collect(),
        })
    }

    #[test]
    fn people_match_by_group_or_user() {
        let ps = policies();
        let g = grants_for(&person("alice@example.com", &["payments"]), &ps);
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].role, Role::Operator);
        assert_eq!(g[0].source.to_string(), "policy payments (group payments)");
        let g = grants_for(&person("BOB@example.com", &[]), &ps);
        assert_eq!(
            g[0].source.to_string(),
            "policy payments (user bob@example.com)"
        );
        assert!(grants_for(&person("eve@example.com", &["web"]), &ps).is_empty());
    }

    #[test]
    fn workloads_match_issuer_and_claims() {
        let ps = policies();
        let wl = |repo: &str| {
            Identity::Workload(Workload {
                issuer: "https://token.actions.githubusercontent.com".into(),
                sub: "repo:acme/payments:ref:refs/heads/main".into(),
                claims: BTreeMap::from([("repository".to_string(), serde_json::json!(repo))]),
            })
        };
        assert_eq!(grants_for(&wl("acme/payments"), &ps).len(), 1);
        assert!(grants_for(&wl("acme/other"), &ps).is_empty());
    }

    #[test]
    fn tokens_keep_their_own_grant_and_add_policies() {
        let ps = policies();
        let t = |name: &str| {
            Identity::Token(TokenIdentity {
                name: name.into(),
                role: Role::Operator,
                scope: AccessScope::default(),
            })
        };
        let g = grants_for(&t("deployer"), &ps);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].source.to_string(), "token deployer");
        assert_eq!(grants_for(&t("other"), &ps).len(), 1);
    }
}
