//! What webhook subscriptions need from the outside world: checking that a URL may be
//! called and sending one message (the test message), declared here and implemented by
//! the adapters' outbound client under the hub's egress rules.

use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::notify::format::Message;

/// A webhook's HTTP answer.
#[derive(Debug, Clone)]
pub struct WebhookAnswer {
    /// The HTTP status code.
    pub status: u16,
    /// How long the exchange took.
    pub elapsed: Duration,
    /// The body (within the client's size cap).
    pub body: Bytes,
}

/// Why a message was not answered.
#[derive(Debug, Clone)]
pub enum WebhookCallError {
    /// The URL is one the client never calls (a scheme or destination the egress rules
    /// refuse): the request is refused naming `url`.
    Url(String),
    /// The call was made and failed (unreachable, timeout, a refused redirect, ...).
    Failed(String),
}

/// Calls webhook endpoints (outbound HTTP under the hub's egress rules).
pub trait WebhookClient: Send + Sync {
    /// Whether `url` may be called at all (scheme, and the destination its name resolves
    /// to now); the refusal in words.
    fn preflight<'a>(&'a self, url: &'a str) -> BoxFuture<'a, Result<(), String>>;

    /// POSTs `msg` to `url`.
    fn post<'a>(
        &'a self,
        url: &'a str,
        msg: Message,
    ) -> BoxFuture<'a, Result<WebhookAnswer, WebhookCallError>>;
}
