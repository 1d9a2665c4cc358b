//! `AdminService` webhook methods: the REST `/api/v1/webhooks` operations
//! over gRPC, calling the same service-layer methods (admin role, validation
//! naming the field, audit), with conversions between the REST types and
//! the admin messages.

use fleetgate_api_types::records::OverrideClusters;
use fleetgate_api_types::webhooks::{
    RotateWebhookSecret, Webhook, WebhookDelivery, WebhookFormat, WebhookSpec, WebhookTestResult,
    WebhookWithSecret,
};
use fleetgate_policy::LabelSelector;
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
use tonic::{Request, Response, Status};

use super::admin::{AdminApi, Res, ok};
use super::admin_convert::non_empty;
use super::auth::api_actor;
use super::convert::invalid;

/// A selector field: kubectl syntax or the JSON of a `LabelSelector`.
fn selector(field: &str, s: &str) -> Result<Option<LabelSelector>, Status> {
    let s = s.trim();
    if s.is_empty() {
        return Ok(None);
    }
    if s.starts_with('{') {
        return serde_json::from_str(s)
            .map(Some)
            .map_err(|e| invalid(field, e));
    }
    LabelSelector::parse(s)
        .map(Some)
        .map_err(|e| invalid(field, e.message))
}

/// The request's spec as the REST type; INVALID_ARGUMENT naming the field.
fn spec_in(spec: Option<pb::WebhookSpec>) -> Result<WebhookSpec, Status> {
    let s = spec.ok_or_else(|| invalid("spec", "required"))?;
    let format = if s.format.is_empty() {
        WebhookFormat::default()
    } else {
        WebhookFormat::parse(&s.format).ok_or_else(|| {
            invalid(
                "spec.format",
                format!(
                    "'{}' is not standard, cloudevents, slack or teams",
                    s.format
                ),
            )
        })?
    };
    let selector = selector("spec.cluster_selector", &s.cluster_selector)?;
    let clusters = (!s.clusters.is_empty() || selector.is_some()).then_some(OverrideClusters {
        names: s.clusters,
        selector,
    });
    Ok(WebhookSpec {
        name: s.name,
        url: s.url,
        events: s.events,
        gates: s.gates,
        clusters,
        format,
        per_cluster: s.per_cluster,
        enabled: s.enabled.unwrap_or(true),
        description: s.description,
    })
}

fn spec_out(s: WebhookSpec) -> pb::WebhookSpec {
    let (clusters, selector) = match s.clusters {
        Some(c) => (
            c.names,
            c.selector
                .and_then(|s| serde_json::to_string(&s).ok())
                .unwrap_or_default(),
        ),
        None => (Vec::new(), String::new()),
    };
    pb::WebhookSpec {
        name: s.name,
        url: s.url,
        events: s.events,
        gates: s.gates,
        clusters,
        cluster_selector: selector,
        format: s.format.as_str().into(),
        per_cluster: s.per_cluster,
        enabled: Some(s.enabled),
        description: s.description,
    }
}

/// A subscription as its admin message.
pub fn webhook(w: Webhook) -> pb::WebhookInfo {
    pb::WebhookInfo {
        id: w.id.to_string(),
        spec: Some(spec_out(w.spec)),
        created_at: Some(to_timestamp(w.created_at)),
        created_by: w.created_by,
        updated_at: Some(to_timestamp(w.updated_at)),
        disabled_reason: w.disabled_reason.unwrap_or_default(),
        failing_since: w.failing_since.map(to_timestamp),
        previous_secret_expires_at: w.previous_secret_expires_at.map(to_timestamp),
    }
}

fn with_secret(w: WebhookWithSecret) -> pb::WebhookWithSecret {
    pb::WebhookWithSecret {
        webhook: Some(webhook(w.webhook)),
        secret: w.secret,
    }
}

fn test_result(t: WebhookTestResult) -> pb::WebhookTestResult {
    pb::WebhookTestResult {
        message_id: t.message_id,
        ok: t.ok,
        status: t.status.unwrap_or_default(),
        latency_ms: t.latency_ms,
        error: t.error.unwrap_or_default(),
        response_excerpt: t.response_excerpt.unwrap_or_default(),
    }
}

/// A delivery (with its attempts, if loaded) as its admin message.
pub fn delivery(d: WebhookDelivery) -> pb::WebhookDelivery {
    pb::WebhookDelivery {
        id: d.id,
        event_id: d.event_id,
        event_type: d.event_type,
        subject: d.subject,
        message_id: d.message_id,
        state: d.state,
        attempts: d.attempts,
        next_attempt_at: Some(to_timestamp(d.next_attempt_at)),
        last_status: d.last_status.unwrap_or_default(),
        last_error: d.last_error.unwrap_or_default(),
        delivered_at: d.delivered_at.map(to_timestamp),
        created_at: Some(to_timestamp(d.created_at)),
        attempt_log: d
            .attempt_log
            .into_iter()
            .map(|a| pb::WebhookAttempt {
                attempt: a.attempt,
                at: Some(to_timestamp(a.at)),
                replica: a.replica,
                status: a.status.unwrap_or_default(),
                latency_ms: a.latency_ms,
                error: a.error.unwrap_or_default(),
                response_excerpt: a.response_excerpt.unwrap_or_default(),
            })
            .collect(),
    }
}

