//! Change-ticket admission webhooks: the admin API over `admission_webhooks`, and
//! [`Service::admit`], which asks every webhook subscribed to an operation,
//! synchronously, before the override (or approval) is accepted. The decision (which
//! webhooks, in which order, what an answer means) is here; the HTTP call is the
//! [`AdmissionClient`]'s (in the adapters: the hub's egress rules, no redirects at all,
//! size cap, private destinations refused unless allowed, the webhook's own CA bundle
//! beside the hub's). Its outcome goes into the audit entry.

pub mod outside;

use std::time::{Duration, Instant};

use fleetgate_api_types::admission::{
    AdmissionOutcome, AdmissionRequest, AdmissionResponse, AdmissionWebhook, AdmissionWebhookSpec,
};

use self::outside::AdmissionClient;
use super::{Actor, Audit, Role, Service, Written, to_json};
use crate::db::admission_webhooks::{self as db, AdmissionRow};
use crate::db::revision::Affected;
use crate::{Error, Result, validate};

/// Default and longest wait for an answer.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);
const MAX_TIMEOUT: Duration = Duration::from_secs(30);
/// The most of a webhook's message kept (answer, audit).
const MAX_MESSAGE: usize = 500;
const OPERATIONS: [&str; 2] = ["override", "approval"];

impl Service {
    /// Every admission webhook (unscoped admin).
    pub async fn list_admission_webhooks(&self, actor: &Actor) -> Result<Vec<AdmissionWebhook>> {
        actor.require_unscoped(Role::Admin)?;
        let mut conn = self.conn().await?;
        Ok(db::all(&mut conn)
            .await?
            .into_iter()
            .map(Into::into)
            .collect())
    }

    /// One admission webhook (unscoped admin).
    pub async fn get_admission_webhook(
        &self,
        actor: &Actor,
        name: &str,
    ) -> Result<AdmissionWebhook> {
        actor.require_unscoped(Role::Admin)?;
        let mut conn = self.conn().await?;
        db::get(&mut conn, name, false)
            .await?
            .map(Into::into)
            .ok_or_else(|| Error::not_found("admission webhook", name))
    }

