//! The service layer: every operation of the hub's APIs (REST and gRPC admin)
//! as one method taking the caller's [`Actor`] and typed input. A write is one
//! transaction: the change, its audit row, the fleet revision bump and the
//! change notification. Role checks happen here, so both APIs enforce the same.

pub mod access;
pub mod admission;
pub mod approvals;
pub mod audit;
pub mod calendars;
pub mod clusters;
pub mod fleet;
pub mod freezes;
pub mod gates;
pub mod local_gates;
pub mod overrides;
pub mod page;
pub mod reports;
pub mod rollouts;
pub mod types;
pub mod webhooks;

use std::future::Future;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::Semaphore;

use crate::clock::Clock;
use crate::db::audit::NewAudit;
use crate::db::health::DbHealth;
use crate::db::retry;
use crate::db::revision::{self, Affected};
use crate::{Error, Result};

pub use access::principal::{
    Actor, ClusterRef, Clusters, GateRef, Grant, GrantSource, Identity, Person, ReadScope,
    TokenIdentity, Workload,
};
pub use page::{Page, PageRequest};

/// The hub's operations over its database. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Service {
    pool: PgPool,
    clock: Arc<dyn Clock>,
    /// Writers queue here, not on database connections: writes serialise on
    /// the fleet-revision row anyway, and a burst of them must not hold the
    /// whole pool while reads (status, spoke auth) wait.
    writers: Arc<Semaphore>,
    /// Whether the database is reachable (kept by [`DbHealth::watch`]).
    health: DbHealth,
    /// Every cluster's name and labels, for writes ([`WriteTx::scoped_clusters`]).
    scoped: Arc<crate::db::clusters::ScopedCache>,
    /// Every access policy, parsed, for authentications ([`Service::resolve`]).
    policies: Arc<access::policy_cache::PolicyCache>,
    /// Trusted issuers and the login provider (an adapter's verifier and client).
    identities: Arc<crate::identity::Identities>,
    /// Calls admission webhooks (an adapter: outbound HTTP under the egress rules).
    admission: Arc<dyn admission::outside::AdmissionClient>,
    /// Verifiers of the issuers clusters are registered with (spokes' own JWTs).
    spoke_issuers: Arc<dyn crate::identity::provider::SpokeVerifier>,
    /// Approval and admission counters (registered by the replica).
    approval_metrics: crate::metrics::ApprovalMetrics,
}

/// What a [`Service`] talks to the outside world through: implementations of the traits
/// core declares, from `fleetgate-hub-adapters` (wired by the binary, or by its
/// `ServiceDefaults`).
pub struct Adapters {
    /// Calls admission webhooks.
    pub admission: Arc<dyn admission::outside::AdmissionClient>,
    /// The identity settings, token verifier and login provider.
    pub identities: Arc<crate::identity::Identities>,
    /// Verifies spokes' own JWTs.
    pub spoke_issuers: Arc<dyn crate::identity::provider::SpokeVerifier>,
}

/// How many writes of one replica may wait on the database at once.
const CONCURRENT_WRITES: usize = 4;

/// A write transaction, as a write's body sees it (the connection). `'a` is
/// the scope of what the body borrows: every `&'t mut WriteTx<'a>` implies
/// `'a: 't`, so a boxed body future may hold the caller's references.
pub(crate) struct WriteTx<'a> {
    tx: Transaction<'static, Postgres>,
    scoped: Arc<crate::db::clusters::ScopedCache>,
    scope: PhantomData<&'a ()>,
}

impl WriteTx<'_> {
    /// Every cluster's name and labels (what a write needs to find the
    /// clusters it affects), from the replica's copy while it is current.
    pub(crate) async fn scoped_clusters(
        &mut self,
    ) -> Result<Arc<Vec<crate::db::clusters::Scoped>>> {
        let cache = self.scoped.clone();
        crate::db::clusters::scoped_cached(&mut self.tx, &cache).await
    }
}

/// The future of a write's body.
pub(crate) type WriteBody<'t, T> = Pin<Box<dyn Future<Output = Result<Written<T>>> + Send + 't>>;

