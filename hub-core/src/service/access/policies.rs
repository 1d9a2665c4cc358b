//! Access policy operations (unscoped admins only): list, get, apply (create
//! or replace, optionally guarded by the version), delete. Each write is one
//! audited transaction; the next request of every principal is resolved
//! against the new set (`service::access::resolve`).

use fleetgate_api_types::{AccessPolicy, AccessPolicyRecord};

use crate::db::access_policies::{self, PolicyRow};
use crate::db::revision::Affected;
use crate::service::access::resolve::stored_policy;
use crate::service::{Actor, Audit, Page, PageRequest, Role, Service, Written};
use crate::{Error, Result, validate};

fn record(row: PolicyRow) -> Result<AccessPolicyRecord> {
    Ok(AccessPolicyRecord {
        manifest: stored_policy(&row.manifest)?,
        name: row.name,
        version: row.version,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

impl Service {
    /// A page of access policies, by name.
    pub async fn list_access_policies(
        &self,
        actor: &Actor,
        page: &PageRequest,
    ) -> Result<Page<AccessPolicyRecord>> {
        actor.require_unscoped(Role::Admin)?;
        let limit = page.limit()?;
        let after: Option<String> = page.key()?;
        let mut conn = self.conn().await?;
        let rows = access_policies::list(&mut conn, after.as_deref(), i64::from(limit) + 1).await?;
        let page = crate::service::page::from_rows(rows, limit, |r| r.name.clone(), |r| r);
        Ok(Page {
            items: page.items.into_iter().map(record).collect::<Result<_>>()?,
            next_cursor: page.next_cursor,
        })
    }

    /// One access policy.
    pub async fn get_access_policy(&self, actor: &Actor, name: &str) -> Result<AccessPolicyRecord> {
        actor.require_unscoped(Role::Admin)?;
        let mut conn = self.conn().await?;
        let row = access_policies::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("access policy", name))?;
        record(row)
    }

    /// Creates or replaces the policy named `name` (422 naming the field if
    /// invalid; with `if_match`, 409 unless the stored version equals it).
    /// Returns the record and whether it was created.
    pub async fn apply_access_policy(
        &self,
        actor: &Actor,
        name: &str,
        policy: AccessPolicy,
        if_match: Option<i64>,
        reason: Option<&str>,
    ) -> Result<(AccessPolicyRecord, bool)> {
        actor.require_unscoped(Role::Admin)?;
        validate::optional_reason("reason", reason)?;
        policy.validate().map_err(Error::from_policy)?;
        if policy.name() != name {
            return Err(Error::invalid(
                "metadata.name",
                format!(
                    "'{}' does not match the access policy '{name}' in the URL",
                    policy.name()
                ),
            ));
        }
        let manifest =
            &serde_json::to_value(&policy).map_err(|e| Error::Internal(e.to_string()))?;
        let now = self.now();
        let (out, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = access_policies::get_for_update(tx, name).await?;
                    if let (Some(v), Some(old)) = (if_match, &old)
                        && v != old.version
                    {
                        return Err(Error::Conflict {
                            field: Some("If-Match".into()),
                            message: format!(
                                "access policy '{name}' is at version {}, not {v}; reload and retry",
                                old.version
                            ),
                        });
                    }
                    if let Some(o) = &old
                        && o.manifest == *manifest
                    {
                        return Ok(Written::unchanged((record(o.clone())?, false)));
                    }
                    let (action, row, before) = match old {
                        None => (
                            "access_policy.create",
                            access_policies::insert(tx, name, manifest, now).await?,
                            None,
                        ),
                        Some(o) => (
                            "access_policy.replace",
                            access_policies::update(tx, name, manifest, now).await?,
                            Some(o.manifest),
                        ),
                    };
                    let created = before.is_none();
                    let audit = Audit {
                        action,
                        target_kind: "access_policy",
                        target_name: name.into(),
                        before,
                        after: Some(row.manifest.clone()),
                        reason: reason.map(Into::into),
                    };
                    Ok(Written::changed(
                        (record(row)?, created),
                        audit,
                        Affected::Clusters(Vec::new()),
                    ))
                })
            })
            .await?;
        Ok(out)
    }

    /// Deletes an access policy; its subjects lose what it granted at their
    /// next request.
    pub async fn delete_access_policy(
        &self,
        actor: &Actor,
        name: &str,
        reason: Option<&str>,
    ) -> Result<()> {
        actor.require_unscoped(Role::Admin)?;
        validate::optional_reason("reason", reason)?;
        let now = self.now();
        self.write(actor, now, |tx| {
            Box::pin(async move {
                let old = access_policies::get_for_update(tx, name)
                    .await?
                    .ok_or_else(|| Error::not_found("access policy", name))?;
                access_policies::delete(tx, name).await?;
                let audit = Audit {
                    action: "access_policy.delete",
                    target_kind: "access_policy",
                    target_name: name.into(),
                    before: Some(old.manifest),
                    after: None,
                    reason: reason.map(Into::into),
                };
                Ok(Written::changed((), audit, Affected::Clusters(Vec::new())))
            })
        })
        .await?;
        Ok(())
    }
}
