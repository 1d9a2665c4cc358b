//! Writes a batch of clusters' reports with one statement per step for the
//! whole batch (not per report): the stored hashes are read at once, the
//! changed reports' connection rows are locked and updated in one statement
//! (in cluster-name order, as every path locking several clusters), and their
//! object rows are deleted, updated and inserted from typed arrays (`unnest`)
//! in one statement that reads only the batch's clusters' rows. Only object
//! rows whose content differs from the stored row are written, and an
//! unchanged report writes at most its connection row. Reports rarely
//! carrying something (held objects, an inventory) write it per cluster.
//!
//! The statements reading arrays through `unnest` are never prepared for
//! reuse (`persistent(false)`): a cached generic plan is planned for an array
//! of unknown length (ten rows), and for the delete's anti-join against every
//! reported object that plan is a nested loop, one pass over the batch's
//! objects per stored row (25,600 × 25,600 for a batch of 256 reports of 100).
//! Planned with the arrays at hand, it is a hash anti-join.

use std::collections::{HashMap, HashSet};

/// A cluster's stored report state: name, hash, revision, clock offset, whether a write failed.
type StoredReportRow = (String, Option<Vec<u8>>, Option<i64>, Option<i64>, bool);

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::held_objects;
use super::reports::{CLOCK_DRIFT_MS, ClusterReport, MAX_LISTED_PROBLEMS, ReportWrite};
use crate::Result;

fn encode<T: serde::Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| crate::Error::Internal(format!("encoding report: {e}")))
}

