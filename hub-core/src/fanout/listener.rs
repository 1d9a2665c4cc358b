//! The replica's one LISTEN connection on `fleetgate_changes`. Notifications
//! sent while it is disconnected are lost, so after every (re)connect it first
//! listens, then re-reads every connected cluster (resync), then follows
//! notifications. Failed reads are retried shortly after.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::Fanout;
use crate::db::revision::{self, ChangeNotice};
use crate::metrics::GrpcMetrics;
use crate::service::Service;

/// Prefix of the listener connection's `application_name`, which is
/// `fleetgate-hub-listener/<replica id>` (visible in `pg_stat_activity`, so
/// operators and tests can find one replica's listener).
pub const LISTENER_APPLICATION_NAME: &str = "fleetgate-hub-listener";

const MIN_BACKOFF: Duration = Duration::from_millis(100);
/// Short: each attempt already waits up to the dedicated pool's 1 s acquire
/// timeout, retrying a refused connection every 200 ms at most, and after an
/// outage the replica is not ready (`/readyz`) until the listener is back.
const MAX_BACKOFF: Duration = Duration::from_millis(500);
const RETRY_FAILED_AFTER: Duration = Duration::from_secs(1);

/// Runs the listener of replica `replica` until `shutdown` is cancelled.
pub async fn run(
    fanout: Fanout,
    service: Service,
    replica: String,
    metrics: GrpcMetrics,
    shutdown: CancellationToken,
) {
    // A separate one-connection pool so the listener's session carries its own
    // application_name and never competes with request handlers for a slot.
    let listener_pool =
        service.dedicated_connection(&format!("{LISTENER_APPLICATION_NAME}/{replica}"));
    let mut backoff = MIN_BACKOFF;
    while !shutdown.is_cancelled() {
        let mut listener = match revision::listen(&listener_pool).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, ?backoff, "change listener cannot connect; retrying");
                tokio::select! {
                    () = shutdown.cancelled() => break,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
                continue;
            }
        };
        backoff = MIN_BACKOFF;
        metrics.listener_connects.inc();
        tracing::info!("change listener connected; resyncing connected clusters");
        let mut retry: BTreeSet<String> = fanout.resync().await.into_iter().collect();
        service.db_health().set_following(true);
        // A fixed deadline (not a fresh sleep per loop), so a steady stream of
        // notifications cannot postpone the retry of failed reads forever.
        let mut retry_at = tokio::time::Instant::now() + RETRY_FAILED_AFTER;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = tokio::time::sleep_until(retry_at), if !retry.is_empty() => {
                    let names = std::mem::take(&mut retry).into_iter().collect();
                    retry.extend(fanout.refresh(names).await);
                    retry_at = tokio::time::Instant::now() + RETRY_FAILED_AFTER;
                }
                received = listener.try_recv() => match received {
                    Ok(Some(n)) => match serde_json::from_str::<ChangeNotice>(n.payload()) {
                        Ok(notice) => {
                            tracing::debug!(revision = notice.revision, "change notification");
                            metrics.notifications.inc();
                            retry.extend(fanout.apply(&notice).await);
                        }
                        Err(e) => {
                            // Unknown payload: be safe and recompute everything.
                            tracing::warn!(error = %e, payload = n.payload(), "bad change notification");
                            retry.extend(fanout.resync().await);
                        }
                    },
                    Ok(None) => {
                        tracing::warn!("change listener lost its connection; reconnecting");
                        service.db_health().set_following(false);
                        break;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "change listener failed; reconnecting");
                        service.db_health().set_following(false);
                        break;
                    }
                },
            }
        }
    }
    listener_pool.close().await;
}
