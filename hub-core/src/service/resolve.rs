//! The one resolver from an authenticated identity to its [`Actor`]: the
//! token's own grant plus every access policy whose subjects match, each
//! grant remembering which policy and which subject granted it. REST, gRPC,
//! the dashboard, SSE and WatchFleet all get their principal from here
//! (`Service::resolve`), so they all see the same permissions.

use fleetgate_api_types::{AccessPolicy, Subjects, WorkloadSubject};
use std::sync::{Arc, Mutex, MutexGuard};

use sqlx::PgConnection;

use super::principal::{Grant, GrantSource, Identity, Person, Workload};
use super::{Actor, Service};
use crate::db::access_policies;
use crate::{Error, Result};

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
    pub async fn resolve_on(&self, conn: &mut PgConnection, identity: Identity) -> Result<Actor> {
        let policies = self.access_policies_now(conn).await?;
        let grants = grants_for(&identity, &policies);
        Actor::from_grants(identity, grants)
    }

    /// Every access policy as committed now, from the replica's copy while
    /// it is current ([`PolicyCache`]).
    pub async fn access_policies_now(
        &self,
        conn: &mut PgConnection,
    ) -> Result<Arc<Vec<AccessPolicy>>> {
        self.policies.current(conn).await
    }
}

/// A replica's parsed copy of every access policy, valid while
/// `fleet_revision.access_policies_version` (set by a trigger on every
/// change, migration 0032) holds the value it was read at. An
/// authentication then costs a one-row read instead of reading and parsing
/// every policy.
#[derive(Debug, Default)]
pub struct PolicyCache(Mutex<Option<(uuid::Uuid, Arc<Vec<AccessPolicy>>)>>);

impl PolicyCache {
    fn lock(&self) -> MutexGuard<'_, Option<(uuid::Uuid, Arc<Vec<AccessPolicy>>)>> {
        // A panicking holder leaves at worst a stale copy, which the version
        // check never hands out.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every policy as committed now. The version is read before the
    /// policies (two statements, the second seeing at least what the first
    /// saw): a change committed in between is kept under the older version
    /// and read again next time, never the other way round.
    pub async fn current(&self, conn: &mut PgConnection) -> Result<Arc<Vec<AccessPolicy>>> {
        let version = access_policies::version(conn).await?;
        if let Some((v, all)) = self.lock().as_ref()
            && *v == version
        {
            return Ok(all.clone());
        }
        let all = Arc::new(
            access_policies::all(conn)
                .await?
                .into_iter()
                .map(|r| stored_policy(&r.manifest))
                .collect::<Result<Vec<_>>>()?,
        );
        *self.lock() = Some((version, all.clone()));
        Ok(all)
    }
}

/// Parses a stored manifest (validated when written).
pub fn stored_policy(manifest: &serde_json::Value) -> Result<AccessPolicy> {
    serde_json::from_value(manifest.clone())
        .map_err(|e| Error::Internal(format!("stored access policy unreadable: {e}")))
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
