//! Webhook subscriptions (admin): create (the `whsec_` secret shown once),
//! list, get, replace, delete, rotate the secret with an overlap, send a
//! test message, list deliveries with their attempts, redeliver. The HTTP calls are a
//! [`WebhookClient`]'s (in the adapters: the hub's egress rules).

pub mod outside;

use base64::Engine as _;
use chrono::{Duration, Utc};
use fleetgate_api_types::webhooks::{
    RotateWebhookSecret, Webhook, WebhookDelivery, WebhookFormat, WebhookSpec, WebhookTestResult,
    WebhookWithSecret,
};
use rand::Rng as _;
use uuid::Uuid;

use self::outside::{WebhookCallError, WebhookClient};
use super::{Actor, Audit, Role, Service, Written, to_json};
use crate::db::revision::Affected;
use crate::db::webhooks::{self, WebhookRow};
use crate::notify::event::{EVENT_TYPES, type_matches};
use crate::notify::format::{EventRow, Site, render};
use crate::{Error, Result, validate};

/// Longest secret-rotation overlap.
const MAX_OVERLAP_HOURS: i64 = 720;

/// A fresh signing secret: `whsec_` + base64 of 32 random bytes.
fn new_secret() -> String {
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    format!(
        "whsec_{}",
        base64::engine::general_purpose::STANDARD.encode(key)
    )
}

/// 422 naming the field unless `spec` is well-formed and its URL allowed.
async fn check_spec(spec: &WebhookSpec, egress: &dyn WebhookClient) -> Result<()> {
    validate::dns_label("name", &spec.name)?;
    egress
        .preflight(&spec.url)
        .await
        .map_err(|e| Error::invalid("url", e))?;
    for (i, t) in spec.events.iter().enumerate() {
        if !EVENT_TYPES.iter().any(|known| type_matches(t, known)) {
            return Err(Error::invalid(
                format!("events[{i}]"),
                format!(
                    "unknown event type '{t}' (known: {})",
                    EVENT_TYPES.join(", ")
                ),
            ));
        }
    }
    for (i, g) in spec.gates.iter().enumerate() {
        validate::dns_label(&format!("gates[{i}]"), g)?;
    }
    if let Some(c) = &spec.clusters {
        for (i, n) in c.names.iter().enumerate() {
            validate::dns_label(&format!("clusters.names[{i}]"), n)?;
        }
        if c.names.is_empty() && c.selector.is_none() {
            return Err(Error::invalid(
                "clusters",
                "give names and/or a selector, or leave clusters out for every cluster",
            ));
        }
    }
    if spec.description.len() > 1024 {
        return Err(Error::invalid("description", "longer than 1024 bytes"));
    }
    Ok(())
}

fn scope_json(spec: &WebhookSpec) -> Option<serde_json::Value> {
    spec.clusters.as_ref().map(|c| {
        serde_json::to_value(fleetgate_policy::ClusterScope {
            names: c.names.clone(),
            selector: c.selector.clone(),
        })
        .unwrap_or_default()
    })
}

/// What a subscription made by `actor` may receive: its read scopes (none:
/// unscoped). Kept with the subscription, like a gate keeps its writer's scope.
fn owner_scope(actor: &Actor) -> Option<serde_json::Value> {
    actor
        .read_scope()
        .and_then(|s| serde_json::to_value(s.scopes()).ok())
}

/// Whether `actor` (an admin) may see and manage subscription `row`: an
/// unscoped admin every one; a scoped admin (a team's) those it made and
/// those made under exactly its scopes (its team's), never an unscoped
/// one. Others are "not found" to it, as if they did not exist.
fn visible_to(actor: &Actor, row: &WebhookRow) -> bool {
    actor.is_unscoped(Role::Admin)
        || row.created_by == actor.name
        || (row.owner_scope.is_some() && row.owner_scope == owner_scope(actor))
}

/// `row` if `actor` may see it, else 404 naming the subscription.
fn for_actor(actor: &Actor, name: &str, row: Option<WebhookRow>) -> Result<WebhookRow> {
    row.filter(|r| visible_to(actor, r))
        .ok_or_else(|| Error::not_found("webhook", name))
}

