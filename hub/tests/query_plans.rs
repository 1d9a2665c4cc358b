//! Reads that name clusters stay key lookups under a generic plan.
//!
//! PostgreSQL may switch a prepared statement to a cached generic plan after
//! five executions, planned with the table statistics of that moment. A query
//! written `$1 is null or name = any($1)` has only one generic plan: scan every
//! row and compare it with every name of the array. Chosen while a fleet was
//! small, that plan stayed when it grew (fan-out reads of 500 clusters took
//! ~200 ms at 10,000 clusters instead of ~40 ms: fleetgate-bench
//! `--spokes 1000,10000`). Here every statement is forced onto its generic
//! plan and the table's scan counters of the transaction must show index
//! reads only.

mod common;

use common::{Hub, TableReads, t0};
use fleetgate_hub::db;

const CLUSTERS: usize = 3000;

/// `CLUSTERS` clusters `p-1`.. with their connection rows, analyzed.
async fn big_fleet(hub: &Hub) {
    for sql in [
        "insert into clusters (name, labels, token_hash, created_at) \
         select 'p-' || i, '{}', sha256(i::text::bytea), now() from generate_series(1, $1) i",
        "insert into cluster_connections (cluster) \
         select name from clusters on conflict do nothing",
    ] {
        sqlx::query(sql)
            .bind(CLUSTERS as i32)
            .execute(&hub.pool)
            .await
            .unwrap();
    }
    sqlx::query("analyze clusters, cluster_connections")
        .execute(&hub.pool)
        .await
        .unwrap();
}

async fn generic_plans(hub: &Hub) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = hub.pool.begin().await.unwrap();
    sqlx::query("set local plan_cache_mode = force_generic_plan")
        .execute(&mut *tx)
        .await
        .unwrap();
    tx
}

#[tokio::test]
async fn a_batch_of_named_clusters_is_read_by_key() {
    let hub = Hub::new().await;
    big_fleet(&hub).await;
    let names: Vec<String> = (1..=5).map(|i| format!("p-{i}")).collect();
    let mut tx = generic_plans(&hub).await;
    let before = TableReads::of(&mut tx, "clusters").await;
    for _ in 0..3 {
        let found = db::clusters::with_token_hash(&mut tx, Some(&names), t0())
            .await
            .unwrap();
        let mut got: Vec<String> = found.into_iter().map(|(c, _)| c.name).collect();
        got.sort();
        assert_eq!(got, names);
    }
    let done = TableReads::of(&mut tx, "clusters").await.since(before);
    let (seq, idx) = (done.seq_scans, done.idx_scans);
    assert_eq!(seq, 0, "clusters scanned sequentially ({idx} index scans)");
    assert!(idx > 0, "no index scan of clusters");
    // The fleet-wide shape still reads everything.
    let all = db::clusters::with_token_hash(&mut tx, None, t0())
        .await
        .unwrap();
    assert_eq!(all.len(), CLUSTERS);
}

#[tokio::test]
async fn one_clusters_local_gates_are_read_by_key() {
    let hub = Hub::new().await;
    big_fleet(&hub).await;
    let gates = serde_json::json!([{
        "name": "lg", "enforced": true, "state": "closed", "reason": "Default",
        "message": "closed by default", "nextTransition": null, "governed": 1, "held": 0,
        "ready": "True", "readyReason": "Enforced", "readyMessage": ""
    }]);
    sqlx::query("update cluster_connections set local_gates = $1 where cluster in ('p-7', 'p-8')")
        .bind(gates)
        .execute(&hub.pool)
        .await
        .unwrap();
    let mut tx = generic_plans(&hub).await;
    let before = TableReads::of(&mut tx, "cluster_connections").await;
    for _ in 0..3 {
        let found = db::reports::local_gates(&mut tx, Some("p-7"))
            .await
            .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].0, "p-7");
    }
    let done = TableReads::of(&mut tx, "cluster_connections")
        .await
        .since(before);
    let (seq, idx) = (done.seq_scans, done.idx_scans);
    assert_eq!(seq, 0, "cluster_connections scanned sequentially");
    assert!(idx > 0, "no index scan of cluster_connections");
}

