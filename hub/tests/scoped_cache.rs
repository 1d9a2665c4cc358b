//! A replica's copy of every cluster's name and labels (what a write needs to
//! find the clusters it affects) is read again exactly when the clusters
//! changed: a trigger gives `fleet_revision.clusters_version` a fresh random
//! value on every insert, delete and name or label update, and a copy read in
//! a transaction that rolled back is never taken for the committed state.
//! A replica's parsed access policies (what every authentication resolves
//! against) follow `fleet_revision.access_policies_version` the same way.

mod common;

use common::{Hub, TableReads, t0};
use fleetgate_api_types::parse_access_policy;
use fleetgate_hub::ServiceDefaults;
use fleetgate_hub::db::clusters::{self, ScopedCache};
use fleetgate_hub::service::access::resolve::PolicyCache;
use fleetgate_hub::service::{Actor, Role, Service};
use serde_json::json;

/// Names and labels through `cache`, in a transaction that holds the
/// fleet-revision lock as a write does; also whether `clusters` was read.
async fn through(hub: &Hub, cache: &ScopedCache) -> (Vec<(String, String)>, bool) {
    let mut tx = hub.pool.begin().await.unwrap();
    sqlx::query("select revision from fleet_revision for update")
        .execute(&mut *tx)
        .await
        .unwrap();
    let before = TableReads::of(&mut tx, "clusters").await;
    let all = clusters::scoped_cached(&mut tx, cache).await.unwrap();
    let done = TableReads::of(&mut tx, "clusters").await.since(before);
    let read = done.seq_scans + done.idx_scans > 0;
    tx.commit().await.unwrap();
    let seen = all
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                c.labels.get("env").cloned().unwrap_or_default(),
            )
        })
        .collect();
    (seen, read)
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

#[tokio::test]
async fn the_copy_is_read_again_exactly_when_clusters_change() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "dev"})).await;
    let cache = ScopedCache::default();

    let (seen, read) = through(&hub, &cache).await;
    assert_eq!(seen, pairs(&[("a", "prod"), ("b", "dev")]));
    assert!(read, "the first use reads the clusters");
    let (seen, read) = through(&hub, &cache).await;
    assert_eq!(seen, pairs(&[("a", "prod"), ("b", "dev")]));
    assert!(!read, "nothing changed, yet the clusters were read again");

    // A revision stamp is not a change of names or labels.
    sqlx::query("update clusters set desired_revision = desired_revision + 1")
        .execute(&hub.pool)
        .await
        .unwrap();
    assert!(!through(&hub, &cache).await.1);

    // A label change, a new cluster, a deleted one: each is seen at once.
    sqlx::query("update clusters set labels = '{\"env\": \"prod\"}' where name = 'b'")
        .execute(&hub.pool)
        .await
        .unwrap();
    let (seen, read) = through(&hub, &cache).await;
    assert_eq!(seen, pairs(&[("a", "prod"), ("b", "prod")]));
    assert!(read);
    hub.register("c", json!({"env": "staging"})).await;
    assert_eq!(
        through(&hub, &cache).await.0,
        pairs(&[("a", "prod"), ("b", "prod"), ("c", "staging")])
    );
    sqlx::query("delete from clusters where name = 'a'")
        .execute(&hub.pool)
        .await
        .unwrap();
    assert_eq!(
        through(&hub, &cache).await.0,
        pairs(&[("b", "prod"), ("c", "staging")])
    );
}

#[tokio::test]
async fn a_copy_read_in_a_rolled_back_transaction_is_never_used() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    let cache = ScopedCache::default();

    // A write that registers a cluster, reads through the cache, then fails.
    let mut tx = hub.pool.begin().await.unwrap();
    sqlx::query("select revision from fleet_revision for update")
        .execute(&mut *tx)
        .await
        .unwrap();
    let labels = std::collections::BTreeMap::new();
    clusters::insert(&mut tx, "ghost", &labels, b"ghost-token-hash", None, t0())
        .await
        .unwrap();
    let inside = clusters::scoped_cached(&mut tx, &cache).await.unwrap();
    assert_eq!(inside.len(), 2, "the transaction sees its own cluster");
    tx.rollback().await.unwrap();

    // The next committed change must not look like the rolled-back one (with
    // a counter, both would be "one more than before").
    hub.register("b", json!({"env": "dev"})).await;
    let (seen, read) = through(&hub, &cache).await;
    assert_eq!(seen, pairs(&[("a", "prod"), ("b", "dev")]));
    assert!(read, "the rolled-back copy was used");
}

/// (name, env label, desired revision) of `names` as the fan-out's snapshot read sees them
/// through `cache`, and as the read without a copy does.
async fn for_snapshots(
    hub: &Hub,
    cache: &ScopedCache,
    names: &[&str],
) -> (Vec<(String, String, i64)>, Vec<(String, String, i64)>) {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let seen = |rows: Vec<(fleetgate_api_types::Cluster, Vec<u8>)>| {
        rows.into_iter()
            .map(|(c, hash)| {
                assert!(!hash.is_empty(), "{}: no token hash", c.name);
                let env = c.labels.get("env").cloned().unwrap_or_default();
                (c.name, env, c.desired_revision)
            })
            .collect::<Vec<_>>()
    };
    let mut tx = hub.pool.begin().await.unwrap();
    let cached = clusters::snapshots::for_snapshots_cached(&mut tx, &names, cache)
        .await
        .unwrap();
    let plain = clusters::snapshots::for_snapshots(&mut tx, Some(&names))
        .await
        .unwrap();
    tx.commit().await.unwrap();
    (seen(cached), seen(plain))
}

