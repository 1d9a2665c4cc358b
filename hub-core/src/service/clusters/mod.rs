//! Cluster operations: register (spoke token shown once), list, get,
//! relabel, delete, rotate the spoke token.

pub mod identity;
pub mod lease;
pub mod spoke_auth;

use fleetgate_policy::LabelSelector;

use super::types::{Cluster, ClusterWithToken, RegisterCluster, Relabel};
use super::{Actor, Audit, Page, PageRequest, Role, Service, Written, to_json};
use crate::auth::{SPOKE_TOKEN_PREFIX, generate_token, hash_token};
use crate::db::clusters;
use crate::db::revision::Affected;
use crate::{Error, Result, validate};

impl Service {
    /// Lists clusters by name.
    pub async fn list_clusters(&self, actor: &Actor, page: &PageRequest) -> Result<Page<Cluster>> {
        actor.require(Role::Viewer)?;
        let limit = page.limit()?;
        let after: Option<String> = page.key()?;
        let mut conn = self.conn().await?;
        let now = self.now();
        let rows = clusters::list(&mut conn, after.as_deref(), i64::from(limit) + 1, now).await?;
        Ok(super::page::from_rows(
            rows,
            limit,
            |r| r.name.clone(),
            std::convert::identity,
        ))
    }

    /// Lists clusters by name whose labels match `selector` (kubectl syntax,
    /// e.g. `env=prod,tier in (a,b)`), only those in the actor's scope. Scans
    /// in name order in batches, so the cursor stays a plain keyset position.
    pub async fn list_clusters_selected(
        &self,
        actor: &Actor,
        page: &PageRequest,
        selector: Option<&str>,
    ) -> Result<Page<Cluster>> {
        let visible = actor.read_scope();
        if selector.is_none() && visible.is_none() {
            return self.list_clusters(actor, page).await;
        }
        actor.require(Role::Viewer)?;
        let sel = selector
            .map(LabelSelector::parse)
            .transpose()
            .map_err(|e| Error::invalid("selector", e.message))?;
        let wanted = |r: &Cluster| {
            sel.as_ref().is_none_or(|s| s.matches(&r.labels))
                && visible
                    .as_ref()
                    .is_none_or(|v| v.cluster(&r.name, &r.labels))
        };
        let limit = page.limit()?;
        let mut after: Option<String> = page.key()?;
        let batch = i64::from(limit).max(500) + 1;
        let mut conn = self.conn().await?;
        let now = self.now();
        let mut matched = Vec::new();
        'scan: loop {
            let rows = clusters::list(&mut conn, after.as_deref(), batch, now).await?;
            let last_batch = (rows.len() as i64) < batch;
            for r in rows {
                after = Some(r.name.clone());
                if wanted(&r) {
                    matched.push(r);
                    if matched.len() > limit as usize {
                        break 'scan;
                    }
                }
            }
            if last_batch {
                break;
            }
        }
        Ok(super::page::from_rows(
            matched,
            limit,
            |r| r.name.clone(),
            std::convert::identity,
        ))
    }

    /// One cluster.
    pub async fn get_cluster(&self, actor: &Actor, name: &str) -> Result<Cluster> {
        actor.require(Role::Viewer)?;
        let mut conn = self.conn().await?;
        let now = self.now();
        let c = clusters::get(&mut conn, name, now)
            .await?
            .ok_or_else(|| Error::not_found("cluster", name))?;
        actor.require_visible_cluster(&c.name, &c.labels)?;
        Ok(c)
    }

    /// Registers a cluster (admin) and returns its spoke token, once; a cluster registered
    /// with an issuer gets none (its spoke presents the cluster's own JWT).
    pub async fn register_cluster(
        &self,
        actor: &Actor,
        req: RegisterCluster,
        reason: Option<&str>,
    ) -> Result<ClusterWithToken> {
        actor.require_unscoped(Role::Admin)?;
        validate::dns_label("name", &req.name)?;
        validate::labels("labels", &req.labels)?;
        validate::optional_reason("reason", reason)?;
        let identity = identity::binding_of(&req, self.spoke_issuers())?;
        // A cluster registered with an issuer keeps the hash of a token nobody is shown.
        let token = generate_token(SPOKE_TOKEN_PREFIX);
        let now = self.now();
        let (req, token_hash, identity) = (&req, &hash_token(&token), identity.as_ref());
        let (cluster, rev) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let cluster =
                        clusters::insert(tx, &req.name, &req.labels, token_hash, identity, now)
                            .await?;
                    let audit = Audit {
                        action: "cluster.register",
                        target_kind: "cluster",
                        target_name: cluster.name.clone(),
                        before: None,
                        after: to_json(&req),
                        reason: reason.map(Into::into),
                    };
                    let affected = Affected::Clusters(vec![cluster.name.clone()]);
                    Ok(Written::changed(cluster, audit, affected))
                })
            })
            .await?;
        Ok(ClusterWithToken {
            cluster: Cluster {
                desired_revision: rev,
                ..cluster
            },
            token: if identity.is_some() {
                String::new()
            } else {
                token
            },
        })
    }

    /// Replaces a cluster's labels (admin); its gate scopes may change.
    pub async fn relabel_cluster(
        &self,
        actor: &Actor,
        name: &str,
        req: Relabel,
        reason: Option<&str>,
    ) -> Result<Cluster> {
        actor.require_unscoped(Role::Admin)?;
        validate::labels("labels", &req.labels)?;
        validate::optional_reason("reason", reason)?;
        let now = self.now();
        let req = &req;
        let (row, rev) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = clusters::get_for_update(tx, name, now)
                        .await?
                        .ok_or_else(|| Error::not_found("cluster", name))?;
                    let row = clusters::set_labels(tx, name, &req.labels, now).await?;
                    let audit = Audit {
                        action: "cluster.relabel",
                        target_kind: "cluster",
                        target_name: name.into(),
                        before: to_json(&old.labels),
                        after: to_json(&req.labels),
                        reason: reason.map(Into::into),
                    };
                    let affected = Affected::Clusters(vec![name.to_string()]);
                    Ok(Written::changed(row, audit, affected))
                })
            })
            .await?;
        Ok(Cluster {
            desired_revision: rev,
            ..row
        })
    }

    /// Deletes a cluster (admin); its spoke token stops working and its
    /// object status is dropped.
    pub async fn delete_cluster(
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
                let old = clusters::get_for_update(tx, name, now)
                    .await?
                    .ok_or_else(|| Error::not_found("cluster", name))?;
                clusters::delete(tx, name).await?;
                let audit = Audit {
                    action: "cluster.delete",
                    target_kind: "cluster",
                    target_name: name.into(),
                    before: to_json(&old),
                    after: None,
                    reason: reason.map(Into::into),
                };
                let affected = Affected::Clusters(vec![name.to_string()]);
                Ok(Written::changed((), audit, affected))
            })
        })
        .await?;
        Ok(())
    }

    /// Issues a new spoke token (admin); the old one stops working at once
    /// (connected spokes are re-checked on the change notification).
    pub async fn rotate_cluster_token(
        &self,
        actor: &Actor,
        name: &str,
        reason: Option<&str>,
    ) -> Result<ClusterWithToken> {
        actor.require_unscoped(Role::Admin)?;
        validate::optional_reason("reason", reason)?;
        let token = generate_token(SPOKE_TOKEN_PREFIX);
        let now = self.now();
        let token_hash = &hash_token(&token);
        let (row, rev) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let row = clusters::get_for_update(tx, name, now)
                        .await?
                        .ok_or_else(|| Error::not_found("cluster", name))?;
                    if let Some(id) = &row.identity {
                        return Err(Error::invalid(
                            "name",
                            format!(
                                "cluster '{name}' signs in with its own identity (issuer {}); it has no token to rotate",
                                id.issuer
                            ),
                        ));
                    }
                    clusters::set_token_hash(tx, name, token_hash).await?;
                    let audit = Audit {
                        action: "cluster.rotate_token",
                        target_kind: "cluster",
                        target_name: name.into(),
                        before: None,
                        after: None,
                        reason: reason.map(Into::into),
                    };
                    let affected = Affected::Clusters(vec![name.to_string()]);
                    Ok(Written::changed(row, audit, affected))
                })
            })
            .await?;
        Ok(ClusterWithToken {
            cluster: Cluster {
                desired_revision: rev,
                ..row
            },
            token,
        })
    }
}
