//! The clusters as a snapshot needs them: name, labels, the effective
//! `desired_revision` and the spoke token hash. The connection state and the lease
//! are not joined (left at "not connected"): a fleet-wide change re-reads every
//! connected cluster in batches of 500, and those two joins were half of each batch's
//! work in PostgreSQL.
//!
//! Labels come from the replica's copy ([`ScopedCache`]) while
//! `fleet_revision.clusters_version`, read in the same statement, still holds the
//! copy's version: decoding each cluster's labels from JSON was most of what a batch
//! cost the hub (issue 50). Otherwise (no copy, or one that is not current) they are
//! read with the row.

use std::collections::BTreeMap;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use sqlx::types::Json;

use super::{Cluster, Scoped, ScopedCache};
use crate::Result;

/// A cluster as the statement returns it: its labels only where the copy is not current.
type Row = (
    String,
    DateTime<Utc>,
    i64,
    Vec<u8>,
    Option<Json<BTreeMap<String, String>>>,
);

/// A copy of the fleet's labels and the `clusters_version` it was read at.
type Copy = (uuid::Uuid, Arc<Vec<Scoped>>);

/// Those of `names` that exist (`None`: every cluster, the fan-out's warm start), with
/// their token hashes, ordered by name; labels read from the table.
pub async fn for_snapshots(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    read(conn, names, None).await
}

/// [`for_snapshots`] of `names`, with labels from `cache` while it is current.
pub async fn for_snapshots_cached(
    conn: &mut PgConnection,
    names: &[String],
    cache: &ScopedCache,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    let copy = cache.lock().clone();
    read(conn, Some(names), copy.as_ref()).await
}

async fn read(
    conn: &mut PgConnection,
    names: Option<&[String]>,
    copy: Option<&Copy>,
) -> Result<Vec<(Cluster, Vec<u8>)>> {
    // `= null` is never true: without a copy every row carries its labels.
    const SELECT: &str = "select c.name, c.created_at, \
         greatest(c.desired_revision, f.all_revision), c.token_hash, \
         case when f.clusters_version = $1 then null else c.labels end \
         from clusters c cross join fleet_revision f";
    let version = copy.map(|(v, _)| *v);
    let rows: Vec<Row> = match names {
        Some(names) => {
            sqlx::query_as(sql!("{SELECT} where c.name = any($2) order by c.name"))
                .bind(version)
                .bind(names)
                .fetch_all(&mut *conn)
                .await?
        }
        None => {
            sqlx::query_as(sql!("{SELECT} order by c.name"))
                .bind(version)
                .fetch_all(&mut *conn)
                .await?
        }
    };
    let mut out = Vec::with_capacity(rows.len());
    for (name, created_at, desired_revision, token_hash, labels) in rows {
        let labels = match labels {
            Some(labels) => labels.0,
            // Left out only where the copy is current, so it is there.
            None => match copy.and_then(|(_, all)| cached_labels(all, &name)) {
                Some(labels) => labels.clone(),
                // Not in a copy of the version read: cannot happen; read as without one.
                None => return Box::pin(read(conn, names, None)).await,
            },
        };
        out.push((
            cluster(name, labels, created_at, desired_revision),
            token_hash,
        ));
    }
    Ok(out)
}

/// A cluster as a snapshot reads it: what the snapshot needs, the rest "not connected".
fn cluster(
    name: String,
    labels: BTreeMap<String, String>,
    created_at: DateTime<Utc>,
    desired_revision: i64,
) -> Cluster {
    Cluster {
        name,
        labels,
        created_at,
        last_seen_at: None,
        spoke_version: None,
        spoke_skew: None,
        connected: false,
        connected_replica: None,
        clock_offset_ms: None,
        desired_revision,
        identity: None,
        snapshot_persistence: None,
        snapshot_over_budget: None,
    }
}

/// `name`'s labels in `all` (ordered by name as PostgreSQL sorts: found by binary search
/// where that order is Rust's, by a scan where the database's collation differs).
fn cached_labels<'a>(all: &'a [Scoped], name: &str) -> Option<&'a BTreeMap<String, String>> {
    match all.binary_search_by(|s| s.name.as_str().cmp(name)) {
        Ok(i) => Some(&all[i].labels),
        Err(_) => all.iter().find(|s| s.name == name).map(|s| &s.labels),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scoped(name: &str, env: &str) -> Scoped {
        Scoped {
            name: name.into(),
            labels: BTreeMap::from([("env".to_string(), env.to_string())]),
        }
    }

    #[test]
    fn cached_labels_are_found_in_any_collation_s_order() {
        let env = |all: &[Scoped], name: &str| cached_labels(all, name).map(|l| l["env"].clone());
        // Rust's order (the C collation): binary search.
        let c_order = [scoped("a-1", "x"), scoped("a1", "y"), scoped("b", "z")];
        assert_eq!(env(&c_order, "a1").as_deref(), Some("y"));
        assert_eq!(env(&c_order, "b").as_deref(), Some("z"));
        // A linguistic collation sorts "a1" before "a-1" (punctuation ignored first).
        let linguistic = [scoped("a1", "y"), scoped("a-1", "x"), scoped("b", "z")];
        assert_eq!(env(&linguistic, "a-1").as_deref(), Some("x"));
        assert_eq!(env(&linguistic, "a1").as_deref(), Some("y"));
        assert_eq!(env(&linguistic, "c"), None);
    }
}
