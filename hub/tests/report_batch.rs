//! A batch of reports written together (`db::report_batch::write_reports`,
//! one statement per step for the whole batch, what report ingestion flushes)
//! stores exactly what the same reports written one at a time store, for
//! every kind of content (array fields with quotes, backslashes, commas and
//! braces; absent optional fields; held objects; local gates; problems), says
//! per report what it did, and writes nothing for an unchanged report
//! (real PostgreSQL).

mod common;

use chrono::Duration;
use common::{Hub, t0};
use fleetgate_hub::db::held_objects::HeldObject;
use fleetgate_hub::db::report_batch::{write_report, write_reports};
use fleetgate_hub::db::reports::{
    ClusterReport, LocalGate, ReportProblem, ReportWrite, ReportedObject,
};
use serde_json::json;

fn object(name: &str, revision: Option<&str>, odd: bool) -> ReportedObject {
    ReportedObject {
        kind: "Kustomization".into(),
        namespace: "apps".into(),
        name: name.into(),
        suspended: odd,
        suspended_by: if odd {
            vec![
                r#"a "quoted" gate"#.into(),
                r"back\slash".into(),
                "{c,d}".into(),
            ]
        } else {
            vec![]
        },
        gates: vec!["g".into(), "NULL".into()],
        last_applied_revision: revision.map(str::to_string),
        newest_source_revision: revision.map(str::to_string),
        held: odd,
        ready: odd.then(|| "False".into()),
        ready_message: odd.then(|| "line 1\nline 2, \"x\"".into()),
        stalled: odd,
        generation: odd.then_some(3),
        would_suspend_by: if odd { vec!["w".into()] } else { vec![] },
        ..ReportedObject::default()
    }
}

fn report(cluster: &str, round: u32) -> ClusterReport {
    let rev = format!("main@sha1:{round}");
    ClusterReport {
        cluster: cluster.into(),
        objects: (0..6)
            .filter(|i| !(round > 1 && *i == 5)) // the second round drops one
            .map(|i| {
                object(
                    &format!("app-{i}"),
                    (i != 2).then_some(rev.as_str()),
                    i % 2 == 1,
                )
            })
            .collect(),
        held_objects: vec![HeldObject {
            group: "apps".into(),
            kind: "Deployment".into(),
            namespace: "apps".into(),
            name: "web".into(),
            kustomization_namespace: "flux-system".into(),
            kustomization_name: "apps".into(),
            gates: vec!["g".into()],
            held_by: vec!["g".into()],
            held_since: Some(t0()),
            ..HeldObject::default()
        }],
        local_gates: vec![LocalGate {
            name: "local".into(),
            state: "Closed".into(),
            ..LocalGate::default()
        }],
        problems: vec![ReportProblem {
            field: "objects[0]".into(),
            object: "x".into(),
            action: "repaired".into(),
            message: format!("round {round}"),
        }],
        inventory: None,
        revision: u64::from(round),
        clock_offset_ms: 0,
        received_at: t0() + Duration::minutes(i64::from(round)),
    }
}

/// Writes `reports` as one batch in one committed transaction.
async fn write_batch(hub: &Hub, reports: &[&ClusterReport]) -> Vec<ReportWrite> {
    let mut tx = hub.pool.begin().await.unwrap();
    let written = write_reports(&mut tx, reports).await.unwrap();
    tx.commit().await.unwrap();
    written
}

/// Everything stored for `cluster`, without its name (as JSON text rows).
async fn stored(hub: &Hub, cluster: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for sql in [
        "select to_jsonb(o) - 'cluster' from object_status o where cluster = $1 order by name",
        "select to_jsonb(h) - 'cluster' from held_objects h where cluster = $1 order by name",
        "select to_jsonb(k) - 'cluster' - 'connected' - 'connected_replica' - 'spoke_version' \
         from cluster_connections k where cluster = $1",
    ] {
        let rows: Vec<(serde_json::Value,)> = sqlx::query_as(sql)
            .bind(cluster)
            .fetch_all(&hub.pool)
            .await
            .unwrap();
        out.extend(rows.into_iter().map(|(v,)| v.to_string()));
    }
    out
}