#[tokio::test]
async fn a_page_after_a_name_starts_at_that_name() {
    let hub = Hub::new().await;
    big_fleet(&hub).await;
    let mut tx = generic_plans(&hub).await;
    let before = TableReads::of(&mut tx, "clusters").await;
    for _ in 0..3 {
        let page = db::clusters::list(&mut tx, Some("p-2990"), 2, t0())
            .await
            .unwrap();
        let names: Vec<&str> = page.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["p-2991", "p-2992"]);
    }
    let fetched = TableReads::of(&mut tx, "clusters")
        .await
        .since(before)
        .idx_fetches;
    assert!(
        fetched < 50,
        "{fetched} clusters fetched for three pages of 2"
    );
}

#[tokio::test]
async fn an_audit_filter_reads_only_matching_entries() {
    let hub = Hub::new().await;
    sqlx::query(
        "insert into audit_log (at, actor, action, target_kind, target_name) \
         select now(), 'actor-' || (i % 500), 'gate.replace', 'gate', 'g-' || (i % 700) \
         from generate_series(1, 6000) i",
    )
    .execute(&hub.pool)
    .await
    .unwrap();
    sqlx::query("analyze audit_log")
        .execute(&hub.pool)
        .await
        .unwrap();
    let mut tx = generic_plans(&hub).await;
    let before = TableReads::of(&mut tx, "audit_log").await;
    for _ in 0..3 {
        let filter = db::audit::AuditFilter {
            actor: Some("actor-7".into()),
            ..Default::default()
        };
        let page = db::audit::list(&mut tx, &filter, None, 50).await.unwrap();
        assert_eq!(page.len(), 12);
        assert!(page.iter().all(|e| e.actor == "actor-7"));
    }
    let done = TableReads::of(&mut tx, "audit_log").await.since(before);
    let fetched = done.idx_fetches;
    assert_eq!(done.seq_scans, 0, "audit_log scanned sequentially");
    assert!(
        fetched < 100,
        "{fetched} audit entries fetched for 3 × 12 matches"
    );
}

#[tokio::test]
async fn a_gates_ended_freezes_are_read_by_key() {
    let hub = Hub::new().await;
    // 200 gates with 30 overrides each, most of them long over: the history that
    // only grows, since overrides are never deleted.
    for sql in [
        "insert into gates (name, manifest, created_at, updated_at) \
         select 'g-' || i, '{}', now(), now() from generate_series(1, 200) i",
        "insert into overrides (id, gate, state, starts_at, expires_at, actor, reason, created_at, cancelled_at) \
         select gen_random_uuid(), 'g-' || (i % 200 + 1), case when i % 3 = 0 then 'open' else 'closed' end, \
                now() - make_interval(days => i), now() - make_interval(days => i) + interval '1 hour', \
                'someone', 'history', now() - make_interval(days => i), \
                case when i % 7 = 0 then now() - make_interval(days => i) + interval '10 minutes' end \
         from generate_series(1, 6000) i",
        "analyze gates, overrides",
    ] {
        sqlx::query(sql).execute(&hub.pool).await.unwrap();
    }
    let mut tx = generic_plans(&hub).await;
    let before = TableReads::of(&mut tx, "overrides").await;
    for _ in 0..3 {
        let ended = db::overrides::ended_closes(&mut tx, &["g-7".to_string()], chrono::Utc::now())
            .await
            .unwrap();
        assert_eq!(ended.len(), 1, "one row per (gate, scope)");
    }
    let done = TableReads::of(&mut tx, "overrides").await.since(before);
    assert_eq!(done.seq_scans, 0, "overrides scanned sequentially");
    assert!(
        done.idx_fetches < 200,
        "{} overrides fetched for one gate's 30, three times",
        done.idx_fetches
    );
}
