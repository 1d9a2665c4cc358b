//! One hub replica: the parts both APIs serve from — the service layer, the
//! change fan-out, the shared fleet feed, report ingestion and the metrics
//! registry — built in one place ([`Replica::new`]), and its background tasks
//! (the change listener, the report batcher, the rollout driver) run around whatever serves it
//! ([`Replica::run`]). Production, the tests and the demo all assemble a hub
//! this way; `rest`, `grpc` and `dashboard` are adapters over it.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::fanout::{Fanout, listener};
use crate::fleet_feed::FleetFeed;
use crate::metrics::{GrpcMetrics, Metrics, RolloutMetrics};
use crate::options::{GrpcOptions, HttpOptions};
use crate::service::Service;
use crate::service::clusters::lease::Lease;
use crate::service::reports::Reports;

/// A replica's parts. Cheap to clone (shared handles).
#[derive(Debug, Clone)]
pub struct Replica {
    pub service: Service,
    /// Per-cluster desired state of the spokes connected here.
    pub fanout: Fanout,
    /// The fleet view shared by every fleet watcher (WatchFleet, SSE).
    pub fleet: FleetFeed,
    /// Report ingestion and spoke connection state.
    pub reports: Arc<Reports>,
    /// The `/metrics` registry.
    pub metrics: Metrics,
    /// The spoke side's metrics (registered in `metrics`).
    pub grpc_metrics: GrpcMetrics,
    /// Rollout steps and commands taken on this replica (registered in `metrics`).
    pub rollout_metrics: RolloutMetrics,
    pub http: HttpOptions,
    pub grpc: GrpcOptions,
    /// Notification scheduling and webhook delivery (and the webhook egress
    /// client the webhook API's URL checks and test messages use).
    pub notifier: crate::notifier::Notifier,
    /// The calendar feed refresher.
    pub calendars: crate::calendar_sync::CalendarSync,
    /// Cancelled by the gRPC server once a drain has ended every spoke stream: no
    /// report can arrive any more, so [`Replica::run`] flushes and clears while the
    /// connections close.
    pub streams_drained: CancellationToken,
}

impl Replica {
    /// A replica over `service` with these settings and a fresh registry.
    pub fn new(service: Service, http: HttpOptions, grpc: GrpcOptions) -> Self {
        let metrics = Metrics::new();
        let fanout = Fanout::new(Arc::new(service.clone()));
        let fleet = FleetFeed::new(service.clone(), fanout.changes());
        let grpc_metrics = GrpcMetrics::default();
        let rollout_metrics = RolloutMetrics::default();
        let notify_metrics = crate::webhook_delivery::NotifyMetrics::default();
        let notifier = crate::notifier::Notifier::new(
            &crate::notify::NotifyOptions::default(),
            &crate::egress::EgressOptions::default(),
            grpc.replica(),
            notify_metrics.clone(),
        )
        .expect("default notification settings are valid");
        let calendar_metrics = crate::calendar_sync::CalendarMetrics::default();
        let calendars = crate::calendar_sync::CalendarSync::new(
            &crate::calendar_sync::CalendarOptions::default(),
            &crate::egress::EgressOptions::default(),
            grpc.replica(),
            calendar_metrics.clone(),
        )
        .expect("default calendar settings are valid");
        let reports = Reports::new(
            service.clone(),
            grpc.replica(),
            Duration::from_millis(grpc.report_flush_ms),
            grpc_metrics.clone(),
        );
        metrics.register(|r| {
            grpc_metrics.register(r);
            rollout_metrics.register(r);
            notify_metrics.register(r);
            calendar_metrics.register(r);
            service.approval_metrics().register(r);
            service.identities().metrics.register(r);
            r.register(
                "fleet_view_reads",
                "Fleet views read for WatchFleet and dashboard event streams (one per change, shared by all watchers)",
                fleet.reads_counter(),
            );
            r.register(
                "database_up",
                "1 while PostgreSQL answers the hub, 0 while it is unreachable (API calls then answer 503)",
                service.db_health().gauge(),
            );
        });
        Self {
            service,
            fanout,
            fleet,
            reports,
            metrics,
            grpc_metrics,
            rollout_metrics,
            http,
            grpc,
            notifier,
            calendars,
            streams_drained: CancellationToken::new(),
        }
    }

    /// The same replica with calendar feeds configured by these flags.
    pub fn with_calendars(
        mut self,
        opts: &crate::calendar_sync::CalendarOptions,
        egress: &crate::egress::EgressOptions,
    ) -> Result<Self> {
        let metrics = self.calendars.metrics.clone();
        self.calendars =
            crate::calendar_sync::CalendarSync::new(opts, egress, self.id().to_string(), metrics)
                .map_err(crate::Error::Internal)?;
        Ok(self)
    }

