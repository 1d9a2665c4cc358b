//! What the service needs from the outside world, declared here as traits the adapters
//! (`fleetgate-hub-adapters`) implement and the binary wires into [`crate::service::Service`]:
//! core decides (which webhook, in which order, what an answer means), an adapter makes
//! the call.

use std::fmt::Debug;
use std::time::Duration;

use fleetgate_api_types::admission::AdmissionRequest;
use futures::future::BoxFuture;

use crate::Result;
use crate::db::admission_webhooks::AdmissionRow;

/// A webhook's HTTP answer, as the admission decision reads it.
#[derive(Debug, Clone)]
pub struct AdmissionAnswer {
    /// The HTTP status code.
    pub status: u16,
    /// The body (within the client's size cap).
    pub body: Vec<u8>,
}

/// Calls admission webhooks (outbound HTTP under the hub's egress rules).
pub trait AdmissionClient: Debug + Send + Sync {
    /// Refuses a webhook URL the client would never call: 422 naming `url` (a scheme or
    /// destination the egress rules refuse).
    fn check_url(&self, url: &str) -> Result<()>;

    /// Refuses a webhook's own CA bundle the client could not use: 422 naming `caBundle`
    /// (not PEM certificates, or none in it).
    fn check_ca_bundle(&self, pem: &str) -> Result<()>;

    /// POSTs `req` to `hook` within `timeout`: the answer, or why there is none (the text
    /// goes into the outcome and the refusal message). No redirects are followed; a
    /// redirect, or an answer over the size cap, is an error.
    fn send<'a>(
        &'a self,
        hook: &'a AdmissionRow,
        req: &'a AdmissionRequest,
        timeout: Duration,
    ) -> BoxFuture<'a, std::result::Result<AdmissionAnswer, String>>;
}
