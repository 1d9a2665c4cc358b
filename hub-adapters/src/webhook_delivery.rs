//! The delivery workers (one per replica): claim due deliveries with a
//! lease and commit, POST them through [`crate::egress`], record every
//! attempt, and schedule retries on the Standard Webhooks schedule with
//! jitter. 2xx is delivered; 410 Gone disables the endpoint; anything else,
//! 3xx included (no redirect is followed), is a failure, retried after the
//! schedule's wait or the response's `Retry-After`, whichever is later. An
//! endpoint failing longer than `disable_after` is disabled with an audit
//! entry. A replica that dies mid-call leaves its lease to expire; another
//! replica then sends the same message again, with the same `webhook-id`.
//!
//! Time: retries, the failure run, the secret-rotation overlap and the
//! attempt log follow the hub's clock ([`Service::now`], injected in
//! tests); `webhook-timestamp` is the wall-clock send time, since receivers
//! check it against their own clocks, and leases run on the database's.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_api_types::webhooks::WebhookFormat;
use futures::FutureExt as _;
use futures::future::BoxFuture;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::db::audit::NewAudit;
use crate::db::webhooks::{self, Claimed, Outcome};
use crate::egress::{Egress, EgressError};
use crate::notify::format::{Message, Site, render};
use crate::service::Service;
use crate::service::webhooks::outside::{WebhookAnswer, WebhookCallError, WebhookClient};

/// The Standard Webhooks retry schedule (after the first attempt): 5 s,
/// 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; then the delivery has failed.
pub const DEFAULT_SCHEDULE: &str = crate::notify::defaults::RETRY_SCHEDULE;

/// How the workers deliver.
#[derive(Debug, Clone)]
pub struct DeliveryConfig {
    pub replica: String,
    pub egress: Egress,
    pub site: Site,
    /// How long a claimed delivery is this replica's (longer than the egress timeout).
    pub lease: Duration,
    /// Poll interval when idle (writes on this replica wake it at once).
    pub poll: Duration,
    /// Waits after the 1st, 2nd, ... failed attempt.
    pub schedule: Vec<Duration>,
    /// An endpoint failing continuously for this long is disabled.
    pub disable_after: Duration,
    pub metrics: NotifyMetrics,
}

/// Per-endpoint series.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct AttemptLabels {
    pub webhook: String,
    /// `delivered`, `retry`, `failed` or `gone`.
    pub outcome: String,
}

/// An endpoint the hub disabled, and why.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DisabledLabels {
    pub webhook: String,
    /// `gone` (it answered 410) or `failing` (every attempt failed for
    /// `disable_after`).
    pub reason: String,
}

/// Webhook metrics (cheap to clone).
#[derive(Debug, Clone)]
pub struct NotifyMetrics {
    pub attempts: Family<AttemptLabels, Counter>,
    pub latency: Family<AttemptLabels, Histogram>,
    pub disabled: Family<DisabledLabels, Counter>,
}

impl Default for NotifyMetrics {
    fn default() -> Self {
        Self {
            attempts: Family::default(),
            latency: Family::new_with_constructor(|| {
                Histogram::new([0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 15.0])
            }),
            disabled: Family::default(),
        }
    }
}

impl NotifyMetrics {
    pub fn register(&self, r: &mut Registry) {
        r.register(
            "webhook_attempts",
            "Webhook delivery attempts by endpoint and outcome (delivered, retry, failed, gone)",
            self.attempts.clone(),
        );
        r.register(
            "webhook_attempt_seconds",
            "Webhook delivery attempt latency by endpoint and outcome",
            self.latency.clone(),
        );
        r.register(
            "webhooks_disabled",
            "Webhook endpoints this replica disabled, by endpoint and reason (gone: 410, failing: every attempt failed for --webhook-disable-after)",
            self.disabled.clone(),
        );
    }
}

/// Parses a comma-separated schedule of Go-style durations.
pub fn parse_schedule(s: &str) -> Result<Vec<Duration>, String> {
    s.split(',')
        .map(|p| crate::options::parse_std_duration(p.trim()))
        .collect()
}