/// `items` as a PostgreSQL array literal (`{"a","b"}`), cast to `text[]` in
/// SQL: `unnest` cannot carry an array per row, a literal per row can.
pub(crate) fn text_array_literal(items: &[String]) -> String {
    let mut out = String::with_capacity(2 + items.iter().map(|s| s.len() + 3).sum::<usize>());
    out.push('{');
    for (i, s) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('"');
        for c in s.chars() {
            if c == '"' || c == '\\' {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
    }
    out.push('}');
    out
}

/// The stored state an unchanged report is compared with.
struct Stored {
    hash: Option<Vec<u8>>,
    revision: Option<i64>,
    clock_offset_ms: Option<i64>,
    write_error: bool,
}

/// Writes `reports` (unique clusters, in cluster-name order) and says, per
/// report in the same order, what each did (see `reports::write_report_diff`).
pub async fn write_reports(
    conn: &mut PgConnection,
    reports: &[&ClusterReport],
) -> Result<Vec<ReportWrite>> {
    let mut out: Vec<Option<ReportWrite>> = vec![None; reports.len()];
    let hashes = reports
        .iter()
        .map(|r| r.content_hash())
        .collect::<Result<Vec<_>>>()?;
    let revision = |r: &ClusterReport| i64::try_from(r.revision).unwrap_or(i64::MAX);
    let names: Vec<&str> = reports.iter().map(|r| r.cluster.as_str()).collect();
    // A plain read, no lock: an idle fleet's heartbeats lock nothing. The hash
    // is compared again in the update, so a report written meanwhile by another
    // replica (a spoke that just moved) is never taken for this one.
    let rows: Vec<StoredReportRow> = sqlx::query_as(
        "select cluster, report_hash, report_revision, clock_offset_ms, \
         report_write_error is not null from cluster_connections where cluster = any($1)",
    )
    .bind(&names)
    .fetch_all(&mut *conn)
    .await?;
    let stored: HashMap<String, Stored> = rows
        .into_iter()
        .map(|(c, hash, revision, clock_offset_ms, write_error)| {
            (
                c,
                Stored {
                    hash,
                    revision,
                    clock_offset_ms,
                    write_error,
                },
            )
        })
        .collect();
    let mut changed = Vec::new();
    let mut touch = Vec::new();
    for (i, r) in reports.iter().enumerate() {
        match stored.get(&r.cluster) {
            Some(s) if s.hash.as_ref() == Some(&hashes[i]) => {
                // Same content. The connection row is written only when the
                // snapshot revision moved (rollouts wait for it), the clock
                // drifted, or a refusal is recorded; the update checks again.
                let drift = s
                    .clock_offset_ms
                    .is_none_or(|o| (o - r.clock_offset_ms).abs() >= CLOCK_DRIFT_MS);
                if s.revision != Some(revision(r)) || drift || s.write_error {
                    touch.push(i);
                }
                out[i] = Some(ReportWrite::Unchanged);
            }
            _ => changed.push(i),
        }
    }
    if !touch.is_empty() {
        let cluster: Vec<&str> = touch.iter().map(|&i| names[i]).collect();
        let at: Vec<DateTime<Utc>> = touch.iter().map(|&i| reports[i].received_at).collect();
        let offset: Vec<i64> = touch.iter().map(|&i| reports[i].clock_offset_ms).collect();
        let hash: Vec<&[u8]> = touch.iter().map(|&i| hashes[i].as_slice()).collect();
        let rev: Vec<i64> = touch.iter().map(|&i| revision(reports[i])).collect();
        // Rows locked in name order (the sub-select's order), and only those
        // whose stored hash is still the report's: an update whose condition
        // fails writes nothing at all (no row version, no WAL).
        sqlx::query(
            "update cluster_connections c set last_seen_at = greatest(c.last_seen_at, s.at), \
             reported_at = s.at, clock_offset_ms = s.off, report_revision = s.rev, \
             report_write_error = null, report_write_error_at = null \
             from (select k.cluster, s.at, s.off, s.rev from cluster_connections k \
                   join unnest($1::text[], $2::timestamptz[], $3::int8[], $4::bytea[], \
                     $5::int8[]) as s(cluster, at, off, hash, rev) on s.cluster = k.cluster \
                   where k.report_hash = s.hash \
                     and (k.report_revision is distinct from s.rev or k.clock_offset_ms is null \
                          or abs(k.clock_offset_ms - s.off) >= $6 \
                          or k.report_write_error is not null) \
                   order by k.cluster for no key update of k) s \
             where c.cluster = s.cluster",
        )
        .bind(&cluster)
        .bind(&at)
        .bind(&offset)
        .bind(&hash)
        .bind(&rev)
        .bind(CLOCK_DRIFT_MS)
        .persistent(false)
        .execute(&mut *conn)
        .await?;
    }
    for (i, r) in reports.iter().enumerate() {
        if matches!(out[i], Some(ReportWrite::Unchanged))
            && let Some(inventory) = &r.inventory
        {
            super::inventories::write(conn, &r.cluster, inventory, r.received_at).await?;
        }
    }
    if changed.is_empty() {
        return Ok(out
            .into_iter()
            .map(|w| w.unwrap_or(ReportWrite::Unchanged))
            .collect());
    }
    write_changed(conn, reports, &hashes, &changed, &mut out).await?;
    Ok(out
        .into_iter()
        .map(|w| w.unwrap_or(ReportWrite::NoCluster))
        .collect())
}

/// Writes the reports at `changed` (indices into `reports`) whose content
/// differs from the stored one.
async fn write_changed(
    conn: &mut PgConnection,
    reports: &[&ClusterReport],
    hashes: &[Vec<u8>],
    changed: &[usize],
    out: &mut [Option<ReportWrite>],
) -> Result<()> {
    let names: Vec<&str> = changed
        .iter()
        .map(|&i| reports[i].cluster.as_str())
        .collect();
    // The key-share lock the foreign keys take anyway, taken (in name order)
    // before any row of the clusters' status or connection: a concurrent
    // delete of a cluster (row lock, then cascade into those rows) makes this
    // batch wait for it here, and then drop its report, instead of each
    // waiting on the other. The same statement sets the transaction's
    // `work_mem` for `write_objects` (which runs only when a cluster is
    // left), instead of a round trip of its own.
    let existing: Vec<(String, String)> = sqlx::query_as(
        "select name, set_config('work_mem', $2, true) from clusters \
         where name = any($1) order by name for key share",
    )
    .bind(&names)
    .bind(BATCH_WORK_MEM)
    .fetch_all(&mut *conn)
    .await?;
    let existing: HashSet<String> = existing.into_iter().map(|(n, _)| n).collect();
    let live: Vec<usize> = changed
        .iter()
        .copied()
        .filter(|&i| existing.contains(&reports[i].cluster))
        .collect();
    if live.is_empty() {
        return Ok(());
    }
    let cluster: Vec<&str> = live.iter().map(|&i| reports[i].cluster.as_str()).collect();
    let at: Vec<DateTime<Utc>> = live.iter().map(|&i| reports[i].received_at).collect();
    let offset: Vec<i64> = live.iter().map(|&i| reports[i].clock_offset_ms).collect();
    let hash: Vec<&[u8]> = live.iter().map(|&i| hashes[i].as_slice()).collect();
    let rev: Vec<i64> = live
        .iter()
        .map(|&i| i64::try_from(reports[i].revision).unwrap_or(i64::MAX))
        .collect();
    let mut gates = Vec::with_capacity(live.len());
    let mut problems = Vec::with_capacity(live.len());
    let mut problem_total = Vec::with_capacity(live.len());
    for &i in &live {
        let r = reports[i];
        gates.push(encode(&r.local_gates)?);
        problems.push(encode(
            &&r.problems[..r.problems.len().min(MAX_LISTED_PROBLEMS)],
        )?);
        problem_total.push(i32::try_from(r.problems.len()).unwrap_or(i32::MAX));
    }
    // The sub-select reads each row as it was before this update (the local
    // gates it replaces), locking the rows in name order as the update would.
    let previous: Vec<(String, sqlx::types::Json<Vec<super::reports::LocalGate>>)> =
        sqlx::query_as(
            "update cluster_connections c set last_seen_at = s.at, reported_at = s.at, \
             clock_offset_ms = s.off, report_hash = s.hash, report_revision = s.rev, \
             local_gates = s.gates, report_problems = s.problems, \
             report_problem_total = s.total, report_write_error = null, \
             report_write_error_at = null \
             from (select cluster, local_gates from cluster_connections \
                   where cluster = any($1) order by cluster for update) old \
             join unnest($1::text[], $2::timestamptz[], $3::int8[], $4::bytea[], $5::int8[], \
               $6::jsonb[], $7::jsonb[], $8::int4[]) \
               as s(cluster, at, off, hash, rev, gates, problems, total) \
               on s.cluster = old.cluster \
             where c.cluster = old.cluster \
             returning c.cluster, coalesce(old.local_gates, '[]'::jsonb)",
        )
        .bind(&cluster)
        .bind(&at)
        .bind(&offset)
        .bind(&hash)
        .bind(&rev)
        .bind(&gates)
        .bind(&problems)
        .bind(&problem_total)
        .persistent(false)
        .fetch_all(&mut *conn)
        .await?;
    let mut previous: HashMap<String, Vec<super::reports::LocalGate>> =
        previous.into_iter().map(|(c, g)| (c, g.0)).collect();
    let newly_held = newly_held(conn, reports, &live).await?;
    write_objects(conn, reports, &live).await?;
    // Held objects: one statement for the clusters holding none (the usual
    // case), the others one by one.
    let (with_held, without): (Vec<usize>, Vec<usize>) = live
        .iter()
        .partition(|&&i| !reports[i].held_objects.is_empty());
    if !without.is_empty() {
        let none: Vec<&str> = without
            .iter()
            .map(|&i| reports[i].cluster.as_str())
            .collect();
        sqlx::query("delete from held_objects where cluster = any($1)")
            .bind(&none)
            .execute(&mut *conn)
            .await?;
    }
    for &i in &with_held {
        let r = reports[i];
        held_objects::replace(conn, &r.cluster, &r.held_objects, r.received_at).await?;
    }
    for &i in &live {
        let r = reports[i];
        if let Some(inventory) = &r.inventory {
            super::inventories::write(conn, &r.cluster, inventory, r.received_at).await?;
        }
        out[i] = Some(ReportWrite::Written {
            previous_local_gates: previous.remove(&r.cluster).unwrap_or_default(),
            newly_held: newly_held.get(&i).cloned().unwrap_or_default(),
        });
    }
    Ok(())
}

/// Per report at `live` with held objects: its objects (indices) whose newest
/// revision started waiting with it (held now, not held at that revision
/// before).
async fn newly_held(
    conn: &mut PgConnection,
    reports: &[&ClusterReport],
    live: &[usize],
) -> Result<HashMap<usize, Vec<usize>>> {
    let holding: Vec<usize> = live
        .iter()
        .copied()
        .filter(|&i| reports[i].objects.iter().any(|o| o.held))
        .collect();
    let mut out = HashMap::new();
    if holding.is_empty() {
        return Ok(out);
    }
    let names: Vec<&str> = holding
        .iter()
        .map(|&i| reports[i].cluster.as_str())
        .collect();
    type Row = (String, String, String, String, Option<String>);
    let before: Vec<Row> = sqlx::query_as(
        "select cluster, kind, namespace, name, newest_source_revision from object_status \
         where cluster = any($1) and held",
    )
    .bind(&names)
    .fetch_all(&mut *conn)
    .await?;
    let before: HashSet<(&str, &str, &str, &str, Option<&str>)> = before
        .iter()
        .map(|(c, k, ns, n, r)| {
            (
                c.as_str(),
                k.as_str(),
                ns.as_str(),
                n.as_str(),
                r.as_deref(),
            )
        })
        .collect();
    for i in holding {
        let r = reports[i];
        let held = r
            .objects
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                o.held
                    && !before.contains(&(
                        r.cluster.as_str(),
                        o.kind.as_str(),
                        o.namespace.as_str(),
                        o.name.as_str(),
                        o.newest_source_revision.as_deref(),
                    ))
            })
            .map(|(j, _)| j)
            .collect();
        out.insert(i, held);
    }
    Ok(out)
}

