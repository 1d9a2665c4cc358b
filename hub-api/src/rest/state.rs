//! What every REST handler gets ([`AppState`]): the replica and the HTTP settings. A leaf of
//! `rest/`: the handlers import it, it imports none of them.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::replica::Replica;

/// What every handler gets: the replica and the HTTP settings.
#[derive(Debug, Clone)]
pub struct AppState {
    pub replica: Replica,
    /// Largest accepted request body, in bytes.
    pub body_limit: usize,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Cancelled at shutdown; ends long-lived responses (event streams).
    pub shutdown: CancellationToken,
}

impl AppState {
    /// The HTTP side of `replica`, with its HTTP settings.
    pub fn from_replica(replica: Replica) -> Self {
        Self {
            body_limit: replica.http.http_body_limit,
            timeout: replica.http.timeout(),
            shutdown: CancellationToken::new(),
            replica,
        }
    }
}

/// Handlers reach the replica's parts (`state.service`, `state.fleet`, ...)
/// directly.
impl std::ops::Deref for AppState {
    type Target = Replica;
    fn deref(&self) -> &Replica {
        &self.replica
    }
}
