//! The fleet revision and the change notification: every write bumps the
//! revision, stamps the affected clusters' `desired_revision` (or, when it
//! affects every cluster, `fleet_revision.all_revision` once) and sends
//! `pg_notify('fleetgate_changes', {"revision":N,"clusters":[..]|null})`, all
//! inside the writer's transaction, so a notification is sent iff it commits.
//! A cluster's snapshot revision is the greater of the two
//! ([`EFFECTIVE_REVISION`]).

use serde::{Deserialize, Serialize};
use sqlx::PgConnection;

use crate::Result;

/// The LISTEN/NOTIFY channel for fleet changes.
pub const CHANGES_CHANNEL: &str = "fleetgate_changes";

/// PostgreSQL rejects NOTIFY payloads of 8000 bytes or more; beyond this size
/// we send `"clusters": null` ("recompute all") instead of the list.
const MAX_PAYLOAD: usize = 7000;

/// A cluster's snapshot revision in SQL, over `clusters c` and
/// `fleet_revision f`: the newest write that affected it, alone or with every
/// cluster (migration `0014_fleet_wide_revision.sql`).
pub const EFFECTIVE_REVISION: &str = "greatest(c.desired_revision, f.all_revision)";

/// Which clusters a write affects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Affected {
    /// Every cluster (and clusters that may appear).
    All,
    /// Every cluster there is, by name: recorded once as the fleet-wide
    /// revision instead of a stamp per cluster row, notified with the names.
    Every(Vec<String>),
    /// Exactly these clusters (may be empty: nothing to recompute).
    Clusters(Vec<String>),
}

impl Affected {
    /// `names`, picked among the `of` clusters that exist (read in the
    /// write's transaction, so no cluster appears or goes meanwhile: every
    /// write holds the revision lock): [`Affected::Every`] when that is all
    /// of them. A fleet-wide flip of 10,000 clusters then writes one row, not
    /// 10,000 (fleetgate-bench, REST call of a flip).
    pub fn among(names: Vec<String>, of: usize) -> Self {
        if !names.is_empty() && names.len() == of {
            Self::Every(names)
        } else {
            Self::Clusters(names)
        }
    }
}

/// The JSON payload of a change notification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeNotice {
    /// The fleet revision the change committed at.
    pub revision: i64,
    /// The clusters whose snapshot changed; `None` = recompute all.
    pub clusters: Option<Vec<String>>,
}

/// The current fleet revision.
pub async fn current(conn: &mut PgConnection) -> Result<i64> {
    let (rev,): (i64,) = sqlx::query_as("select revision from fleet_revision")
        .fetch_one(conn)
        .await?;
    Ok(rev)
}

/// Locks the revision row until the transaction ends (writers take it first)
/// and returns the current revision.
pub async fn lock(conn: &mut PgConnection) -> Result<i64> {
    let (rev,): (i64,) = sqlx::query_as("select revision from fleet_revision for update")
        .fetch_one(conn)
        .await?;
    Ok(rev)
}

/// Bumps the revision, stamps the affected clusters (or the fleet-wide
/// revision) and notifies. Must run in the write's transaction. Returns the
/// new revision.
pub async fn publish(conn: &mut PgConnection, affected: &Affected) -> Result<i64> {
    let every = matches!(affected, Affected::All | Affected::Every(_));
    let (rev,): (i64,) = sqlx::query_as(
        "update fleet_revision set revision = revision + 1, \
         all_revision = case when $1 then revision + 1 else all_revision end \
         returning revision",
    )
    .bind(every)
    .fetch_one(&mut *conn)
    .await?;
    // Clusters are locked in name order, the one order every path that locks
    // several `clusters` rows uses. `for no key update` (what the update takes
    // anyway) leaves the key-share locks of foreign-key checks alone, so
    // status reports (`object_status` rows) never wait for a write's stamps.
    let clusters = match affected {
        Affected::All => None,
        Affected::Every(names) => Some(names.clone()),
        Affected::Clusters(names) => {
            if !names.is_empty() {
                sqlx::query(
                    "update clusters set desired_revision = $1 where name in \
                     (select name from clusters where name = any($2) order by name \
                      for no key update)",
                )
                .bind(rev)
                .bind(names)
                .execute(&mut *conn)
                .await?;
            }
            Some(names.clone())
        }
    };
    let mut notice = ChangeNotice {
        revision: rev,
        clusters,
    };
    let mut payload = serde_json::to_string(&notice).unwrap_or_default();
    if payload.len() > MAX_PAYLOAD {
        notice.clusters = None;
        payload = serde_json::to_string(&notice).unwrap_or_default();
    }
    sqlx::query("select pg_notify($1, $2)")
        .bind(CHANGES_CHANNEL)
        .bind(payload)
        .execute(&mut *conn)
        .await?;
    Ok(rev)
}

/// A LISTEN session on [`CHANGES_CHANNEL`] over `pool`.
pub async fn listen(pool: &sqlx::PgPool) -> Result<sqlx::postgres::PgListener, sqlx::Error> {
    let mut listener = sqlx::postgres::PgListener::connect_with(pool).await?;
    // A lost connection is reported at once (`try_recv` → `Ok(None)`), not after
    // sqlx reconnected inside `try_recv`: the caller marks the replica not ready
    // (`/readyz`) until it has listened anew and resynced.
    listener.eager_reconnect(false);
    listener.listen(CHANGES_CHANNEL).await?;
    Ok(listener)
}
