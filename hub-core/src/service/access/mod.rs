//! Authentication: API tokens → [`Actor`], spoke tokens → cluster, and the
//! idempotent bootstrap admin token from `FLEETGATE_ADMIN_TOKEN`.

pub mod api_tokens;
pub mod policies;
pub mod policy_cache;
pub mod principal;
pub mod resolve;

use super::types::ApiToken;
use super::types::Cluster;
use super::{Actor, Audit, Identity, Role, Service, TokenIdentity, Written, to_json};
use crate::auth::{hash_token, hashes_equal};
use crate::db::revision::Affected;
use crate::db::{clusters, tokens};
use crate::identity::sessions::Authenticated;
use crate::identity::token::looks_like_jwt;
use crate::{Error, Result};

/// Name of the token ensured from `FLEETGATE_ADMIN_TOKEN`.
pub const BOOTSTRAP_TOKEN_NAME: &str = "bootstrap-admin";
/// Advisory lock key serialising the bootstrap token across replicas.
const BOOTSTRAP_LOCK: i64 = 7_242_001;
/// Actor recorded for the hub's own writes (bootstrap).
pub const SYSTEM_ACTOR: &str = "system";

/// What a caller presents.
#[derive(Debug, Clone)]
pub enum Credential {
    /// `Authorization: Bearer`: an API token or a JWT of a trusted issuer.
    Bearer(String),
    /// The dashboard's session cookie.
    Session(String),
}

impl Service {
    /// The caller behind a credential, with the person or workload behind
    /// it; 401 if unknown, revoked or expired.
    pub async fn authenticate(&self, credential: &Credential) -> Result<Authenticated> {
        match credential {
            Credential::Bearer(token) if looks_like_jwt(token) => {
                self.authenticate_jwt(token).await
            }
            Credential::Bearer(token) => Ok(Authenticated {
                actor: self.authenticate_api(token).await?,
                identity: None,
                csrf: None,
                session: None,
            }),
            Credential::Session(secret) => self.authenticate_session(secret).await,
        }
    }

    /// The actor behind an API token (its own role and scope plus the access
    /// policies naming it, see [`Service::resolve`]); 401 if unknown or revoked.
    pub async fn authenticate_api(&self, token: &str) -> Result<Actor> {
        if looks_like_jwt(token) {
            return self.authenticate_jwt(token).await.map(|a| a.actor);
        }
        let presented = hash_token(token);
        let mut conn = self.conn().await?;
        let found = tokens::by_hash(&mut conn, &presented).await?;
        match found {
            Some((row, stored)) if hashes_equal(&stored, &presented) => {
                if row.revoked_at.is_some() {
                    return Err(Error::Unauthenticated("API token revoked".into()));
                }
                let role = row.role.parse::<Role>().map_err(|_| {
                    Error::Internal(format!("token '{}' has unknown role", row.name))
                })?;
                let scope = row.scope.map(|s| s.0).unwrap_or_default();
                let identity = Identity::Token(TokenIdentity {
                    name: row.name,
                    role,
                    scope,
                });
                self.resolve_on(&mut conn, identity).await
            }
            _ => Err(Error::Unauthenticated("unknown API token".into())),
        }
    }

    /// The cluster a spoke token belongs to; 401 if unknown (or rotated).
    pub async fn authenticate_spoke(&self, token: &str) -> Result<Cluster> {
        let presented = hash_token(token);
        let mut conn = self.conn().await?;
        match clusters::by_token_hash(&mut conn, &presented, self.now()).await? {
            Some((row, stored)) if hashes_equal(&stored, &presented) => Ok(row),
            _ => Err(Error::Unauthenticated("unknown spoke token".into())),
        }
    }

    /// Ensures an admin token named `bootstrap-admin` with this secret exists
    /// and is not revoked. Writes (and audits) only when something changes.
    pub async fn ensure_admin_token(&self, secret: &str) -> Result<()> {
        if secret.len() < 16 {
            return Err(Error::invalid(
                "FLEETGATE_ADMIN_TOKEN",
                "must be at least 16 characters",
            ));
        }
        let hash = hash_token(secret);
        let now = self.now();
        let actor = Actor::new(SYSTEM_ACTOR, Role::Admin);
        let hash = &hash;
        self.write(&actor, now, |tx| {
            Box::pin(async move {
                // Serialise concurrent replicas starting at once.
                crate::db::advisory_xact_lock(tx, BOOTSTRAP_LOCK).await?;
                let existing = tokens::by_name_for_update(tx, BOOTSTRAP_TOKEN_NAME).await?;
                let (action, before, row) = match existing {
                    Some((row, stored))
                        if hashes_equal(&stored, hash)
                            && row.revoked_at.is_none()
                            && row.role == Role::Admin.as_str()
                            && row.scope.is_none() =>
                    {
                        return Ok(Written::unchanged(()));
                    }
                    Some((row, _)) => {
                        let before = to_json(&ApiToken::from(row.clone()));
                        let new = tokens::reset(tx, row.id, Role::Admin.as_str(), hash).await?;
                        ("api_token.reset", before, new)
                    }
                    None => {
                        let new = tokens::insert(
                            tx,
                            BOOTSTRAP_TOKEN_NAME,
                            Role::Admin.as_str(),
                            None,
                            hash,
                            now,
                        )
                        .await?;
                        ("api_token.create", None, new)
                    }
                };
                let audit = Audit {
                    action,
                    target_kind: "api_token",
                    target_name: BOOTSTRAP_TOKEN_NAME.into(),
                    before,
                    after: to_json(&ApiToken::from(row)),
                    reason: Some("FLEETGATE_ADMIN_TOKEN at hub start".into()),
                };
                Ok(Written::changed((), audit, Affected::Clusters(Vec::new())))
            })
        })
        .await?;
        Ok(())
    }
}
