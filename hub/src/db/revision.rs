//! The fleet revision and the change notification: every write bumps the
//! revision, stamps the affected clusters' `desired_revision` and sends
//! `pg_notify('fleetgate_changes', {"revision":N,"clusters":[..]|null})`, all
//! inside the writer's transaction, so a notification is sent iff it commits.

use serde::{Deserialize, Serialize};
use sqlx::PgConnection;

use crate::Result;

/// The LISTEN/NOTIFY channel for fleet changes.
pub const CHANGES_CHANNEL: &str = "fleetgate_changes";

/// PostgreSQL rejects NOTIFY payloads of 8000 bytes or more; beyond this size
/// we send `"clusters": null` ("recompute all") instead of the list.
const MAX_PAYLOAD: usize = 7000;

/// Which clusters a write affects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Affected {
    /// Every cluster (and clusters that may appear).
    All,
    /// Exactly these clusters (may be empty: nothing to recompute).
    Clusters(Vec<String>),
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

/// Bumps the revision, stamps the affected clusters and notifies. Must run in
/// the write's transaction. Returns the new revision.
pub async fn publish(conn: &mut PgConnection, affected: &Affected) -> Result<i64> {
    let (rev,): (i64,) =
        sqlx::query_as("update fleet_revision set revision = revision + 1 returning revision")
            .fetch_one(&mut *conn)
            .await?;
    // Clusters are locked in name order, the one order every path that locks
    // several `clusters` rows uses. `for no key update` (what the update takes
    // anyway) leaves the key-share locks of foreign-key checks alone, so
    // status reports (`object_status` rows) never wait for a write's stamps.
    let clusters = match affected {
        Affected::All => {
            sqlx::query(
                "update clusters set desired_revision = $1 where name in \
                 (select name from clusters order by name for no key update)",
            )
            .bind(rev)
            .execute(&mut *conn)
            .await?;
            None
        }
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