impl Deref for WriteTx<'_> {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.tx
    }
}

impl DerefMut for WriteTx<'_> {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.tx
    }
}

/// What a write's body did: its result for the caller and, when it changed
/// something, the audit entry and the clusters whose snapshot changed.
pub(crate) struct Written<T> {
    value: T,
    change: Option<(Option<Audit>, Affected)>,
}

impl<T> Written<T> {
    /// A change: committed with its audit row and revision bump.
    pub fn changed(value: T, audit: Audit, affected: Affected) -> Self {
        Self {
            value,
            change: Some((Some(audit), affected)),
        }
    }

    /// Not a change of anything people wrote, but the affected clusters' snapshots differ
    /// (a calendar feed's occurrences re-sent as the horizon moves): a revision bump and
    /// notification without an audit row.
    pub fn republished(value: T, affected: Affected) -> Self {
        Self {
            value,
            change: Some((None, affected)),
        }
    }

    /// Nothing to change (e.g. revoking a revoked token): rolled back.
    pub fn unchanged(value: T) -> Self {
        Self {
            value,
            change: None,
        }
    }
}

/// A role of an API token (defined with the API types: `whoami` answers it).
pub use fleetgate_api_types::Role;

/// An audit entry to write with a change.
pub(crate) struct Audit {
    pub action: &'static str,
    pub target_kind: &'static str,
    pub target_name: String,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<String>,
}

impl Service {
    /// A service on `pool` with `clock` (the system's, or an injected one in tests),
    /// talking to the outside world through `adapters`. The adapters crate's
    /// `ServiceDefaults` builds one with the default adapters (`Service::new`,
    /// `Service::with_clock`).
    pub fn with_adapters(pool: PgPool, clock: Arc<dyn Clock>, adapters: Adapters) -> Self {
        let Adapters {
            admission,
            identities,
            spoke_issuers,
        } = adapters;
        Self {
            pool,
            clock,
            writers: Arc::new(Semaphore::new(CONCURRENT_WRITES)),
            health: DbHealth::new(),
            scoped: Arc::default(),
            policies: Arc::default(),
            identities,
            admission,
            spoke_issuers,
            approval_metrics: Default::default(),
        }
    }

    /// This service with `identities` (the `--identity-config` settings).
    pub fn with_identities(mut self, identities: Arc<crate::identity::Identities>) -> Self {
        self.identities = identities;
        self
    }

    /// This service verifying spokes' own JWTs with `issuers` (`--spoke-audience`, `--egress-*`).
    pub fn with_spoke_issuers(
        mut self,
        issuers: Arc<dyn crate::identity::provider::SpokeVerifier>,
    ) -> Self {
        self.spoke_issuers = issuers;
        self
    }

    /// The verifiers of spokes' own JWTs.
    pub fn spoke_issuers(&self) -> &dyn crate::identity::provider::SpokeVerifier {
        &*self.spoke_issuers
    }

    /// This service calling admission webhooks through `client`.
    pub fn with_admission(mut self, client: Arc<dyn admission::outside::AdmissionClient>) -> Self {
        self.admission = client;
        self
    }

    /// Approval and admission metrics.
    pub fn approval_metrics(&self) -> &crate::metrics::ApprovalMetrics {
        &self.approval_metrics
    }

    /// The client of admission webhook calls.
    pub fn admission_client(&self) -> &dyn admission::outside::AdmissionClient {
        &*self.admission
    }

    /// The identity settings and caches.
    pub fn identities(&self) -> &crate::identity::Identities {
        &self.identities
    }

    /// The database's reachability, for `/readyz` and its watcher.
    pub fn db_health(&self) -> &DbHealth {
        &self.health
    }

    /// A pooled connection, or 503 at once while the database is known to
    /// be unreachable (also for requests already waiting when it goes down).
    pub async fn conn(&self) -> Result<PoolConnection<Postgres>> {
        self.reachable(self.pool.acquire()).await
    }