/// `work_mem` of a batch's transaction, set (until the transaction ends) by
/// the clusters' key-share lock in [`write_changed`]: the hash join of
/// [`write_objects`] holds its clusters' stored rows (about 10 MB for 25,600
/// rows) and `s` every reported row, in memory instead of spilled to
/// temporary files in batches (the default `work_mem` is 4 MB).
const BATCH_WORK_MEM: &str = "32MB";

/// Columns of every object of the reports at `live`, one array per column.
#[derive(Default)]
struct Columns<'a> {
    cluster: Vec<&'a str>,
    kind: Vec<&'a str>,
    namespace: Vec<&'a str>,
    name: Vec<&'a str>,
    suspended: Vec<bool>,
    suspended_by: Vec<String>,
    gates: Vec<String>,
    last_applied_revision: Vec<Option<&'a str>>,
    newest_source_revision: Vec<Option<&'a str>>,
    held: Vec<bool>,
    suspended_by_human: Vec<bool>,
    ignored: Vec<bool>,
    ready: Vec<Option<&'a str>>,
    ready_reason: Vec<Option<&'a str>>,
    ready_message: Vec<Option<&'a str>>,
    stalled: Vec<bool>,
    generation: Vec<Option<i64>>,
    observed_generation: Vec<Option<i64>>,
    last_attempted_revision: Vec<Option<&'a str>>,
    would_suspend_by: Vec<String>,
    would_hold: Vec<bool>,
    reported_at: Vec<DateTime<Utc>>,
}