    /// Creates or replaces an admission webhook (unscoped admin), audited.
    pub async fn apply_admission_webhook(
        &self,
        actor: &Actor,
        name: &str,
        spec: AdmissionWebhookSpec,
    ) -> Result<AdmissionWebhook> {
        actor.require_unscoped(Role::Admin)?;
        fleetgate_policy::dns_label(name).map_err(|e| Error::invalid("name", e.message))?;
        let timeout = check_spec(&spec, self.admission_client())?;
        let now = self.now();
        let spec = &spec;
        let (hook, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = db::get(tx, name, true).await?;
                    let row = db::upsert(
                        tx,
                        &AdmissionRow {
                            name: name.to_string(),
                            url: spec.url.clone(),
                            operations: spec.operations.clone(),
                            timeout_ms: i32::try_from(timeout.as_millis()).unwrap_or(5000),
                            failure_policy: spec.failure_policy.as_str().to_string(),
                            ca_bundle: spec.ca_bundle.clone(),
                            created_at: old.as_ref().map_or(now, |o| o.created_at),
                            updated_at: now,
                        },
                    )
                    .await?;
                    let hook = AdmissionWebhook::from(row);
                    let audit = Audit {
                        action: if old.is_some() {
                            "admission_webhook.replace"
                        } else {
                            "admission_webhook.create"
                        },
                        target_kind: "admission_webhook",
                        target_name: name.to_string(),
                        before: old.map(AdmissionWebhook::from).and_then(|o| to_json(&o)),
                        after: to_json(&hook),
                        reason: None,
                    };
                    Ok(Written::changed(
                        hook,
                        audit,
                        Affected::Clusters(Vec::new()),
                    ))
                })
            })
            .await?;
        Ok(hook)
    }

    /// Deletes an admission webhook (unscoped admin), audited.
    pub async fn delete_admission_webhook(
        &self,
        actor: &Actor,
        name: &str,
    ) -> Result<AdmissionWebhook> {
        actor.require_unscoped(Role::Admin)?;
        let now = self.now();
        let (hook, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let old = db::get(tx, name, true)
                        .await?
                        .ok_or_else(|| Error::not_found("admission webhook", name))?;
                    db::delete(tx, name).await?;
                    let hook = AdmissionWebhook::from(old);
                    let audit = Audit {
                        action: "admission_webhook.delete",
                        target_kind: "admission_webhook",
                        target_name: name.to_string(),
                        before: to_json(&hook),
                        after: None,
                        reason: None,
                    };
                    Ok(Written::changed(
                        hook,
                        audit,
                        Affected::Clusters(Vec::new()),
                    ))
                })
            })
            .await?;
        Ok(hook)
    }

    /// Asks every admission webhook subscribed to `req.operation`, in name order. All
    /// allow (or fail under `Ignore`): their outcomes, for the audit entry. One denies,
    /// or fails under `Fail`: 403 naming `ticket` (a denial) with the webhook's message,
    /// after recording the refusal in the audit log.
    pub(crate) async fn admit(&self, actor: &Actor, a: Admit<'_>) -> Result<Vec<AdmissionOutcome>> {
        let mut conn = self.conn().await?;
        let hooks: Vec<AdmissionRow> = db::all(&mut conn)
            .await?
            .into_iter()
            .filter(|h| h.operations.iter().any(|o| o == a.operation))
            .collect();
        if hooks.is_empty() {
            return Ok(Vec::new());
        }
        let g = crate::db::gates::get(&mut conn, a.gate)
            .await?
            .ok_or_else(|| Error::not_found("gate", a.gate))?;
        let gate_def = super::fleet::stored_gate(&g.manifest)?;
        let clusters = crate::db::clusters::scoped(&mut conn)
            .await?
            .into_iter()
            .filter(|c| gate_def.spec.clusters.matches(&c.name, &c.labels))
            .filter(|c| a.scope.is_none_or(|s| s.matches(&c.name, &c.labels)))
            .map(|c| c.name)
            .collect();
        drop(conn);
        let req = &AdmissionRequest {
            uid: uuid::Uuid::new_v4().to_string(),
            operation: a.operation.to_string(),
            gate: a.gate.to_string(),
            clusters,
            state: a.state.as_str().to_string(),
            duration: a.duration.map(str::to_string),
            reason: a.reason.to_string(),
            requester: a.requester.to_string(),
            approver: a.approver.map(str::to_string),
            ticket: a.ticket.map(str::to_string),
            emergency: a.emergency,
        };
        let mut outcomes = Vec::new();
        for hook in hooks {
            let (outcome, refusal) = call(self.admission_client(), &hook, req).await;
            self.approval_metrics()
                .admission_call(&hook.name, &outcome.outcome);
            outcomes.push(outcome);
            if let Some(refusal) = refusal {
                self.record_refusal(actor, req, &outcomes).await?;
                return Err(refusal);
            }
        }
        Ok(outcomes)
    }

    /// An audit entry for a request admission webhooks refused (nothing else changes).
    async fn record_refusal(
        &self,
        actor: &Actor,
        req: &AdmissionRequest,
        outcomes: &[AdmissionOutcome],
    ) -> Result<()> {
        let now = self.now();
        let after = serde_json::json!({"request": req, "admission": outcomes});
        let after = &after;
        self.write(actor, now, |_tx| {
            Box::pin(async move {
                let audit = Audit {
                    action: "admission.deny",
                    target_kind: "gate",
                    target_name: req.gate.clone(),
                    before: None,
                    after: Some(after.clone()),
                    reason: Some(req.reason.clone()),
                };
                Ok(Written::changed((), audit, Affected::Clusters(Vec::new())))
            })
        })
        .await?;
        Ok(())
    }
}

/// What an admission call is about ([`Service::admit`]).
pub(crate) struct Admit<'a> {
    /// `override` or `approval`.
    pub operation: &'static str,
    pub gate: &'a str,
    /// The requested clusters; `None`: the gate's whole scope.
    pub scope: Option<&'a fleetgate_policy::ClusterScope>,
    pub state: fleetgate_policy::GateState,
    pub duration: Option<&'a str>,
    pub reason: &'a str,
    pub requester: &'a str,
    pub approver: Option<&'a str>,
    pub ticket: Option<&'a str>,
    pub emergency: bool,
}

/// `after` of an audit entry with the admission outcomes beside it (none: unchanged).
pub(crate) fn with_outcomes(
    after: Option<serde_json::Value>,
    outcomes: &[AdmissionOutcome],
) -> Option<serde_json::Value> {
    if outcomes.is_empty() {
        return after;
    }
    let mut after = after.unwrap_or_else(|| serde_json::json!({}));
    if let Some(m) = after.as_object_mut() {
        m.insert(
            "admission".into(),
            serde_json::to_value(outcomes).unwrap_or_default(),
        );
    }
    Some(after)
}

