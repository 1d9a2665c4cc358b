//! Whether PostgreSQL is reachable, known without waiting on the pool. A
//! watcher pings over a connection of its own every second (1 s timeout);
//! when that fails, and a fresh connection fails too, the database is down:
//! `/readyz` answers 503 at once, and requests needing the database fail fast
//! with 503 `unavailable` instead of each waiting out the pool's acquire
//! timeout. While down the watcher reconnects every 500 ms and marks the
//! database up again by itself. A request that meets a connection error wakes
//! the watcher to check at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use prometheus_client::metrics::gauge::Gauge;
use sqlx::{Connection, PgConnection, PgPool};
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

/// How often the watcher pings while the database is up.
const PING_EVERY: Duration = Duration::from_secs(1);
/// How often it tries to reconnect while the database is down.
const RECONNECT_EVERY: Duration = Duration::from_millis(500);
/// Longest wait for one connect or ping.
const PROBE_TIMEOUT: Duration = Duration::from_secs(1);

/// Shared reachability of the database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct DbHealth {
    up: Arc<watch::Sender<bool>>,
    /// Wakes the watcher for an immediate check.
    suspect: Arc<Notify>,
    /// `fleetgate_hub_database_up`: 1 while reachable, 0 while not.
    gauge: Gauge,
    /// False while the replica's change listener is known to be disconnected
    /// (from a lost connection until it has listened again and resynced):
    /// `/readyz` answers 503 meanwhile, so 200 means changes flow again.
    following: Arc<AtomicBool>,
}

impl Default for DbHealth {
    fn default() -> Self {
        let gauge = Gauge::default();
        gauge.set(1);
        Self {
            up: Arc::new(watch::Sender::new(true)),
            suspect: Arc::new(Notify::new()),
            gauge,
            following: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl DbHealth {
    /// Up until the watcher finds otherwise.
    pub fn new() -> Self {
        Self::default()
    }

    /// The reachability as a gauge (1 up, 0 down) for the metrics registry.
    pub fn gauge(&self) -> Gauge {
        self.gauge.clone()
    }

    /// False while the database is known to be unreachable.
    pub fn is_up(&self) -> bool {
        *self.up.borrow()
    }

    /// Resolves when the database is (or becomes) known to be unreachable.
    pub async fn went_down(&self) {
        let mut rx = self.up.subscribe();
        // The sender lives in `self`, so the channel never closes here.
        let _ = rx.wait_for(|up| !up).await;
    }

    /// Whether the change listener follows notifications (true unless it is
    /// known to be reconnecting).
    pub fn is_following(&self) -> bool {
        self.following.load(Ordering::Relaxed)
    }

    /// The change listener lost its connection (false) or has listened and
    /// resynced again (true).
    pub fn set_following(&self, following: bool) {
        self.following.store(following, Ordering::Relaxed);
    }

    /// A request met a connection error: check now (no-op without a watcher,
    /// so nothing is ever marked down that nothing would mark up again).
    pub fn suspect(&self) {
        self.suspect.notify_one();
    }

    fn set(&self, up: bool, why: &str) {
        let changed = self.up.send_if_modified(|cur| {
            let changed = *cur != up;
            *cur = up;
            changed
        });
        self.gauge.set(i64::from(up));
        if changed && up {
            tracing::info!("database reachable again");
        } else if changed {
            tracing::error!(
                error = why,
                "database unreachable; answering 503 until it is back"
            );
        }
    }

    /// Watches the database `pool` connects to until `stop`.
    pub async fn watch(self, pool: PgPool, stop: CancellationToken) {
        let opts = (*pool.connect_options()).clone();
        let mut conn: Option<PgConnection> = None;
        loop {
            let result = probe(&opts, &mut conn).await;
            let wait = match result {
                Ok(()) => {
                    self.set(true, "");
                    PING_EVERY
                }
                Err(why) => {
                    self.set(false, &why);
                    RECONNECT_EVERY
                }
            };
            tokio::select! {
                () = stop.cancelled() => break,
                () = self.suspect.notified() => {}
                () = tokio::time::sleep(wait) => {}
            }
        }
        if let Some(c) = conn {
            let _ = c.close().await;
        }
    }
}

/// Pings over `conn`; if that fails (or there is none), connects afresh and
/// pings once more. Each step is bounded by [`PROBE_TIMEOUT`].
async fn probe(
    opts: &sqlx::postgres::PgConnectOptions,
    conn: &mut Option<PgConnection>,
) -> Result<(), String> {
    if let Some(c) = conn.as_mut() {
        if bounded(c.ping()).await.is_ok() {
            return Ok(());
        }
        // Broken (server restarted, connection cut): reconnect below.
        *conn = None;
    }
    let mut fresh = bounded(PgConnection::connect_with(opts)).await?;
    bounded(fresh.ping()).await?;
    *conn = Some(fresh);
    Ok(())
}

async fn bounded<T>(f: impl Future<Output = Result<T, sqlx::Error>>) -> Result<T, String> {
    match tokio::time::timeout(PROBE_TIMEOUT, f).await {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!("no answer within {PROBE_TIMEOUT:?}")),
    }
}

/// True for errors that mean "the database cannot be reached right now"
/// rather than "this request or our code is wrong": no connection within the
/// pool's timeout, I/O and TLS failures, and PostgreSQL's connection
/// exceptions, shutdowns and connection limit.
pub fn is_unreachable(e: &sqlx::Error) -> bool {
    match e {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(db) => db.code().is_some_and(|c| {
            // 08: connection exception; 57P01-03: admin/crash shutdown,
            // cannot connect now (starting up); 53300: too many connections.
            c.starts_with("08") || matches!(&*c, "57P01" | "57P02" | "57P03" | "53300")
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_failures_are_unreachable_bugs_are_not() {
        assert!(is_unreachable(&sqlx::Error::PoolTimedOut));
        assert!(is_unreachable(&sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused
        ))));
        assert!(!is_unreachable(&sqlx::Error::RowNotFound));
        assert!(!is_unreachable(&sqlx::Error::Protocol("bad".into())));
    }

    #[tokio::test]
    async fn went_down_resolves_on_the_change_and_up_again() {
        let h = DbHealth::new();
        assert!(h.is_up());
        let waiter = tokio::spawn({
            let h = h.clone();
            async move { h.went_down().await }
        });
        h.set(false, "test");
        waiter.await.unwrap();
        assert!(!h.is_up());
        h.went_down().await; // already down: resolves at once
        h.set(true, "");
        assert!(h.is_up());
    }
}