fn written(row: WebhookRow, action: &'static str, before: Option<Webhook>) -> Written<Webhook> {
    let w = Webhook::from(row);
    let audit = Audit {
        action,
        target_kind: "webhook",
        target_name: w.spec.name.clone(),
        before: before.as_ref().and_then(to_json),
        after: to_json(&w),
        reason: None,
    };
    Written::changed(w, audit, Affected::Clusters(Vec::new()))
}

impl Service {
    /// Creates a subscription (admin); the signing secret is returned only here.
    pub async fn create_webhook(
        &self,
        actor: &Actor,
        spec: WebhookSpec,
        egress: &dyn WebhookClient,
    ) -> Result<WebhookWithSecret> {
        actor.require(Role::Admin)?;
        check_spec(&spec, egress).await?;
        let now = self.now();
        let secret = new_secret();
        let row = WebhookRow {
            id: Uuid::new_v4(),
            name: spec.name.clone(),
            url: spec.url.clone(),
            event_types: spec.events.clone(),
            gates: spec.gates.clone(),
            clusters: scope_json(&spec),
            format: spec.format.as_str().into(),
            per_cluster: spec.per_cluster,
            enabled: spec.enabled,
            description: spec.description.clone(),
            secret: secret.clone(),
            previous_secret: None,
            previous_secret_expires_at: None,
            created_at: now,
            created_by: actor.name.clone(),
            updated_at: now,
            disabled_reason: None,
            failing_since: None,
            owner_scope: owner_scope(actor),
        };
        let row = &row;
        let (webhook, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let stored = webhooks::insert(tx, row).await.map_err(|e| match e {
                        Error::Database(sqlx::Error::Database(d)) if d.is_unique_violation() => {
                            Error::conflict(format!("webhook '{}' already exists", row.name))
                        }
                        e => e,
                    })?;
                    Ok(written(stored, "webhook.create", None))
                })
            })
            .await?;
        Ok(WebhookWithSecret { webhook, secret })
    }

    /// The subscriptions `actor` may see, by name (admin: an unscoped admin
    /// every one, a team's admin its team's).
    pub async fn list_webhooks(&self, actor: &Actor) -> Result<Vec<Webhook>> {
        actor.require(Role::Admin)?;
        let mut conn = self.conn().await?;
        Ok(webhooks::list(&mut conn)
            .await?
            .into_iter()
            .filter(|r| visible_to(actor, r))
            .map(Into::into)
            .collect())
    }

    async fn webhook_row(&self, actor: &Actor, name: &str) -> Result<WebhookRow> {
        let mut conn = self.conn().await?;
        for_actor(actor, name, webhooks::get(&mut conn, name).await?)
    }

    /// One subscription (admin).
    pub async fn get_webhook(&self, actor: &Actor, name: &str) -> Result<Webhook> {
        actor.require(Role::Admin)?;
        Ok(self.webhook_row(actor, name).await?.into())
    }

    /// Replaces a subscription's settings (admin); re-enabling clears the
    /// reason it was disabled. The name in the path wins.
    pub async fn replace_webhook(
        &self,
        actor: &Actor,
        name: &str,
        mut spec: WebhookSpec,
        egress: &dyn WebhookClient,
    ) -> Result<Webhook> {
        actor.require(Role::Admin)?;
        spec.name = name.to_string();
        check_spec(&spec, egress).await?;
        let now = self.now();
        let owner = owner_scope(actor);
        self.modify_webhook(
            actor,
            name,
            "webhook.update",
            now,
            &|row: &mut WebhookRow| {
                row.owner_scope = owner.clone();
                row.url = spec.url.clone();
                row.event_types = spec.events.clone();
                row.gates = spec.gates.clone();
                row.clusters = scope_json(&spec);
                row.format = spec.format.as_str().into();
                row.per_cluster = spec.per_cluster;
                row.enabled = spec.enabled;
                row.description = spec.description.clone();
                row.updated_at = now;
                if spec.enabled {
                    row.disabled_reason = None;
                    row.failing_since = None;
                }
            },
        )
        .await
    }

    /// The one read-modify-write of a subscription at `now`: lock its row,
    /// apply `change`, store it and audit `action` with before and after.
    async fn modify_webhook(
        &self,
        actor: &Actor,
        name: &str,
        action: &'static str,
        now: chrono::DateTime<Utc>,
        change: &(dyn Fn(&mut WebhookRow) + Sync),
    ) -> Result<Webhook> {
        let (w, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = for_actor(actor, name, webhooks::get_for_update(tx, name).await?)?;
                    let mut row = old.clone();
                    change(&mut row);
                    let stored = webhooks::update(tx, &row).await?;
                    Ok(written(stored, action, Some(old.into())))
                })
            })
            .await?;
        Ok(w)
    }

    /// Enables or disables a subscription (admin) and changes nothing else:
    /// its filters and owner scope stay (a replace would give it the
    /// replacing admin's scope). Enabling clears the hub's disable reason
    /// and the failure run, so the deliveries that waited are sent.
    /// Audited as `webhook.enable` / `webhook.disable`.
    pub async fn set_webhook_enabled(
        &self,
        actor: &Actor,
        name: &str,
        enabled: bool,
    ) -> Result<Webhook> {
        actor.require(Role::Admin)?;
        let now = self.now();
        let action = if enabled {
            "webhook.enable"
        } else {
            "webhook.disable"
        };
        self.modify_webhook(actor, name, action, now, &|row: &mut WebhookRow| {
            row.enabled = enabled;
            row.updated_at = now;
            if enabled {
                row.disabled_reason = None;
                row.failing_since = None;
            }
        })
        .await
    }

    /// Deletes a subscription and its delivery history (admin).
    pub async fn delete_webhook(&self, actor: &Actor, name: &str) -> Result<Webhook> {
        actor.require(Role::Admin)?;
        let now = self.now();
        let (w, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = for_actor(actor, name, webhooks::get_for_update(tx, name).await?)?;
                    webhooks::delete(tx, old.id).await?;
                    let w = Webhook::from(old);
                    let audit = Audit {
                        action: "webhook.delete",
                        target_kind: "webhook",
                        target_name: name.to_string(),
                        before: to_json(&w),
                        after: None,
                        reason: None,
                    };
                    Ok(Written::changed(w, audit, Affected::Clusters(Vec::new())))
                })
            })
            .await?;
        Ok(w)
    }

    /// A new signing secret (admin, shown once); the old one keeps signing
    /// beside it for the overlap (default 24 h) so receivers can switch.
    pub async fn rotate_webhook_secret(
        &self,
        actor: &Actor,
        name: &str,
        req: RotateWebhookSecret,
    ) -> Result<WebhookWithSecret> {
        actor.require(Role::Admin)?;
        let overlap = match &req.overlap {
            None => Duration::hours(24),
            Some(s) => fleetgate_policy::parse_duration(s)
                .map_err(|e| Error::invalid("overlap", e.message))?,
        };
        if overlap > Duration::hours(MAX_OVERLAP_HOURS) || overlap < Duration::zero() {
            return Err(Error::invalid(
                "overlap",
                format!("0 to {MAX_OVERLAP_HOURS}h"),
            ));
        }
        let now = self.now();
        let secret = new_secret();
        let webhook = self
            .modify_webhook(
                actor,
                name,
                "webhook.rotate_secret",
                now,
                &|row: &mut WebhookRow| {
                    row.previous_secret = Some(std::mem::replace(&mut row.secret, secret.clone()));
                    row.previous_secret_expires_at = Some(now + overlap);
                    row.updated_at = now;
                },
            )
            .await?;
        Ok(WebhookWithSecret { webhook, secret })
    }

    /// Sends a signed `webhook.test` message now, outside the queue (admin).
    pub async fn test_webhook(
        &self,
        actor: &Actor,
        name: &str,
        egress: &dyn WebhookClient,
        site: &Site,
    ) -> Result<WebhookTestResult> {
        actor.require(Role::Admin)?;
        let row = self.webhook_row(actor, name).await?;
        // Signed at the wall-clock send time (receivers check it against
        // theirs); the rotation overlap is judged on the hub's clock.
        let now = Utc::now();
        let overlap_now = self.now();
        let message_id = format!("msg_test_{}", Uuid::new_v4().simple());
        let ev = EventRow {
            id: 0,
            event_type: "webhook.test".into(),
            subject: format!("webhook/{name}"),
            seq: 0,
            occurred_at: now,
            gate: None,
            clusters: Vec::new(),
            data: serde_json::json!({"webhook": name, "requestedBy": actor.name}),
        };
        let mut secrets = vec![row.secret.as_str()];
        if let (Some(p), Some(until)) = (&row.previous_secret, row.previous_secret_expires_at)
            && until > overlap_now
        {
            secrets.push(p);
        }
        let format = WebhookFormat::parse(&row.format).unwrap_or_default();
        let msg = render(format, site, &message_id, &ev, None, &secrets, now);
        let started = std::time::Instant::now();
        let out = match egress.post(&row.url, msg).await {
            Err(WebhookCallError::Url(e)) => return Err(Error::invalid("url", e)),
            Ok(r) => WebhookTestResult {
                message_id,
                ok: (200..300).contains(&r.status),
                status: Some(i32::from(r.status)),
                latency_ms: i32::try_from(r.elapsed.as_millis()).unwrap_or(i32::MAX),
                error: (!(200..300).contains(&r.status)).then(|| format!("HTTP {}", r.status)),
                response_excerpt: (!r.body.is_empty()).then(|| {
                    String::from_utf8_lossy(&r.body[..r.body.len().min(512)]).into_owned()
                }),
            },
            Err(WebhookCallError::Failed(e)) => WebhookTestResult {
                message_id,
                ok: false,
                status: None,
                latency_ms: i32::try_from(started.elapsed().as_millis()).unwrap_or(i32::MAX),
                error: Some(e),
                response_excerpt: None,
            },
        };
        Ok(out)
    }

    /// A subscription's deliveries, newest first (admin); `before`: a delivery id.
    pub async fn webhook_deliveries(
        &self,
        actor: &Actor,
        name: &str,
        before: Option<i64>,
        limit: Option<u32>,
    ) -> Result<Vec<WebhookDelivery>> {
        actor.require(Role::Admin)?;
        let limit = i64::from(limit.unwrap_or(50));
        if !(1..=500).contains(&limit) {
            return Err(Error::invalid("limit", "1 to 500"));
        }
        let row = self.webhook_row(actor, name).await?;
        let mut conn = self.conn().await?;
        webhooks::deliveries(&mut conn, row.id, before, limit).await
    }

    /// One delivery with every attempt (admin).
    pub async fn webhook_delivery(
        &self,
        actor: &Actor,
        name: &str,
        id: i64,
    ) -> Result<WebhookDelivery> {
        actor.require(Role::Admin)?;
        let row = self.webhook_row(actor, name).await?;
        let mut conn = self.conn().await?;
        webhooks::delivery(&mut conn, row.id, id)
            .await?
            .ok_or_else(|| Error::not_found("delivery", id.to_string()))
    }

    /// Queues a delivery again, due now, with the same `webhook-id` (admin).
    pub async fn redeliver_webhook(
        &self,
        actor: &Actor,
        name: &str,
        id: i64,
    ) -> Result<WebhookDelivery> {
        actor.require(Role::Admin)?;
        let now = self.now();
        self.write(actor, now, |tx| {
            Box::pin(async move {
                let hook = for_actor(actor, name, webhooks::get(tx, name).await?)?;
                if !webhooks::redeliver(tx, hook.id, id, now).await? {
                    return Err(Error::not_found("delivery", id.to_string()));
                }
                let audit = Audit {
                    action: "webhook.redeliver",
                    target_kind: "webhook",
                    target_name: name.to_string(),
                    before: None,
                    after: Some(serde_json::json!({"delivery": id})),
                    reason: None,
                };
                Ok(Written::changed((), audit, Affected::Clusters(Vec::new())))
            })
        })
        .await?;
        self.webhook_delivery(actor, name, id).await
    }
}
