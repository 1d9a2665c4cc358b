//! API token operations (unscoped admins only): create with a role and an
//! optional scope (secret shown once), list, revoke.

use uuid::Uuid;

use crate::auth::{API_TOKEN_PREFIX, generate_token, hash_token};
use crate::db::revision::Affected;
use crate::db::tokens;
use crate::service::types::{ApiToken, ApiTokenWithSecret, CreateToken};
use crate::service::{Actor, Audit, Page, PageRequest, Role, Service, Written, to_json};
use crate::{Error, Result, validate};

impl Service {
    /// Lists API tokens by name (admin).
    pub async fn list_tokens(&self, actor: &Actor, page: &PageRequest) -> Result<Page<ApiToken>> {
        actor.require_unscoped(Role::Admin)?;
        let limit = page.limit()?;
        let after: Option<String> = page.key()?;
        let mut conn = self.conn().await?;
        let rows = tokens::list(&mut conn, after.as_deref(), i64::from(limit) + 1).await?;
        Ok(crate::service::page::from_rows(
            rows,
            limit,
            |r| r.name.clone(),
            Into::into,
        ))
    }

    /// Creates an API token (admin); the secret is returned only here.
    pub async fn create_token(
        &self,
        actor: &Actor,
        req: CreateToken,
        reason: Option<&str>,
    ) -> Result<ApiTokenWithSecret> {
        actor.require_unscoped(Role::Admin)?;
        validate::dns_label("name", &req.name)?;
        let role: Role =
            req.role
                .parse()
                .map_err(|e: fleetgate_api_types::records::UnknownRole| {
                    Error::invalid("role", e.to_string())
                })?;
        validate::optional_reason("reason", reason)?;
        let scope = req.scope.as_ref().filter(|s| !s.is_unscoped());
        if let Some(s) = scope {
            s.validate().map_err(|e| {
                let e = e.within("scope");
                Error::invalid(e.path, e.message)
            })?;
        }
        let secret = generate_token(API_TOKEN_PREFIX);
        let now = self.now();
        let (req, secret_hash) = (&req, &hash_token(&secret));
        let (token, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let row = tokens::insert(tx, &req.name, role.as_str(), scope, secret_hash, now)
                        .await?;
                    Ok(token_written(row, "api_token.create", None, reason))
                })
            })
            .await?;
        Ok(ApiTokenWithSecret { token, secret })
    }

    /// Revokes an API token (admin); it fails authentication from now on.
    /// Revoking a revoked token is a no-op.
    pub async fn revoke_token(
        &self,
        actor: &Actor,
        id: Uuid,
        reason: Option<&str>,
    ) -> Result<ApiToken> {
        actor.require_unscoped(Role::Admin)?;
        validate::optional_reason("reason", reason)?;
        let now = self.now();
        let (token, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = tokens::get_for_update(tx, id)
                        .await?
                        .ok_or_else(|| Error::not_found("api_token", id.to_string()))?;
                    if old.revoked_at.is_some() {
                        return Ok(Written::unchanged(old.into()));
                    }
                    let row = tokens::revoke(tx, id, now).await?;
                    let before = to_json(&ApiToken::from(old));
                    Ok(token_written(row, "api_token.revoke", before, reason))
                })
            })
            .await?;
        Ok(token)
    }
}

/// A token written as `row`, audited as `action` with the token before and
/// after; tokens change no cluster's desired state.
fn token_written(
    row: tokens::TokenRow,
    action: &'static str,
    before: Option<serde_json::Value>,
    reason: Option<&str>,
) -> Written<ApiToken> {
    let token = ApiToken::from(row);
    let audit = Audit {
        action,
        target_kind: "api_token",
        target_name: token.name.clone(),
        before,
        after: to_json(&token),
        reason: reason.map(Into::into),
    };
    Written::changed(token, audit, Affected::Clusters(Vec::new()))
}