/// Replaces the object rows of the reports at `live` in one statement: rows
/// no longer reported are deleted, and only objects whose content differs
/// from their stored row are written (cost proportional to change: one object
/// changed of 100 writes one row); the others keep their row version, and
/// their time is the cluster's `reported_at` (see `status::for_cluster`). The
/// clusters' connection rows are locked, so no other report of them runs
/// between this comparison and the write.
///
/// The reported rows are read from the arrays and joined with the batch's
/// clusters' stored rows once (`cluster = any($23)`, the primary key's leading
/// column: no step reads the rest of the fleet's rows), in a full join that
/// sorts every row into insert (reported only), delete (stored only), update
/// (both, different) or nothing (both, equal); the delete and the update find
/// their rows by `ctid`. Separate steps joined the batch's stored rows three
/// times (an `except all` of the keys for the delete, a hash join for the
/// update, an anti-join for the insert), with the reported rows materialized
/// once more: 0.41 s per 25,000-row batch against 0.37 s, both with
/// [`BATCH_WORK_MEM`] (0.45 s with 4 MB; issue 50, ninth session). The arrays
/// are read by one `unnest` per array in a select list (a projection handing
/// each row on) rather than one `unnest` of all 22 in `from` (a function scan,
/// which first copies every row into a tuple store), and the text array
/// literals are cast once per row: 22-27 % less time for the statement (issue
/// 50, tenth session). A changed row
/// is a plain update (a heap-only tuple when its page has room:
/// `object_status` keeps half of each page free, migration 0071), not an `on
/// conflict` upsert, which locked the row (one more WAL record) and probed the
/// index again before updating it.
async fn write_objects(
    conn: &mut PgConnection,
    reports: &[&ClusterReport],
    live: &[usize],
) -> Result<()> {
    let mut c = Columns::default();
    for &i in live {
        let r = reports[i];
        for o in &r.objects {
            c.cluster.push(&r.cluster);
            c.kind.push(&o.kind);
            c.namespace.push(&o.namespace);
            c.name.push(&o.name);
            c.suspended.push(o.suspended);
            c.suspended_by.push(text_array_literal(&o.suspended_by));
            c.gates.push(text_array_literal(&o.gates));
            c.last_applied_revision
                .push(o.last_applied_revision.as_deref());
            c.newest_source_revision
                .push(o.newest_source_revision.as_deref());
            c.held.push(o.held);
            c.suspended_by_human.push(o.suspended_by_human);
            c.ignored.push(o.ignored);
            c.ready.push(o.ready.as_deref());
            c.ready_reason.push(o.ready_reason.as_deref());
            c.ready_message.push(o.ready_message.as_deref());
            c.stalled.push(o.stalled);
            c.generation.push(o.generation);
            c.observed_generation.push(o.observed_generation);
            c.last_attempted_revision
                .push(o.last_attempted_revision.as_deref());
            c.would_suspend_by
                .push(text_array_literal(&o.would_suspend_by));
            c.would_hold.push(o.would_hold);
            c.reported_at.push(r.received_at);
        }
    }
    let clusters: Vec<&str> = live.iter().map(|&i| reports[i].cluster.as_str()).collect();
    // `s` joins the reported rows with the batch's clusters' stored rows once
    // (a full join: reported and stored, reported only, stored only) and says
    // what each needs (`op`); every sub-statement sees the rows as they were
    // before it, and each touches distinct rows, found by `ctid` (a TID scan
    // per row, no second join).
    sqlx::query(
        r#"with s as materialized (
           select r.cluster, r.kind, r.namespace, r.name, r.suspended,
             r.suspended_by, r.gates,
             r.last_applied_revision, r.newest_source_revision, r.held, r.suspended_by_human,
             r.ignored, r.ready, r.ready_reason, r.ready_message, r.stalled, r.generation,
             r.observed_generation, r.last_attempted_revision,
             r.would_suspend_by, r.would_hold, r.reported_at,
             case when r.ready = 'False' or r.stalled then r.reported_at end as failing_at,
             o.ctid as tid,
             case when o.ctid is null then 'i' when r.cluster is null then 'd'
               when (o.suspended, o.suspended_by, o.gates, o.last_applied_revision,
                     o.newest_source_revision, o.held, o.suspended_by_human, o.ignored, o.ready,
                     o.ready_reason, o.ready_message, o.stalled, o.generation,
                     o.observed_generation, o.last_attempted_revision, o.would_suspend_by,
                     o.would_hold)
                 is distinct from
                    (r.suspended, r.suspended_by, r.gates,
                     r.last_applied_revision, r.newest_source_revision, r.held,
                     r.suspended_by_human, r.ignored, r.ready, r.ready_reason, r.ready_message,
                     r.stalled, r.generation, r.observed_generation, r.last_attempted_revision,
                     r.would_suspend_by, r.would_hold)
               then 'u' end as op
           from (select unnest($1::text[]) as cluster, unnest($2::text[]) as kind,
               unnest($3::text[]) as namespace, unnest($4::text[]) as name,
               unnest($5::bool[]) as suspended, unnest($6::text[])::text[] as suspended_by,
               unnest($7::text[])::text[] as gates, unnest($8::text[]) as last_applied_revision,
               unnest($9::text[]) as newest_source_revision, unnest($10::bool[]) as held,
               unnest($11::bool[]) as suspended_by_human, unnest($12::bool[]) as ignored,
               unnest($13::text[]) as ready, unnest($14::text[]) as ready_reason,
               unnest($15::text[]) as ready_message, unnest($16::bool[]) as stalled,
               unnest($17::int8[]) as generation, unnest($18::int8[]) as observed_generation,
               unnest($19::text[]) as last_attempted_revision,
               unnest($20::text[])::text[] as would_suspend_by, unnest($21::bool[]) as would_hold,
               unnest($22::timestamptz[]) as reported_at) as r
           full join (select o.*, o.ctid from object_status o where o.cluster = any($23)) o
             on o.cluster = r.cluster and o.kind = r.kind and o.namespace = r.namespace
               and o.name = r.name),
         gone as (
           delete from object_status o using s where s.op = 'd' and o.ctid = s.tid),
         changed as (
           update object_status o set
             suspended = s.suspended, suspended_by = s.suspended_by, gates = s.gates,
             last_applied_revision = s.last_applied_revision,
             newest_source_revision = s.newest_source_revision, held = s.held,
             suspended_by_human = s.suspended_by_human, ignored = s.ignored, ready = s.ready,
             ready_reason = s.ready_reason, ready_message = s.ready_message,
             stalled = s.stalled, generation = s.generation,
             observed_generation = s.observed_generation,
             last_attempted_revision = s.last_attempted_revision,
             would_suspend_by = s.would_suspend_by, would_hold = s.would_hold,
             reported_at = s.reported_at,
             -- Still failing: since the first failing report; recovered: none.
             failing_since = case when s.failing_at is not null
               then coalesce(o.failing_since, s.failing_at) end
           from s
           where s.op = 'u' and o.ctid = s.tid)
         insert into object_status (cluster, kind, namespace, name, suspended, suspended_by,
           gates, last_applied_revision, newest_source_revision, held, suspended_by_human,
           ignored, ready, ready_reason, ready_message, stalled, generation,
           observed_generation, last_attempted_revision, would_suspend_by, would_hold,
           reported_at, failing_since)
         select s.cluster, s.kind, s.namespace, s.name, s.suspended, s.suspended_by, s.gates,
           s.last_applied_revision, s.newest_source_revision, s.held, s.suspended_by_human,
           s.ignored, s.ready, s.ready_reason, s.ready_message, s.stalled, s.generation,
           s.observed_generation, s.last_attempted_revision, s.would_suspend_by, s.would_hold,
           s.reported_at, s.failing_at
         from s
         where s.op = 'i'"#,
    )
    .bind(&c.cluster)
    .bind(&c.kind)
    .bind(&c.namespace)
    .bind(&c.name)
    .bind(&c.suspended)
    .bind(&c.suspended_by)
    .bind(&c.gates)
    .bind(&c.last_applied_revision)
    .bind(&c.newest_source_revision)
    .bind(&c.held)
    .bind(&c.suspended_by_human)
    .bind(&c.ignored)
    .bind(&c.ready)
    .bind(&c.ready_reason)
    .bind(&c.ready_message)
    .bind(&c.stalled)
    .bind(&c.generation)
    .bind(&c.observed_generation)
    .bind(&c.last_attempted_revision)
    .bind(&c.would_suspend_by)
    .bind(&c.would_hold)
    .bind(&c.reported_at)
    .bind(&clusters)
    .persistent(false)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Replaces `report.cluster`'s object statuses and held objects with the