/// The spec's timeout; 422 naming the field on a bad spec.
fn check_spec(spec: &AdmissionWebhookSpec, client: &dyn AdmissionClient) -> Result<Duration> {
    validate::text("url", &spec.url)?;
    client.check_url(&spec.url)?;
    if spec.operations.is_empty() {
        return Err(Error::invalid(
            "operations",
            "name at least one of override, approval",
        ));
    }
    for (i, op) in spec.operations.iter().enumerate() {
        if !OPERATIONS.contains(&op.as_str()) {
            return Err(Error::invalid(
                format!("operations[{i}]"),
                format!("'{op}' is not one of override, approval"),
            ));
        }
    }
    let timeout = match &spec.timeout {
        None => DEFAULT_TIMEOUT,
        Some(t) => {
            let d = fleetgate_policy::parse_duration(t)
                .map_err(|e| Error::invalid("timeout", e.message))?
                .to_std()
                .map_err(|_| Error::invalid("timeout", "must be more than 0"))?;
            if d.is_zero() || d > MAX_TIMEOUT {
                return Err(Error::invalid(
                    "timeout",
                    "must be more than 0 and at most 30s",
                ));
            }
            d
        }
    };
    if let Some(pem) = &spec.ca_bundle {
        client.check_ca_bundle(pem)?;
    }
    Ok(timeout)
}

/// Calls one webhook: its outcome, and the error to answer when it refuses.
async fn call(
    client: &dyn AdmissionClient,
    hook: &AdmissionRow,
    req: &AdmissionRequest,
) -> (AdmissionOutcome, Option<Error>) {
    let start = Instant::now();
    let timeout = Duration::from_millis(u64::try_from(hook.timeout_ms).unwrap_or(5000));
    let answer = client.send(hook, req, timeout).await;
    let latency_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    let outcome = |outcome: &str, status: Option<u16>, message: Option<String>| AdmissionOutcome {
        webhook: hook.name.clone(),
        outcome: outcome.into(),
        status,
        message,
        latency_ms,
    };
    let failure = |status: Option<u16>, what: String| {
        if hook.failure_policy == "Ignore" {
            (outcome("ignored", status, Some(what)), None)
        } else {
            let err = Error::Denied {
                field: None,
                message: format!(
                    "admission webhook '{}' failed: {what} (failurePolicy Fail)",
                    hook.name
                ),
            };
            (outcome("failed", status, Some(what)), Some(err))
        }
    };
    let resp = match answer {
        Ok(r) => r,
        Err(e) => return failure(None, e),
    };
    let status = resp.status;
    let text = String::from_utf8_lossy(&resp.body).trim().to_string();
    if (500..600).contains(&status) {
        return failure(Some(status), format!("answered {status}"));
    }
    let parsed: Option<AdmissionResponse> = if text.is_empty() {
        Some(AdmissionResponse::default())
    } else {
        serde_json::from_str(&text).ok()
    };
    if (200..300).contains(&status) {
        return match parsed {
            None => failure(
                Some(status),
                format!(
                    "answered {status} with a body that is not an admission response (JSON {{allowed, message}})"
                ),
            ),
            Some(AdmissionResponse {
                allowed: Some(false),
                message,
            }) => deny(hook, outcome("denied", Some(status), message.map(cut)), req),
            Some(r) => (outcome("allowed", Some(status), r.message.map(cut)), None),
        };
    }
    let message = parsed
        .and_then(|r| r.message)
        .or_else(|| (!text.is_empty()).then_some(text))
        .map(cut)
        .unwrap_or_else(|| format!("answered {status}"));
    deny(hook, outcome("denied", Some(status), Some(message)), req)
}

/// A denial: 403 naming `ticket` with the webhook's message.
fn deny(
    hook: &AdmissionRow,
    outcome: AdmissionOutcome,
    req: &AdmissionRequest,
) -> (AdmissionOutcome, Option<Error>) {
    let said = outcome.message.clone().unwrap_or_default();
    let err = Error::Denied {
        field: Some("ticket".into()),
        message: format!(
            "admission webhook '{}' denied the {}{}: {said}",
            hook.name,
            req.operation,
            req.ticket
                .as_deref()
                .map(|t| format!(" (ticket {t})"))
                .unwrap_or_default()
        ),
    };
    (outcome, Some(err))
}

fn cut(mut s: String) -> String {
    if s.len() > MAX_MESSAGE {
        let mut end = MAX_MESSAGE;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push('…');
    }
    s
}