    /// The same replica with notifications configured by these flags.
    pub fn with_notify(
        mut self,
        opts: &crate::notify::NotifyOptions,
        egress: &crate::egress::EgressOptions,
    ) -> Result<Self> {
        let metrics = self.notifier.delivery.metrics.clone();
        self.notifier =
            crate::notifier::Notifier::new(opts, egress, self.id().to_string(), metrics)
                .map_err(crate::Error::Internal)?;
        Ok(self)
    }

    /// This replica's id (`clusters.connected_replica`).
    pub fn id(&self) -> &str {
        self.reports.replica()
    }

    /// Runs the replica's background tasks around `serving` (the servers):
    /// clears connection state a previous run of this replica left, watches
    /// the database's reachability, follows change notifications and writes
    /// reports until `serving` ends, then
    /// flushes pending reports and clears the connection state of the
    /// streams the drain ended.
    pub async fn run(&self, serving: impl Future<Output = Result<()>>) -> Result<()> {
        let tasks = CancellationToken::new();
        let health_task = tokio::spawn({
            let (service, tasks) = (self.service.clone(), tasks.clone());
            async move { service.watch_db(tasks).await }
        });
        // Should this future be dropped unfinished, its tasks stop with it.
        let _tasks_guard = tasks.clone().drop_guard();
        let cleared = self.reports.clear_connections(None).await?;
        if cleared > 0 {
            tracing::info!(replica = %self.id(), cleared, "cleared connection state of a previous run");
        }
        let lease = Lease::new(
            self.service.clone(),
            self.id().to_string(),
            self.grpc.replica_lease_every,
        );
        crate::startup::phase("connections_cleared");
        lease.start().await?;
        crate::startup::phase("lease_taken");
        let listener_task = tokio::spawn(listener::run(
            self.fanout.clone(),
            self.service.clone(),
            self.id().to_string(),
            self.grpc_metrics.clone(),
            tasks.clone(),
        ));
        let batcher_task = tokio::spawn(self.reports.clone().run(tasks.clone()));
        let rollout_task = tokio::spawn(crate::service::rollouts::driver::run(
            self.service.clone(),
            self.grpc.rollout_tick,
            self.rollout_metrics.clone(),
            tasks.clone(),
        ));
        let notify_task = tokio::spawn(
            self.notifier
                .clone()
                .run(self.service.clone(), tasks.clone()),
        );
        let calendar_task = tokio::spawn(
            self.calendars
                .clone()
                .run(self.service.clone(), tasks.clone()),
        );
        let approvals_task = tokio::spawn(crate::service::approvals::expiry::run_expiry(
            self.service.clone(),
            tasks.clone(),
        ));
        // Winding down starts when the servers stop, or earlier, when a drain has
        // ended every spoke stream: the report flush, the tasks' ends and clearing
        // the connection state then overlap the wait for the spokes' connections to
        // close (fleetgate-bench storm: the hub was down for their sum).
        let wind_down = async {
            tasks.cancelled().await;
            let _ = batcher_task.await;
            crate::drain::phase("reports_flushed");
            let _ = listener_task.await;
            let _ = rollout_task.await;
            let _ = notify_task.await;
            let _ = calendar_task.await;
            let _ = approvals_task.await;
            let _ = health_task.await;
            crate::drain::phase("tasks_stopped");
            // Streams ended by the drain skipped recording their disconnection.
            let drained_at = self.service.now();
            if let Err(e) = self.reports.clear_connections(Some(drained_at)).await {
                tracing::warn!(replica = %self.id(), error = %e, "clearing connection state after the drain failed");
            }
            crate::drain::phase("connections_cleared");
        };
        // Renewals run inside this future, not as a task of their own: when it
        // is dropped (the replica dies) they stop with it.
        let (result, (), (), ()) = tokio::join!(
            async {
                let result = serving.await;
                tasks.cancel();
                result
            },
            async {
                tokio::select! {
                    () = self.streams_drained.cancelled() => tasks.cancel(),
                    () = tasks.cancelled() => {}
                }
            },
            lease.clone().run(tasks.clone()),
            wind_down,
        );
        if let Err(e) = lease.end().await {
            tracing::warn!(replica = %self.id(), error = %e, "ending the replica lease failed");
        }
        crate::drain::phase("lease_ended");
        result
    }
}
