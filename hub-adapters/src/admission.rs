//! Admission webhook calls: core's [`AdmissionClient`] over the hub's outbound client
//! ([`crate::egress`]): no redirects at all, the size cap, private destinations refused
//! unless allowed, the webhook's own CA bundle beside the hub's. Which webhooks are asked,
//! in which order, and what their answers mean stays in core (`service::admission`).

use std::time::Duration;

use fleetgate_api_types::admission::AdmissionRequest;
use futures::future::BoxFuture;

use crate::db::admission_webhooks::AdmissionRow;
use crate::egress::{Egress, EgressPolicy};
use crate::service::admission::outside::{AdmissionAnswer, AdmissionClient};
use crate::{Error, Result};

/// Admission calls under an egress policy (`--egress-*`, `--admission-allow-private`).
#[derive(Debug, Clone, Default)]
pub struct EgressAdmission {
    policy: EgressPolicy,
}

impl EgressAdmission {
    /// Calls under `policy`.
    pub fn new(policy: EgressPolicy) -> Self {
        Self { policy }
    }
}

impl AdmissionClient for EgressAdmission {
    fn check_url(&self, url: &str) -> Result<()> {
        Egress::new(self.policy.clone())
            .map_err(|e| Error::Internal(e.to_string()))?
            .check_url(url)
            .map_err(|e| Error::invalid("url", e.to_string()))?;
        Ok(())
    }

    fn check_ca_bundle(&self, pem: &str) -> Result<()> {
        let certs = reqwest::Certificate::from_pem_bundle(pem.as_bytes())
            .map_err(|e| Error::invalid("caBundle", format!("not PEM certificates: {e}")))?;
        if certs.is_empty() {
            return Err(Error::invalid("caBundle", "holds no certificate"));
        }
        Ok(())
    }

    fn send<'a>(
        &'a self,
        hook: &'a AdmissionRow,
        req: &'a AdmissionRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, std::result::Result<AdmissionAnswer, String>> {
        Box::pin(async move {
            let resp = send(&self.policy, hook, req, timeout).await?;
            Ok(AdmissionAnswer {
                status: resp.status.as_u16(),
                body: resp.body.to_vec(),
            })
        })
    }
}

/// POSTs the request under the hub's egress rules, no redirects, the hook's CA bundle
/// beside the hub's.
async fn send(
    policy: &EgressPolicy,
    hook: &AdmissionRow,
    req: &AdmissionRequest,
    timeout: Duration,
) -> std::result::Result<crate::egress::EgressResponse, String> {
    let mut policy = policy.clone().max_redirects(0);
    if let Some(pem) = &hook.ca_bundle {
        let mut all = policy.ca_bundle_pem.take().unwrap_or_default();
        all.extend_from_slice(b"\n");
        all.extend_from_slice(pem.as_bytes());
        policy.ca_bundle_pem = Some(all);
    }
    policy.timeout = timeout;
    policy.connect_timeout = policy.connect_timeout.min(timeout);
    let egress = Egress::new(policy).map_err(|e| e.to_string())?;
    let body = serde_json::to_vec(req).map_err(|e| e.to_string())?;
    let request = egress
        .request(reqwest::Method::POST, &hook.url)
        .map_err(|e| e.to_string())?
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    let resp = egress.send(request).await.map_err(|e| match e {
        crate::egress::EgressError::Timeout => format!("no answer within {}", humantime(timeout)),
        other => other.to_string(),
    })?;
    if resp.truncated {
        return Err(format!("answer larger than {} bytes", resp.body.len()));
    }
    if resp.status.is_redirection() {
        return Err(format!(
            "answered {} (redirects are not followed)",
            resp.status.as_u16()
        ));
    }
    Ok(resp)
}

fn humantime(d: Duration) -> String {
    fleetgate_policy::format_duration(chrono::Duration::milliseconds(
        i64::try_from(d.as_millis()).unwrap_or(i64::MAX),
    ))
}
