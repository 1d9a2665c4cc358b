//! What a replica runs for notifications: the scheduler and the spoke scan (core) and the
//! webhook delivery worker ([`crate::webhook_delivery`]), sharing a wake-up so locally
//! enqueued events go out at once.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::egress::{EgressOptions, EgressPolicy};
use crate::notify::NotifyOptions;
use crate::service::Service;

/// The webhooks' egress policy: the shared one plus the webhook flags, following no
/// redirects (a 3xx is a failed delivery).
pub fn egress_policy(opts: &NotifyOptions, egress: &EgressOptions) -> Result<EgressPolicy, String> {
    Ok(egress
        .policy()
        .map_err(|e| e.to_string())?
        .allow_private(opts.webhook_allow_private)
        .allow_http(opts.webhook_allow_http)
        .max_redirects(0))
}

/// What a replica runs for notifications: the scheduler and the delivery
/// worker, sharing a wake-up so locally enqueued events go out at once.
#[derive(Debug, Clone)]
pub struct Notifier {
    pub delivery: crate::webhook_delivery::DeliveryConfig,
    pub leads: Vec<chrono::Duration>,
    /// How long a spoke is gone before `spoke.disconnected`.
    pub spoke_grace: chrono::Duration,
    pub wake: Arc<tokio::sync::Notify>,
}

impl Notifier {
    /// From the flags.
    pub fn new(
        opts: &NotifyOptions,
        egress: &EgressOptions,
        replica: String,
        metrics: crate::webhook_delivery::NotifyMetrics,
    ) -> Result<Self, String> {
        let egress =
            crate::egress::Egress::new(egress_policy(opts, egress)?).map_err(|e| e.to_string())?;
        Ok(Self {
            delivery: crate::webhook_delivery::DeliveryConfig {
                replica,
                egress,
                site: crate::notify::format::Site {
                    public_url: opts.public_url.clone(),
                },
                lease: opts.webhook_lease,
                poll: opts.webhook_poll,
                schedule: crate::webhook_delivery::parse_schedule(&opts.webhook_retry_schedule)
                    .map_err(|e| format!("--webhook-retry-schedule: {e}"))?,
                disable_after: opts.webhook_disable_after,
                metrics,
            },
            leads: opts.leads()?,
            spoke_grace: chrono::Duration::from_std(opts.notify_spoke_grace)
                .map_err(|e| format!("--notify-spoke-grace: {e}"))?,
            wake: Arc::new(tokio::sync::Notify::new()),
        })
    }

    /// Runs the scheduler, the spoke scan and the worker until `stop`.
    pub async fn run(self, service: Service, stop: CancellationToken) {
        tokio::join!(
            crate::notify::spokes::run(service.clone(), self.spoke_grace, stop.clone()),
            crate::notify::schedule::run(
                service.clone(),
                self.leads.clone(),
                self.wake.clone(),
                stop.clone()
            ),
            crate::webhook_delivery::run(service, self.delivery, self.wake, stop),
        );
    }
}
