//! The notification outbox: events inserted in the caller's transaction
//! (idempotent by dedup key, numbered per subject) and routed at once to the
//! subscriptions that want them, one delivery row each.

use sqlx::PgConnection;

use crate::Result;
use crate::db::clusters::Scoped;
use crate::notify::event::{NewEvent, type_matches};

/// Inserts `ev` unless an event with its dedup key exists, numbers it in its
/// subject's sequence and creates its deliveries. `Some(id)` when inserted.
pub async fn enqueue(conn: &mut PgConnection, ev: &NewEvent) -> Result<Option<i64>> {
    let inserted: Option<(i64,)> = sqlx::query_as(
        "insert into notify_events \
         (type, subject, seq, dedup_key, occurred_at, gate, clusters, data, created_at) \
         values ($1, $2, 0, $3, $4, $5, $6, $7, now()) \
         on conflict (dedup_key) do nothing returning id",
    )
    .bind(&ev.event_type)
    .bind(&ev.subject)
    .bind(&ev.dedup_key)
    .bind(ev.occurred_at)
    .bind(&ev.gate)
    .bind(&ev.clusters)
    .bind(&ev.data)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((id,)) = inserted else {
        return Ok(None);
    };
    // The subject row's lock orders its events: sequence numbers follow
    // commit order within a subject.
    sqlx::query(
        "with s as (insert into notify_subjects (subject, seq) values ($1, 1) \
           on conflict (subject) do update set seq = notify_subjects.seq + 1 returning seq) \
         update notify_events set seq = (select seq from s) where id = $2",
    )
    .bind(&ev.subject)
    .bind(id)
    .execute(&mut *conn)
    .await?;
    route(conn, id, ev).await?;
    Ok(Some(id))
}

#[derive(sqlx::FromRow)]
struct Route {
    id: uuid::Uuid,
    event_types: Vec<String>,
    gates: Vec<String>,
    #[sqlx(json(nullable))]
    clusters: Option<fleetgate_policy::ClusterScope>,
    per_cluster: bool,
}

/// One delivery per subscription that selects `ev` (per cluster for
/// per-cluster subscriptions).
async fn route(conn: &mut PgConnection, event_id: i64, ev: &NewEvent) -> Result<()> {
    let routes: Vec<Route> = sqlx::query_as(
        "select id, event_types, gates, clusters, per_cluster from webhooks where enabled",
    )
    .fetch_all(&mut *conn)
    .await?;
    let wanted: Vec<&Route> = routes
        .iter()
        .filter(|r| {
            r.event_types.is_empty()
                || r.event_types
                    .iter()
                    .any(|p| type_matches(p, &ev.event_type))
        })
        .filter(|r| r.gates.is_empty() || ev.gate.as_ref().is_some_and(|g| r.gates.contains(g)))
        .collect();
    if wanted.is_empty() {
        return Ok(());
    }
    let labelled: Option<Vec<Scoped>> =
        if wanted.iter().any(|r| r.clusters.is_some()) && !ev.clusters.is_empty() {
            Some(crate::db::clusters::scoped(conn).await?)
        } else {
            None
        };
    let (mut hooks, mut clusters, mut kept, mut ids) = (vec![], vec![], vec![], vec![]);
    for r in wanted {
        let matched: Option<Vec<String>> = match (&r.clusters, &labelled) {
            (Some(scope), Some(all)) => Some(
                ev.clusters
                    .iter()
                    .filter(|c| {
                        all.iter().find(|s| &s.name == *c).map_or_else(
                            || scope.names.contains(c),
                            |s| scope.matches(&s.name, &s.labels),
                        )
                    })
                    .cloned()
                    .collect(),
            ),
            _ => None,
        };
        if matched.as_ref().is_some_and(Vec::is_empty) {
            continue;
        }
        let hook = r.id.simple().to_string();
        if r.per_cluster && !ev.clusters.is_empty() {
            for c in matched.as_deref().unwrap_or(&ev.clusters) {
                ids.push(format!("msg_{event_id}_{hook}_{c}"));
                hooks.push(r.id);
                clusters.push(c.clone());
                kept.push(serde_json::json!([c]));
            }
        } else {
            ids.push(format!("msg_{event_id}_{hook}"));
            hooks.push(r.id);
            clusters.push(String::new());
            kept.push(matched.map_or(serde_json::Value::Null, |m| serde_json::json!(m)));
        }
    }
    if hooks.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "insert into webhook_deliveries \
         (webhook_id, event_id, cluster, clusters, message_id, next_attempt_at, created_at) \
         select h, $2, c, case when k = 'null'::jsonb then null \
                              else array(select jsonb_array_elements_text(k)) end, m, now(), now() \
         from unnest($1::uuid[], $3::text[], $4::jsonb[], $5::text[]) as u(h, c, k, m) \
         on conflict do nothing",
    )
    .bind(&hooks)
    .bind(event_id)
    .bind(&clusters)
    .bind(&kept)
    .bind(&ids)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Overrides that may change some gate's state after `from`: not cancelled
/// nor expired by then, started by `to`. A cancelled one ends at its
/// cancellation (its `expires_at` is moved there).
pub async fn overrides_since(
    conn: &mut PgConnection,
    from: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<crate::db::overrides::OverrideRecord>> {
    let mut rows: Vec<crate::db::overrides::OverrideRecord> = sqlx::query_as(sql!(
        "select {} from overrides where (cancelled_at is null or cancelled_at > $1) \
         and (expires_at is null or expires_at > $1) and (cancelled_at is null or cancelled_at > starts_at) \
         order by created_at, id",
        crate::db::overrides::COLUMNS
    ))
    .bind(from)
    .fetch_all(conn)
    .await?;
    for r in &mut rows {
        if let Some(c) = r.cancelled_at {
            r.expires_at = Some(r.expires_at.map_or(c, |e| e.min(c)));
        }
    }
    Ok(rows)
}

/// The scheduler's progress: `(scanned_until)`, locked for this transaction
/// (replicas take turns scanning); `None` on the very first scan (the row is
/// then created at `now`, so a new hub does not replay history).
pub async fn lock_scheduler(
    conn: &mut PgConnection,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Option<chrono::DateTime<chrono::Utc>>> {
    let row: Option<(chrono::DateTime<chrono::Utc>,)> =
        sqlx::query_as("select scanned_until from notify_scheduler for update")
            .fetch_optional(&mut *conn)
            .await?;
    if row.is_none() {
        sqlx::query(
            "insert into notify_scheduler (id, scanned_until, upcoming_until) values (true, $1, $1) \
             on conflict do nothing",
        )
        .bind(now)
        .execute(&mut *conn)
        .await?;
    }
    Ok(row.map(|r| r.0))
}

/// Records that the scheduler has looked up to `until`.
pub async fn scanned(conn: &mut PgConnection, until: chrono::DateTime<chrono::Utc>) -> Result<()> {
    sqlx::query("update notify_scheduler set scanned_until = greatest(scanned_until, $1), upcoming_until = greatest(upcoming_until, $1)")
        .bind(until)
        .execute(conn)
        .await?;
    Ok(())
}