/// report's and stamps the cluster's last-seen and report times and clock
/// offset. A report whose content hash equals the stored one writes nothing,
/// unless its snapshot revision differs from the stored one or its clock
/// offset moved by [`CLOCK_DRIFT_MS`] (then only the connection row).
/// Returns false (writing nothing) when the cluster no longer exists. A
/// transaction writing several reports writes them in cluster-name order.
pub async fn write_report(conn: &mut PgConnection, report: &ClusterReport) -> Result<bool> {
    Ok(!matches!(
        write_report_diff(conn, report).await?,
        ReportWrite::NoCluster
    ))
}

/// [`write_report`], also saying what the report replaced (local gate
/// changes are audited from it).
pub async fn write_report_diff(
    conn: &mut PgConnection,
    report: &ClusterReport,
) -> Result<ReportWrite> {
    let mut written = write_reports(conn, &[report]).await?;
    Ok(written.pop().unwrap_or(ReportWrite::NoCluster))
}

#[cfg(test)]
mod tests {
    use super::text_array_literal;

    #[test]
    fn array_literals_quote_every_element() {
        assert_eq!(text_array_literal(&[]), "{}");
        let items = [
            "a".to_string(),
            r#"b"c\d"#.to_string(),
            "NULL".into(),
            "{,}".into(),
        ];
        assert_eq!(
            text_array_literal(&items),
            r#"{"a","b\"c\\d","NULL","{,}"}"#
        );
    }
}