async fn xmins(hub: &Hub, cluster: &str) -> Vec<String> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "select xmin::text from object_status where cluster = $1 union all \
         select xmin::text from cluster_connections where cluster = $1",
    )
    .bind(cluster)
    .fetch_all(&hub.pool)
    .await
    .unwrap();
    rows.into_iter().map(|(x,)| x).collect()
}

#[tokio::test]
async fn a_batch_stores_what_reports_written_one_by_one_store() {
    let hub = Hub::new().await;
    for c in ["a1", "a2", "b1", "b2"] {
        hub.register(c, json!({})).await;
    }
    for round in [1, 2] {
        // One at a time: a1, a2. Together: b1, b2 and a cluster that does not exist.
        for c in ["a1", "a2"] {
            let mut tx = hub.pool.begin().await.unwrap();
            assert!(write_report(&mut tx, &report(c, round)).await.unwrap());
            tx.commit().await.unwrap();
        }
        let batch = [
            report("b1", round),
            report("b2", round),
            report("gone", round),
        ];
        let refs: Vec<&ClusterReport> = batch.iter().collect();
        let written = write_batch(&hub, &refs).await;
        assert!(
            matches!(written[0], ReportWrite::Written { .. }),
            "{written:?}"
        );
        assert!(
            matches!(written[1], ReportWrite::Written { .. }),
            "{written:?}"
        );
        assert_eq!(written[2], ReportWrite::NoCluster);
        if let ReportWrite::Written {
            previous_local_gates,
            newly_held,
        } = &written[0]
        {
            // What the report replaced, and its held objects new at their revision.
            assert_eq!(previous_local_gates.len(), usize::from(round > 1));
            assert_eq!(newly_held.len(), if round == 1 { 3 } else { 2 });
        }
        assert_eq!(
            stored(&hub, "a1").await,
            stored(&hub, "b1").await,
            "round {round}"
        );
        assert_eq!(
            stored(&hub, "a2").await,
            stored(&hub, "b2").await,
            "round {round}"
        );
    }
    let rows = stored(&hub, "b1").await;
    assert_eq!(rows.len(), 5 + 1 + 1, "{rows:#?}");
    assert!(
        rows[1].contains(r#"["a \"quoted\" gate","back\\slash","{c,d}"]"#),
        "{rows:#?}"
    );

    // The same reports again, with one of them changed: the unchanged one writes no row.
    let before = xmins(&hub, "b1").await;
    let same = report("b1", 2);
    let mut changed = report("b2", 2);
    changed.objects[0].last_applied_revision = Some("main@sha1:3".into());
    let written = write_batch(&hub, &[&same, &changed]).await;
    assert_eq!(written[0], ReportWrite::Unchanged);
    assert!(matches!(written[1], ReportWrite::Written { .. }));
    assert_eq!(
        xmins(&hub, "b1").await,
        before,
        "an unchanged report wrote rows"
    );
    let (rev,): (Option<String>,) = sqlx::query_as(
        "select last_applied_revision from object_status where cluster = 'b2' and name = 'app-0'",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap();
    assert_eq!(rev.as_deref(), Some("main@sha1:3"));
}

/// The replica's flush (`Reports::flush_all`: the pending reports split into
/// batches, two written at once) stores what the same reports written one at
/// a time store: 300 clusters flushed (two batches of 150) beside 300 written
/// one by one, over three rounds: the first report, a second that drops an
/// object (its row deleted) and that the database refuses for one cluster
/// (the others in its batch written, the refusal recorded, its old rows
/// kept), and a third that is the same as the second for every other cluster
/// (no row rewritten: same `xmin`) and new for the rest.
#[tokio::test]
async fn a_flush_of_concurrent_batches_stores_what_one_at_a_time_stores() {
    let hub = Hub::new().await;
    let n = 300;
    let flushed: Vec<String> = (0..n).map(|i| format!("f{i:03}")).collect();
    let single: Vec<String> = (0..n).map(|i| format!("s{i:03}")).collect();
    for c in flushed.iter().chain(&single) {
        hub.register(c, json!({})).await;
    }
    let replica = fleetgate_hub::replica::Replica::new(
        hub.service.clone(),
        fleetgate_hub::config::HttpOptions::default(),
        fleetgate_hub::grpc::GrpcOptions::default(),
    );
    let reports = &replica.reports;
    let refused = 7;
    let content = |c: &str, i: usize, round: u32| {
        let revision = if round == 3 && i.is_multiple_of(2) {
            2
        } else {
            round
        };
        let mut r = report(c, revision);
        if round == 2 && i == refused {
            // Past the per-object repair, as a bug or a new field would be.
            r.objects[0].ready_message = Some("bad \u{0} byte".into());
        }
        r
    };
    let mut unchanged_before = Vec::new();
    for round in 1..=3u32 {
        hub.clock.set(t0() + Duration::minutes(i64::from(round)));
        if round == 3 {
            for c in flushed.iter().step_by(2) {
                unchanged_before.push(xmins(&hub, c).await);
            }
        }
        for (i, c) in flushed.iter().enumerate() {
            let r = content(c, i, round);
            let assembled = fleetgate_hub::service::reports::Assembled {
                objects: r.objects,
                held_objects: r.held_objects,
                local_gates: r.local_gates,
                problems: r.problems,
                inventory: None,
            };
            reports.submit(c, r.revision, assembled, 0);
        }
        reports.flush_all().await;
        assert_eq!(reports.backlog(), 0, "round {round}");
        for (i, c) in single.iter().enumerate() {
            if round == 2 && i == refused {
                continue;
            }
            let mut tx = hub.pool.begin().await.unwrap();
            assert!(write_report(&mut tx, &content(c, i, round)).await.unwrap());
            tx.commit().await.unwrap();
        }
        for (i, (f, s)) in flushed.iter().zip(&single).enumerate() {
            if round == 2 && i == refused {
                let (error,): (Option<String>,) = sqlx::query_as(
                    "select report_write_error from cluster_connections where cluster = $1",
                )
                .bind(f)
                .fetch_one(&hub.pool)
                .await
                .unwrap();
                assert!(error.is_some_and(|e| !e.is_empty()), "{f}: no write error");
                // Its rows are the first round's: six objects, app-5 among them.
                let rows = stored(&hub, f).await;
                assert!(rows[5].contains("app-5"), "{rows:#?}");
                continue;
            }
            let (f_rows, s_rows) = (stored(&hub, f).await, stored(&hub, s).await);
            assert_eq!(f_rows, s_rows, "round {round}: {f} / {s}");
            let objects = if round == 1 { 6 } else { 5 };
            assert_eq!(f_rows.len(), objects + 2, "round {round}: {f_rows:#?}");
        }
    }
    let mut unchanged_after = Vec::new();
    for c in flushed.iter().step_by(2) {
        unchanged_after.push(xmins(&hub, c).await);
    }
    assert_eq!(
        unchanged_after, unchanged_before,
        "an unchanged report rewrote rows"
    );
}

/// The batch's delete takes each cluster's stored rows that its report no
/// longer carries, and only its own: in one batch, a cluster whose report
/// carries no object loses every row, one that drops an object loses that
/// one, and a third that changes one object keeps all six rows.
#[tokio::test]
async fn a_batch_deletes_what_each_report_no_longer_carries() {
    let hub = Hub::new().await;
    for c in ["d1", "d2", "d3"] {
        hub.register(c, json!({})).await;
    }
    let first: Vec<ClusterReport> = ["d1", "d2", "d3"]
        .into_iter()
        .map(|c| report(c, 1))
        .collect();
    write_batch(&hub, &first.iter().collect::<Vec<_>>()).await;

    let mut empty = report("d1", 2);
    empty.objects.clear();
    let mut dropped = report("d2", 1);
    dropped.objects.remove(3);
    dropped.revision = 2;
    let mut one = report("d3", 1);
    one.objects[0].last_applied_revision = Some("main@sha1:9".into());
    let written = write_batch(&hub, &[&empty, &dropped, &one]).await;
    assert_eq!(written.len(), 3, "{written:?}");
    assert!(
        written
            .iter()
            .all(|w| matches!(w, ReportWrite::Written { .. })),
        "{written:?}"
    );
    let names = |cluster: &'static str| {
        let pool = hub.pool.clone();
        async move {
            let rows: Vec<(String,)> =
                sqlx::query_as("select name from object_status where cluster = $1 order by name")
                    .bind(cluster)
                    .fetch_all(&pool)
                    .await
                    .unwrap();
            rows.into_iter().map(|(n,)| n).collect::<Vec<_>>()
        }
    };
    assert_eq!(names("d1").await, Vec::<String>::new());
    assert_eq!(
        names("d2").await,
        ["app-0", "app-1", "app-2", "app-4", "app-5"]
    );
    assert_eq!(names("d3").await.len(), 6);
}

/// The batch's transaction writes its object rows with `work_mem` 32 MB (set
/// by the statement that locks its clusters, not one of its own), and only
/// that transaction: the connection goes back to the server's setting.
#[tokio::test]
async fn a_batch_writes_its_objects_with_its_own_work_mem() {
    let hub = Hub::new().await;
    hub.register("w1", json!({})).await;
    let mut conn = hub.pool.acquire().await.unwrap();
    let (server,): (String,) = sqlx::query_as("show work_mem")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let mut tx = sqlx::Connection::begin(&mut *conn).await.unwrap();
    let written = write_reports(&mut tx, &[&report("w1", 1)]).await.unwrap();
    assert!(
        matches!(written[..], [ReportWrite::Written { .. }]),
        "{written:?}"
    );
    let (batch,): (String,) = sqlx::query_as("show work_mem")
        .fetch_one(&mut *tx)
        .await
        .unwrap();
    assert_eq!(batch, "32MB");
    tx.commit().await.unwrap();
    let (after,): (String,) = sqlx::query_as("show work_mem")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert_eq!(after, server);
    assert_eq!(stored(&hub, "w1").await.len(), 6 + 1 + 1);
}

/// Rows written (every table) and the WAL position.
async fn storage(hub: &Hub) -> (i64, i64) {
    // A backend flushes its table statistics when idle, within
    // PGSTAT_IDLE_INTERVAL (10 s) of its last transaction.
    tokio::time::sleep(std::time::Duration::from_secs(11)).await;
    sqlx::query_as(
        "select (select coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::int8 \
           from pg_stat_user_tables), pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::int8",
    )
    .fetch_one(&hub.pool)
    .await
    .unwrap()
}

/// Prints the cost of writing 512 clusters' 100-object reports (every object changed) in
/// transactions of 256, one report at a time (each report its own statements, as the batcher
/// wrote before) and as batches: reports/s, rows and WAL bytes per report. Measures, asserts
/// nothing about time: `cargo test -p fleetgate-hub --test report_batch -- --ignored --nocapture`.
#[tokio::test]
#[ignore]
async fn bench_batch_against_one_at_a_time() {
    let hub = Hub::new().await;
    let clusters: Vec<String> = (0..512).map(|i| format!("c{i:04}")).collect();
    for c in &clusters {
        hub.register(c, json!({})).await;
    }
    let reports = |round: u32| -> Vec<ClusterReport> {
        clusters
            .iter()
            .map(|c| {
                let mut r = report(c, round);
                r.objects = (0..100)
                    .map(|i| {
                        object(
                            &format!("app-{i:03}"),
                            Some(&format!("main@sha1:{round}")),
                            false,
                        )
                    })
                    .collect();
                r.held_objects.clear();
                r
            })
            .collect()
    };
    for round in 1..=6u32 {
        let batch = round % 2 == 0;
        let rs = reports(round);
        let (rows0, wal0) = storage(&hub).await;
        let t = std::time::Instant::now();
        for chunk in rs.chunks(256) {
            let mut tx = hub.pool.begin().await.unwrap();
            if batch {
                let refs: Vec<&ClusterReport> = chunk.iter().collect();
                write_reports(&mut tx, &refs).await.unwrap();
            } else {
                for r in chunk {
                    write_report(&mut tx, r).await.unwrap();
                }
            }
            tx.commit().await.unwrap();
        }
        let secs = t.elapsed().as_secs_f64();
        let (rows1, wal1) = storage(&hub).await;
        let n = rs.len() as f64;
        println!(
            "round {round} {}: {:.0} object reports/s; per report {:.1} rows, {:.1} KiB WAL",
            if batch { "batch     " } else { "one by one" },
            n * 100.0 / secs,
            (rows1 - rows0) as f64 / n,
            (wal1 - wal0) as f64 / n / 1024.0
        );
    }
}