    /// A transaction, failing fast like [`Service::conn`].
    pub async fn begin(&self) -> Result<Transaction<'static, Postgres>> {
        self.reachable(self.pool.begin()).await
    }

    async fn reachable<T>(
        &self,
        acquire: impl Future<Output = std::result::Result<T, sqlx::Error>>,
    ) -> Result<T> {
        if !self.health.is_up() {
            return Err(Error::db_down());
        }
        tokio::select! {
            got = acquire => got.map_err(|e| {
                let e = Error::from(e);
                if matches!(e, Error::Unavailable(_)) {
                    self.health.suspect();
                }
                e
            }),
            () = self.health.went_down() => Err(Error::db_down()),
        }
    }

    /// A one-connection pool of its own, named `application_name` (the
    /// change listener's LISTEN session).
    pub(crate) fn dedicated_connection(&self, application_name: &str) -> PgPool {
        crate::db::dedicated_connection(&self.pool, application_name)
    }

    /// Whether the database answers (readiness).
    pub async fn ping(&self) -> Result<()> {
        crate::db::ping(&self.pool).await
    }

    /// Keeps [`Service::db_health`] current until `stop` (see
    /// [`DbHealth::watch`]).
    pub async fn watch_db(&self, stop: tokio_util::sync::CancellationToken) {
        self.health.clone().watch(self.pool.clone(), stop).await;
    }

    /// The service's notion of now.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The current fleet revision.
    pub async fn fleet_revision(&self) -> Result<i64> {
        let mut conn = self.conn().await?;
        revision::current(&mut conn).await
    }

    /// Runs one write: `body` in a transaction that first locks the
    /// fleet-revision row (every write needs it at the end anyway, and taking
    /// it before any other row lock (gate, cluster) means writers never wait
    /// on each other in a cycle), then the audit row, revision bump +
    /// notification, commit. A transaction PostgreSQL aborts for a deadlock
    /// or serialization failure runs again from the start (see
    /// [`crate::db::retry`]), so `body` may run more than once and must only
    /// change the database: `|tx| Box::pin(async move { … })`, borrowing the
    /// caller's values (`let x = &x;` before it). Returns the body's value
    /// and the fleet revision after the write.
    pub(crate) async fn write<'a, T>(
        &self,
        actor: &Actor,
        at: DateTime<Utc>,
        mut body: impl for<'t> FnMut(&'t mut WriteTx<'a>) -> WriteBody<'t, T>,
    ) -> Result<(T, i64)> {
        let _slot = self
            .writers
            .acquire()
            .await
            .map_err(|_| Error::Internal("write queue closed".into()))?;
        let mut attempts = retry::Attempts::new("write");
        loop {
            match self.write_once(actor, at, &mut body).await {
                Err(e) if attempts.again(&e).await => {}
                result => return result,
            }
        }
    }

    async fn write_once<'a, T>(
        &self,
        actor: &Actor,
        at: DateTime<Utc>,
        body: &mut impl for<'t> FnMut(&'t mut WriteTx<'a>) -> WriteBody<'t, T>,
    ) -> Result<(T, i64)> {
        let mut tx = WriteTx {
            tx: self.begin().await?,
            scoped: self.scoped.clone(),
            scope: PhantomData,
        };
        let current = revision::lock(&mut tx).await?;
        let written = body(&mut tx).await?;
        let Some((audit, affected)) = written.change else {
            return Ok((written.value, current));
        };
        if let Some(audit) = audit {
            crate::db::audit::insert(
                &mut tx,
                &NewAudit {
                    at,
                    actor: &actor.name,
                    action: audit.action,
                    target_kind: audit.target_kind,
                    target_name: &audit.target_name,
                    before: audit.before,
                    after: audit.after,
                    reason: audit.reason.as_deref(),
                    who: actor.audit_who(),
                },
            )
            .await?;
        }
        let rev = revision::publish(&mut tx, &affected).await?;
        tx.tx.commit().await?;
        Ok((written.value, rev))
    }
}

/// Serialises a value for an audit row.
pub(crate) fn to_json<T: Serialize>(v: &T) -> Option<serde_json::Value> {
    serde_json::to_value(v).ok()
}