impl AdminApi {
    pub(super) async fn webhooks_list(
        &self,
        req: Request<pb::ListWebhooksRequest>,
    ) -> Res<pb::ListWebhooksResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let all = ok(self.service.list_webhooks(&actor).await)?;
        Ok(Response::new(pb::ListWebhooksResponse {
            webhooks: all.into_iter().map(webhook).collect(),
        }))
    }

    pub(super) async fn webhooks_get(
        &self,
        req: Request<pb::GetWebhookRequest>,
    ) -> Res<pb::WebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let w = ok(self.service.get_webhook(&actor, &req.get_ref().name).await)?;
        Ok(Response::new(webhook(w)))
    }

    pub(super) async fn webhooks_create(
        &self,
        req: Request<pb::CreateWebhookRequest>,
    ) -> Res<pb::WebhookWithSecret> {
        let actor = api_actor(&self.service, &req).await?;
        let spec = spec_in(req.into_inner().spec)?;
        let w = ok(self
            .service
            .create_webhook(&actor, spec, &self.notify.egress)
            .await)?;
        Ok(Response::new(with_secret(w)))
    }

    pub(super) async fn webhooks_update(
        &self,
        req: Request<pb::UpdateWebhookRequest>,
    ) -> Res<pb::WebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let spec = spec_in(r.spec)?;
        let w = ok(self
            .service
            .replace_webhook(&actor, &r.name, spec, &self.notify.egress)
            .await)?;
        Ok(Response::new(webhook(w)))
    }

    pub(super) async fn webhooks_delete(
        &self,
        req: Request<pb::DeleteWebhookRequest>,
    ) -> Res<pb::WebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let w = ok(self
            .service
            .delete_webhook(&actor, &req.get_ref().name)
            .await)?;
        Ok(Response::new(webhook(w)))
    }

    pub(super) async fn webhooks_set_enabled(
        &self,
        req: Request<pb::SetWebhookEnabledRequest>,
    ) -> Res<pb::WebhookInfo> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.get_ref();
        let w = ok(self
            .service
            .set_webhook_enabled(&actor, &r.name, r.enabled)
            .await)?;
        Ok(Response::new(webhook(w)))
    }

    pub(super) async fn webhooks_rotate(
        &self,
        req: Request<pb::RotateWebhookSecretRequest>,
    ) -> Res<pb::WebhookWithSecret> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let body = RotateWebhookSecret {
            overlap: non_empty(&r.overlap).map(String::from),
        };
        let w = ok(self
            .service
            .rotate_webhook_secret(&actor, &r.name, body)
            .await)?;
        Ok(Response::new(with_secret(w)))
    }

    pub(super) async fn webhooks_test(
        &self,
        req: Request<pb::TestWebhookRequest>,
    ) -> Res<pb::WebhookTestResult> {
        let actor = api_actor(&self.service, &req).await?;
        let n = &self.notify;
        let t = ok(self
            .service
            .test_webhook(&actor, &req.get_ref().name, &n.egress, &n.site)
            .await)?;
        Ok(Response::new(test_result(t)))
    }

    pub(super) async fn webhooks_deliveries(
        &self,
        req: Request<pb::ListWebhookDeliveriesRequest>,
    ) -> Res<pb::ListWebhookDeliveriesResponse> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let list = ok(self
            .service
            .webhook_deliveries(
                &actor,
                &r.name,
                (r.before != 0).then_some(r.before),
                (r.limit != 0).then_some(r.limit),
            )
            .await)?;
        Ok(Response::new(pb::ListWebhookDeliveriesResponse {
            deliveries: list.into_iter().map(delivery).collect(),
        }))
    }

    pub(super) async fn webhooks_delivery(
        &self,
        req: Request<pb::GetWebhookDeliveryRequest>,
        redeliver: bool,
    ) -> Res<pb::WebhookDelivery> {
        let actor = api_actor(&self.service, &req).await?;
        let r = req.into_inner();
        let d = if redeliver {
            self.service.redeliver_webhook(&actor, &r.name, r.id).await
        } else {
            self.service.webhook_delivery(&actor, &r.name, r.id).await
        };
        Ok(Response::new(delivery(ok(d)?)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selector_in_either_syntax_and_errors_name_the_field() {
        let spec = |sel: &str, format: &str| {
            spec_in(Some(pb::WebhookSpec {
                name: "w".into(),
                url: "https://example.com/h".into(),
                cluster_selector: sel.into(),
                format: format.into(),
                ..Default::default()
            }))
        };
        let a = spec("env=prod", "").unwrap();
        let b = spec(r#"{"matchLabels":{"env":"prod"}}"#, "slack").unwrap();
        let json = |s: &WebhookSpec| serde_json::to_value(&s.clusters).unwrap();
        assert_eq!(json(&a), json(&b));
        assert!(a.enabled, "unset enabled means enabled");
        assert_eq!(b.format, WebhookFormat::Slack);
        let back = spec_out(b.clone());
        assert_eq!(json(&spec_in(Some(back)).unwrap()), json(&b));
        let e = spec("env in", "").unwrap_err();
        assert!(e.message().starts_with("spec.cluster_selector: "), "{e:?}");
        let e = spec("", "xml").unwrap_err();
        assert!(e.message().starts_with("spec.format: "), "{e:?}");
        assert!(spec_in(None).unwrap_err().message().starts_with("spec: "));
    }
}
