//! The service layer: every operation of the hub's APIs (REST and gRPC admin)
//! as one method taking the caller's [`Actor`] and typed input. A write is one
//! transaction: the change, its audit row, the fleet revision bump and the
//! change notification. Role checks happen here, so both APIs enforce the same.

pub mod access;
pub mod audit;
pub mod clusters;
pub mod fleet;
pub mod gates;
pub mod liveness;
pub mod overrides;
pub mod page;
pub mod reports;
pub mod tokens;
pub mod types;

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::{PgConnection, PgPool, Postgres, Transaction};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use utoipa::ToSchema;

use crate::clock::{Clock, SystemClock};
use crate::db::audit::NewAudit;
use crate::db::revision::{self, Affected};
use crate::{Error, Result};

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
}

/// How many writes of one replica may wait on the database at once.
const CONCURRENT_WRITES: usize = 4;

/// A write transaction and the writer slot it holds until it ends.
pub(crate) struct WriteTx {
    tx: Transaction<'static, Postgres>,
    _slot: OwnedSemaphorePermit,
}

impl Deref for WriteTx {
    type Target = PgConnection;
    fn deref(&self) -> &PgConnection {
        &self.tx
    }
}

impl DerefMut for WriteTx {
    fn deref_mut(&mut self) -> &mut PgConnection {
        &mut self.tx
    }
}

/// A role of an API token; each includes the ones before it.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Read everything except API tokens.
    Viewer,
    /// Viewer + open/close/cancel overrides.
    Operator,
    /// Everything: gates, clusters, API tokens.
    Admin,
}

impl Role {
    /// The stored / wire name.
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "viewer" => Ok(Role::Viewer),
            "operator" => Ok(Role::Operator),
            "admin" => Ok(Role::Admin),
            other => Err(Error::invalid(
                "role",
                format!("unknown role '{other}' (viewer, operator, admin)"),
            )),
        }
    }
}

/// Who is calling: an API token's name and role.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Actor {
    pub name: String,
    pub role: Role,
}

impl Actor {
    /// An actor (tests, internal jobs).
    pub fn new(name: impl Into<String>, role: Role) -> Self {
        Self {
            name: name.into(),
            role,
        }
    }

    /// 403 unless the actor's role is at least `role`.
    pub fn require(&self, role: Role) -> Result<()> {
        if self.role >= role {
            Ok(())
        } else {
            Err(Error::Forbidden(format!(
                "token '{}' has role {}; this needs {role}",
                self.name, self.role
            )))
        }
    }
}

/// An audit entry to write with a change.
pub(crate) struct Audit<'a> {
    pub action: &'a str,
    pub target_kind: &'a str,
    pub target_name: &'a str,
    pub before: Option<serde_json::Value>,
    pub after: Option<serde_json::Value>,
    pub reason: Option<&'a str>,
}

impl Service {
    /// A service on `pool` using the system clock.
    pub fn new(pool: PgPool) -> Self {
        Self::with_clock(pool, Arc::new(SystemClock))
    }

    /// A service with an injected clock (tests).
    pub fn with_clock(pool: PgPool, clock: Arc<dyn Clock>) -> Self {
        Self {
            pool,
            clock,
            writers: Arc::new(Semaphore::new(CONCURRENT_WRITES)),
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

    /// The service's notion of now.
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The current fleet revision.
    pub async fn fleet_revision(&self) -> Result<i64> {
        let mut conn = self.pool.acquire().await?;
        revision::current(&mut conn).await
    }

    /// Starts a write transaction. It locks the fleet-revision row first:
    /// every write needs it at the end anyway (revision bump), and taking it
    /// before any other row lock (gate, cluster) means writers can never
    /// wait on each other in a cycle.
    pub(crate) async fn begin_write(&self) -> Result<WriteTx> {
        let slot = self
            .writers
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Internal("write queue closed".into()))?;
        let mut tx = self.pool.begin().await?;
        revision::lock(&mut tx).await?;
        Ok(WriteTx { tx, _slot: slot })
    }

    /// Finishes a write: audit row, revision bump + notification, commit.
    /// Returns the new fleet revision.
    pub(crate) async fn finish_write(
        &self,
        mut tx: WriteTx,
        actor: &Actor,
        at: DateTime<Utc>,
        audit: Audit<'_>,
        affected: &Affected,
    ) -> Result<i64> {
        crate::db::audit::insert(
            &mut tx,
            &NewAudit {
                at,
                actor: &actor.name,
                action: audit.action,
                target_kind: audit.target_kind,
                target_name: audit.target_name,
                before: audit.before,
                after: audit.after,
                reason: audit.reason,
            },
        )
        .await?;
        let rev = revision::publish(&mut tx, affected).await?;
        tx.tx.commit().await?;
        Ok(rev)
    }
}

/// Serialises a value for an audit row.
pub(crate) fn to_json<T: Serialize>(v: &T) -> Option<serde_json::Value> {
    serde_json::to_value(v).ok()
}