/// The fan-out's batched snapshot read takes each cluster's labels from the replica's copy
/// while it is current (the same statement reads the version), and from the table as soon
/// as a label changed, before any write read the copy again.
#[tokio::test]
async fn snapshot_reads_take_labels_from_a_current_copy_only() {
    let hub = Hub::new().await;
    hub.register("a", json!({"env": "prod"})).await;
    hub.register("b", json!({"env": "dev"})).await;
    let cache = ScopedCache::default();
    let row = |n: &str, env: &str, rev: i64| (n.to_string(), env.to_string(), rev);

    // No copy yet: read as without one.
    let (cached, plain) = for_snapshots(&hub, &cache, &["a", "b", "gone"]).await;
    assert_eq!(cached, plain);
    assert_eq!(cached.len(), 2);
    let rev = cached[0].2;

    through(&hub, &cache).await;
    // A revision stamp leaves the copy current; the revision is read, the labels copied.
    sqlx::query("update clusters set desired_revision = desired_revision + 5 where name = 'b'")
        .execute(&hub.pool)
        .await
        .unwrap();
    let (cached, plain) = for_snapshots(&hub, &cache, &["b", "a"]).await;
    assert_eq!(cached, plain);
    assert_eq!(cached[0], row("a", "prod", rev));
    assert_eq!(cached[1].0, "b");
    assert_eq!(cached[1].1, "dev");
    assert!(cached[1].2 >= rev + 5, "{cached:?}");

    // A label changed by hand: the copy is stale and the labels are read from the table.
    sqlx::query("update clusters set labels = '{\"env\": \"staging\"}' where name = 'a'")
        .execute(&hub.pool)
        .await
        .unwrap();
    let (cached, plain) = for_snapshots(&hub, &cache, &["a"]).await;
    assert_eq!(cached, plain);
    assert_eq!(cached[0].1, "staging");
}

/// Policy names through `cache` in a transaction; also whether
/// `access_policies` was read.
async fn policies_through(hub: &Hub, cache: &PolicyCache) -> (Vec<String>, bool) {
    let mut tx = hub.pool.begin().await.unwrap();
    let before = TableReads::of(&mut tx, "access_policies").await;
    let all = cache.current(&mut tx).await.unwrap();
    let done = TableReads::of(&mut tx, "access_policies")
        .await
        .since(before);
    tx.commit().await.unwrap();
    let names = all.iter().map(|p| p.name().to_string()).collect();
    (names, done.seq_scans + done.idx_scans > 0)
}

fn reader_admin_policy() -> fleetgate_api_types::AccessPolicy {
    parse_access_policy(
        "apiVersion: fleetgate.io/v1\nkind: AccessPolicy\nmetadata: {name: reader-admin}\n\
         spec: {subjects: {tokens: [reader]}, role: admin}",
    )
    .unwrap()
}

/// Every authentication resolves against the replica's copy of the policies,
/// read again only when one changed, on this replica, another one, or by
/// hand in SQL; a copy read in a rolled-back transaction is never used.
#[tokio::test]
async fn access_policies_are_read_again_exactly_when_one_changes() {
    let hub = Hub::new().await;
    let root = Actor::new("bootstrap-admin", Role::Admin);
    // A second replica on the same database, with its own copy.
    let other = Service::with_clock(hub.pool.clone(), std::sync::Arc::new(hub.clock.clone()));
    let reader_is_admin = |s: Service| {
        let token = hub.viewer.clone();
        async move {
            let a = s.authenticate_api(&token).await.unwrap();
            a.is_unscoped(Role::Admin)
        }
    };
    assert!(!reader_is_admin(other.clone()).await);

    let cache = PolicyCache::default();
    let (names, read) = policies_through(&hub, &cache).await;
    assert!(names.is_empty());
    assert!(read, "the first use reads the policies");
    assert!(
        !policies_through(&hub, &cache).await.1,
        "read again unchanged"
    );

    // Applied on this replica: the other one's next authentication sees it.
    hub.service
        .apply_access_policy(&root, "reader-admin", reader_admin_policy(), None, None)
        .await
        .unwrap();
    assert!(reader_is_admin(other.clone()).await);
    let (names, read) = policies_through(&hub, &cache).await;
    assert_eq!(names, ["reader-admin"]);
    assert!(read);
    assert!(!policies_through(&hub, &cache).await.1);

    // Deleted by hand: seen at once.
    sqlx::query("delete from access_policies")
        .execute(&hub.pool)
        .await
        .unwrap();
    assert!(!reader_is_admin(other.clone()).await);
    assert!(!reader_is_admin(hub.service.clone()).await);

    // A policy inserted in a transaction that rolls back, read through the
    // cache inside it: the committed state is read again afterwards.
    let (names, _) = policies_through(&hub, &cache).await;
    assert!(names.is_empty());
    let mut tx = hub.pool.begin().await.unwrap();
    let manifest = serde_json::to_value(reader_admin_policy()).unwrap();
    fleetgate_hub::db::access_policies::insert(&mut tx, "reader-admin", &manifest, t0())
        .await
        .unwrap();
    assert_eq!(cache.current(&mut tx).await.unwrap().len(), 1);
    tx.rollback().await.unwrap();
    let (names, read) = policies_through(&hub, &cache).await;
    assert!(names.is_empty(), "the rolled-back copy was used: {names:?}");
    assert!(read);
}
