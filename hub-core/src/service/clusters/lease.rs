//! A replica's lease (`replica_leases`): taken when the replica starts,
//! renewed every `--replica-lease-every` while it runs, ended after its
//! drain. The streams a replica holds count as connected while its lease
//! holds (`crate::liveness`), so spoke liveness costs one row write per
//! replica per renewal instead of a stamp per cluster.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::Result;
use crate::db::leases;
use crate::liveness;
use crate::service::Service;

/// One replica's lease.
#[derive(Debug, Clone)]
pub struct Lease {
    service: Service,
    replica: String,
    every: Duration,
}

impl Lease {
    /// The lease of `replica`, renewed every `every`.
    pub fn new(service: Service, replica: String, every: Duration) -> Self {
        Self {
            service,
            replica,
            every,
        }
    }

    fn ttl(&self) -> chrono::Duration {
        liveness::lease_ttl(self.every)
    }

    /// Takes the lease for a new run of the replica (before it serves).
    pub async fn start(&self) -> Result<()> {
        let mut conn = self.service.conn().await?;
        leases::start(&mut conn, &self.replica, self.service.now(), self.ttl()).await
    }

    /// Renews the lease every interval until `shutdown`. A failed renewal is
    /// logged and retried at the next tick: the lease tolerates
    /// [`liveness::LEASE_RENEWALS`] − 1 missed renewals.
    pub async fn run(self, shutdown: CancellationToken) {
        let mut tick = tokio::time::interval(self.every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await; // the first tick is immediate: `start` just renewed
        loop {
            tokio::select! {
                () = shutdown.cancelled() => return,
                _ = tick.tick() => {}
            }
            let res = async {
                let mut conn = self.service.conn().await?;
                leases::renew(&mut conn, &self.replica, self.service.now(), self.ttl()).await
            }
            .await;
            if let Err(e) = res {
                tracing::warn!(replica = %self.replica, error = %e, "renewing the replica lease failed");
            }
        }
    }

    /// Ends the lease (after the drain: the replica holds no stream).
    pub async fn end(&self) -> Result<()> {
        let mut conn = self.service.conn().await?;
        leases::end(&mut conn, &self.replica, self.service.now()).await
    }
}