/// `wait` ±20 %: spreads the retries of many deliveries that failed together.
fn jitter(wait: Duration) -> Duration {
    let f: f64 = 0.8 + 0.4 * rand::random::<f64>();
    wait.mul_f64(f)
}

/// Longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(24 * 3600);

/// `Retry-After` as seconds or an HTTP date (relative to the wall-clock
/// `now`, the receiver's time frame), capped at [`MAX_RETRY_AFTER`].
fn retry_after(headers: &reqwest::header::HeaderMap, now: DateTime<Utc>) -> Option<Duration> {
    let v = headers
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim();
    let d = match v.parse::<u64>() {
        Ok(secs) => Duration::from_secs(secs),
        Err(_) => {
            let at = DateTime::parse_from_rfc2822(v).ok()?.with_timezone(&Utc);
            (at - now).to_std().unwrap_or_default()
        }
    };
    Some(d.min(MAX_RETRY_AFTER))
}

fn excerpt(body: &[u8]) -> Option<String> {
    if body.is_empty() {
        return None;
    }
    let s = String::from_utf8_lossy(&body[..body.len().min(512)]);
    Some(s.into_owned())
}

/// Sends one claimed delivery and records the attempt.
pub async fn deliver(service: &Service, cfg: &DeliveryConfig, c: Claimed) -> crate::Result<()> {
    let now = service.now();
    let sent_at = Utc::now();
    let format = WebhookFormat::parse(&c.format).unwrap_or_default();
    let mut secrets = vec![c.secret.as_str()];
    if let (Some(prev), Some(until)) = (&c.previous_secret, c.previous_secret_expires_at)
        && until > now
    {
        secrets.push(prev);
    }
    let msg = render(
        format,
        &cfg.site,
        &c.message_id,
        &c.event,
        c.kept.as_deref(),
        &secrets,
        sent_at,
    );
    let started = std::time::Instant::now();
    let sent = match cfg.egress.request(reqwest::Method::POST, &c.url) {
        Ok(mut req) => {
            req = req.header(reqwest::header::CONTENT_TYPE, msg.content_type);
            for (k, v) in &msg.headers {
                req = req.header(*k, v);
            }
            cfg.egress.send(req.body(msg.body.clone())).await
        }
        Err(e) => Err(e),
    };
    let (status, error, excerpt, latency, gone, wait) = match &sent {
        Ok(resp) => {
            let code = resp.status.as_u16();
            let ok = resp.status.is_success();
            (
                Some(i32::from(code)),
                (!ok).then(|| format!("HTTP {code}")),
                excerpt(&resp.body),
                resp.elapsed,
                code == 410,
                retry_after(&resp.headers, Utc::now()),
            )
        }
        Err(e) => (
            None,
            Some(e.to_string()),
            None,
            started.elapsed(),
            false,
            None::<Duration>,
        ),
    };
    let delivered = status.is_some_and(|s| (200..300).contains(&s));
    let n = usize::try_from(c.attempts).unwrap_or(usize::MAX).max(1);
    let (state, outcome, next) = if delivered {
        ("delivered", "delivered", now)
    } else if gone {
        ("failed", "gone", now)
    } else if let Some(base) = cfg.schedule.get(n - 1) {
        // Not before the receiver asked, nor sooner than the schedule.
        let wait = jitter(*base).max(wait.unwrap_or_default());
        let next = now + chrono::Duration::from_std(wait).unwrap_or_default();
        ("pending", "retry", next)
    } else {
        ("failed", "failed", now)
    };
    let labels = AttemptLabels {
        webhook: c.webhook.clone(),
        outcome: outcome.to_string(),
    };
    cfg.metrics.attempts.get_or_create(&labels).inc();
    cfg.metrics
        .latency
        .get_or_create(&labels)
        .observe(latency.as_secs_f64());
    let o = Outcome {
        status,
        latency_ms: i32::try_from(latency.as_millis()).unwrap_or(i32::MAX),
        error: error.clone(),
        excerpt,
        state,
        next_attempt_at: next,
        at: now,
    };
    let mut tx = service.begin().await?;
    let failing_since = webhooks::record(&mut tx, &c, &cfg.replica, &o).await?;
    let disable_for = if gone {
        Some(("gone", "the endpoint answered 410 Gone".to_string()))
    } else {
        failing_since
            .filter(|since| {
                chrono::Duration::from_std(cfg.disable_after).is_ok_and(|d| now - *since > d)
            })
            .map(|since| {
                let since = since.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
                (
                    "failing",
                    format!("every delivery attempt failed since {since}"),
                )
            })
    };
    let mut disabled = None;
    if let Some((why, reason)) = disable_for
        && webhooks::disable(&mut tx, c.webhook_id, &reason, now).await?
    {
        tracing::warn!(webhook = %c.webhook, %reason, "webhook disabled");
        disabled = Some(why);
        crate::db::audit::insert(
            &mut tx,
            &NewAudit {
                at: now,
                actor: "fleetgate-hub",
                action: "webhook.disable",
                target_kind: "webhook",
                target_name: &c.webhook,
                before: None,
                after: Some(serde_json::json!({"enabled": false, "disabledReason": reason})),
                reason: Some(&reason),
                who: crate::db::audit::Who {
                    kind: Some("hub".into()),
                    ..Default::default()
                },
            },
        )
        .await?;
    }
    tx.commit().await?;
    if let Some(why) = disabled {
        let labels = DisabledLabels {
            webhook: c.webhook.clone(),
            reason: why.to_string(),
        };
        cfg.metrics.disabled.get_or_create(&labels).inc();
    }
    if let Err(EgressError::Refused(r)) = &sent {
        tracing::warn!(webhook = %c.webhook, refused = %r, "webhook destination refused");
    }
    Ok(())
}

