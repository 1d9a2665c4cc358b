//! One fleet-view reader per replica for every fleet watcher (gRPC
//! `WatchFleet`, the dashboard's `GET /api/v1/events`): a task re-reads the
//! [`FleetView`] on change notifications, at the next gate transition and every
//! few seconds, and publishes it through a `watch`; subscribers diff views
//! themselves. The task runs only while someone subscribes.

pub mod approval_events;
pub mod calendar_events;
pub mod events;
mod filter;
mod rollout_events;
mod snapshot_events;
pub mod stream;
mod would_events;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use tokio::sync::watch;

use crate::service::fleet::FleetView;
use crate::service::{Actor, Role, Service};
use crate::{Error, Result};

/// Longest wait between two reads (spoke connections and held counts do not
/// notify, so they are polled).
const POLL: Duration = Duration::from_secs(2);

/// Wait before re-reading after a failed read.
const RETRY: Duration = Duration::from_secs(1);

/// One published read: `seq` is the subscribe request it answers (requests
/// made before the read started are answered by it).
#[derive(Debug)]
struct Published {
    seq: u64,
    view: std::result::Result<Arc<FleetView>, String>,
}

type Latest = Option<Arc<Published>>;

/// The replica's shared fleet view. Cheap to clone.
#[derive(Clone)]
pub struct FleetFeed {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for FleetFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FleetFeed").finish_non_exhaustive()
    }
}

struct Inner {
    service: Service,
    /// The fan-out's change counter (bumped per notification and resync).
    changes: watch::Receiver<u64>,
    latest: watch::Sender<Latest>,
    /// Bumped by each subscribe: "read again, I need a view from now on".
    requested: watch::Sender<u64>,
    /// Whether the reader task runs; also serialises its start and stop
    /// against new subscriptions.
    running: Mutex<bool>,
    reads: Counter,
}

/// A subscriber's stream of views after its first one.
#[derive(Debug)]
pub struct FleetUpdates {
    rx: watch::Receiver<Latest>,
}

impl FleetUpdates {
    /// The next view (at most the newest: views in between are skipped).
    /// `None` when the feed is gone.
    pub async fn next(&mut self) -> Option<Result<Arc<FleetView>>> {
        self.rx.changed().await.ok()?;
        let latest = self.rx.borrow_and_update().clone()?;
        Some(view_of(&latest))
    }
}

fn view_of(p: &Published) -> Result<Arc<FleetView>> {
    p.view
        .clone()
        .map_err(|e| Error::Internal(format!("reading the fleet view: {e}")))
}

impl FleetFeed {
    /// A feed reading through `service`, woken by `changes` (the replica's
    /// [`crate::fanout::Fanout::changes`]).
    pub fn new(service: Service, changes: watch::Receiver<u64>) -> Self {
        Self {
            inner: Arc::new(Inner {
                service,
                changes,
                latest: watch::channel(None).0,
                requested: watch::channel(0).0,
                running: Mutex::new(false),
                reads: Counter::default(),
            }),
        }
    }

    /// Fleet views read so far (also exported as a metric).
    pub fn reads(&self) -> u64 {
        self.inner.reads.get()
    }

    /// Whether the reader task runs (it stops when the last subscriber leaves).
    pub fn is_running(&self) -> bool {
        *self.inner.running.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The read counter, for the metrics registry.
    pub fn reads_counter(&self) -> Counter {
        self.inner.reads.clone()
    }

    /// Subscribes `actor` (viewer): returns a view read after this call began
    /// (concurrent subscribers share that read) and the views after it.
    pub async fn subscribe(&self, actor: &Actor) -> Result<(Arc<FleetView>, FleetUpdates)> {
        actor.require(Role::Viewer)?;
        let (mut rx, seq) = {
            let mut running = self.inner.running.lock().unwrap_or_else(|e| e.into_inner());
            let rx = self.inner.latest.subscribe();
            self.inner.requested.send_modify(|n| *n += 1);
            let seq = *self.inner.requested.borrow();
            if !*running {
                *running = true;
                tokio::spawn(run(self.inner.clone()));
            }
            (rx, seq)
        };
        let first = rx
            .wait_for(|l| l.as_ref().is_some_and(|p| p.seq >= seq))
            .await
            .map_err(|_| Error::Internal("fleet feed stopped".into()))?
            .clone();
        let first = first.ok_or_else(|| Error::Internal("fleet feed stopped".into()))?;
        Ok((view_of(&first)?, FleetUpdates { rx }))
    }
}

/// The reader task: reads at once, then on every wake-up, until nobody
/// subscribes any more.
async fn run(inner: Arc<Inner>) {
    let mut changes = inner.changes.clone();
    let mut requested = inner.requested.subscribe();
    let reader = Actor::new("fleet-feed", Role::Viewer);
    loop {
        changes.borrow_and_update();
        let seq = *requested.borrow_and_update();
        inner.reads.inc();
        let read = inner.service.fleet_view(&reader).await;
        let wait = match &read {
            Ok(v) => v
                .next_transition
                .and_then(|t| (t - inner.service.now()).to_std().ok())
                .map_or(POLL, |d| d.min(POLL) + Duration::from_millis(5)),
            Err(e) => {
                tracing::warn!(error = %e, "reading the fleet view failed; retrying");
                RETRY
            }
        };
        let view = read.map(Arc::new).map_err(|e| e.to_string());
        inner
            .latest
            .send_replace(Some(Arc::new(Published { seq, view })));
        tokio::select! {
            () = inner.latest.closed() => {
                let mut running = inner.running.lock().unwrap_or_else(|e| e.into_inner());
                if inner.latest.receiver_count() == 0 {
                    *running = false;
                    return;
                }
            }
            changed = changes.changed() => {
                if changed.is_err() {
                    // The fan-out is gone: only polling is left.
                    tokio::time::sleep(wait).await;
                }
            }
            _ = requested.changed() => {}
            () = tokio::time::sleep(wait) => {}
        }
    }
}
