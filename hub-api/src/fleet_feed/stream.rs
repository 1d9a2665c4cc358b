//! The stream every fleet watcher follows: the events of its first view, then the
//! difference of each view the replica's feed publishes, each within the watcher's
//! scope as of that view, until shutdown or until its credential stops being valid.

use std::sync::Arc;

use futures::Stream;
use tokio_util::sync::CancellationToken;

use super::FleetUpdates;
use super::events::{Filter, FleetEvent, diff};
use crate::Result;
use crate::service::Service;
use crate::service::access::Credential;
use crate::service::fleet::FleetView;

/// The events for the watcher holding `credential`: those of `first`, then
/// the difference of each view the replica's feed publishes (no read of its
/// own), until `shutdown`. A revoked token (or an ended or expired session
/// or JWT) ends the stream with its error.
pub fn events(
    service: Service,
    mut updates: FleetUpdates,
    shutdown: CancellationToken,
    credential: Credential,
    filter: Filter,
    first: Arc<FleetView>,
) -> impl Stream<Item = Result<FleetEvent>> + Send {
    async_stream::try_stream! {
        // The watcher's scope, from its grants now: re-read with every view,
        // so a changed access policy or token applies to open streams too.
        let actor = service.authenticate(&credential).await?.actor;
        for e in diff(None, &first, &filter.within(actor.read_scope(), &first)) {
            yield e;
        }
        let mut prev = first;
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => break,
                next = updates.next() => match next {
                    Some(next) => next,
                    None => break,
                },
            };
            // Re-check the caller: a revoked token ends the stream.
            let actor = service.authenticate(&credential).await?.actor;
            let next = next?;
            for e in diff(Some(&prev), &next, &filter.within(actor.read_scope(), &next)) {
                yield e;
            }
            prev = next;
        }
    }
}