/// Claims the deliveries due now (by the hub's clock) and sends them, each
/// endpoint's oldest first; returns how many were claimed. The worker's
/// step; tests call it to deliver at an instant of the injected clock.
pub async fn tick(service: &Service, cfg: &DeliveryConfig) -> crate::Result<usize> {
    let batch = {
        let mut conn = service.conn().await?;
        let lease = cfg.lease.as_secs_f64();
        webhooks::claim(&mut conn, &cfg.replica, lease, 64, service.now()).await?
    };
    let claimed = batch.len();
    let sends = batch.into_iter().map(|c| async move {
        let webhook = c.webhook.clone();
        if let Err(e) = deliver(service, cfg, c).await {
            tracing::warn!(%webhook, error = %e, "recording a webhook attempt failed");
        }
    });
    futures::future::join_all(sends).await;
    Ok(claimed)
}

/// Claims and delivers until `stop`; wakes on `wake` or every `poll`.
pub async fn run(
    service: Service,
    cfg: DeliveryConfig,
    wake: Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            step = tick(&service, &cfg) => match step {
                Ok(0) => {}
                Ok(_) => continue,
                Err(e) => tracing::warn!(error = %e, "claiming webhook deliveries failed"),
            },
        }
        tokio::select! {
            () = stop.cancelled() => return,
            () = wake.notified() => {}
            () = tokio::time::sleep(cfg.poll) => {}
        }
    }
}

/// Core's webhook calls (URL checks, the test message) through the outbound client.
impl WebhookClient for Egress {
    fn preflight<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>> {
        async move {
            Egress::preflight(self, url)
                .await
                .map(|_| ())
                .map_err(|e| e.to_string())
        }
        .boxed()
    }

    fn post<'a>(
        &'a self,
        url: &'a str,
        msg: Message,
    ) -> BoxFuture<'a, Result<WebhookAnswer, WebhookCallError>> {
        async move {
            let mut req = self
                .request(reqwest::Method::POST, url)
                .map_err(|e| WebhookCallError::Url(e.to_string()))?
                .header(reqwest::header::CONTENT_TYPE, msg.content_type);
            for (k, v) in &msg.headers {
                req = req.header(*k, v);
            }
            let r = self
                .send(req.body(msg.body))
                .await
                .map_err(|e| WebhookCallError::Failed(e.to_string()))?;
            Ok(WebhookAnswer {
                status: r.status.as_u16(),
                elapsed: r.elapsed,
                body: r.body,
            })
        }
        .boxed()
    }
}
