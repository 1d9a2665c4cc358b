//! The replica's one LISTEN connection on `fleetgate_changes`. Notifications
//! sent while it is disconnected are lost, so after every (re)connect it first
//! listens, then re-reads every connected cluster (resync), then follows
//! notifications. Failed reads are retried shortly after. After its first connect it
//! reads every cluster once (the fan-out's warm start, kept for [`WARM_FOR`]).

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

/// How long the replica keeps what its warm start read (`Fanout::warm_up`) for spokes
/// that have not connected yet: a reconnect storm after a restart is over well within it
/// (10,000 spokes: seconds), and a spoke arriving later is read from the database.
const WARM_FOR: Duration = Duration::from_secs(60);

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
    let mut warmed = false;
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
        // Once per replica, now that it listens, and in this task: a notification
        // received meanwhile is applied after the warm entries are kept, and drops
        // those it names. A reconnect's resync drops them all.
        let mut cool_at = None;
        if !warmed {
            warmed = true;
            let started = std::time::Instant::now();
            match fanout.warm_up().await {
                Ok(clusters) => {
                    tracing::info!(
                        clusters,
                        ms = started.elapsed().as_secs_f64() * 1e3,
                        "warm start: every cluster's snapshot read"
                    );
                    cool_at = Some(tokio::time::Instant::now() + WARM_FOR);
                }
                Err(e) => {
                    tracing::warn!(error = %e, "warm start failed; spokes are read as they connect")
                }
            }
        }
        // A fixed deadline (not a fresh sleep per loop), so a steady stream of
        // notifications cannot postpone the retry of failed reads forever.
        let mut retry_at = tokio::time::Instant::now() + RETRY_FAILED_AFTER;
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                () = sleep_until_some(cool_at) => {
                    cool_at = None;
                    let left = fanout.cool();
                    tracing::debug!(left, "warm start over");
                }
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

/// Sleeps until `at`; forever if `None`.
async fn sleep_until_some(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}
