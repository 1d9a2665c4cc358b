//! The notification outbox: events inserted in the caller's transaction
//! (idempotent by dedup key, numbered per subject) and routed at once to the
//! subscriptions that want them, one delivery row each.

use std::collections::{HashMap, HashSet};

use sqlx::PgConnection;

use crate::Result;
use crate::clusters::Scoped;

/// Inserts `ev` unless an event with its dedup key exists, numbers it in its
/// subject's sequence and creates its deliveries. `Some(id)` when inserted.
pub async fn enqueue(conn: &mut PgConnection, ev: &NewEvent) -> Result<Option<i64>> {
    enqueue_among(conn, ev, None).await
}

/// [`enqueue`] by a write that has already read every registered cluster's name and
/// labels in its transaction (`known`, the write's copy): routing to subscriptions with
/// cluster selectors looks the event's clusters up there instead of reading their labels
/// again — for an edge on every cluster of a large fleet, a read of the whole fleet.
pub async fn enqueue_among(
    conn: &mut PgConnection,
    ev: &NewEvent,
    known: Option<&[Scoped]>,
) -> Result<Option<i64>> {
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
    route(conn, id, ev, known).await?;
    Ok(Some(id))
}

/// The registered clusters by name.
type Labelled<'a> = HashMap<&'a str, &'a Scoped>;

#[derive(sqlx::FromRow)]
struct Route {
    id: uuid::Uuid,
    event_types: Vec<String>,
    gates: Vec<String>,
    #[sqlx(json(nullable))]
    clusters: Option<fleetgate_policy::ClusterScope>,
    per_cluster: bool,
    /// The subscriber's access scopes (none: unscoped).
    #[sqlx(json(nullable))]
    owner_scope: Option<Vec<fleetgate_api_types::AccessScope>>,
}

/// One delivery per subscription that selects `ev` (per cluster for
/// per-cluster subscriptions).
async fn route(
    conn: &mut PgConnection,
    event_id: i64,
    ev: &NewEvent,
    known: Option<&[Scoped]>,
) -> Result<()> {
    let routes: Vec<Route> = sqlx::query_as(
        "select id, event_types, gates, clusters, per_cluster, owner_scope from webhooks \
         where enabled",
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
    let scoped = wanted.iter().any(|r| r.owner_scope.is_some());
    let needed = (scoped || wanted.iter().any(|r| r.clusters.is_some())) && !ev.clusters.is_empty();
    // Only the event's clusters: what the routes are matched on, not the fleet (unless the
    // write already holds every cluster: then those of them the event names).
    let registered: Option<Vec<Scoped>> = if needed && known.is_none() {
        Some(crate::clusters::scoped_named(conn, &ev.clusters).await?)
    } else {
        None
    };
    // By name: an event naming every cluster of a large fleet looks each one up once.
    let labelled: Option<Labelled<'_>> = match (&registered, known) {
        (Some(read), _) => Some(read.iter().map(|c| (c.name.as_str(), c)).collect()),
        (None, Some(all)) if needed => {
            let named: HashSet<&str> = ev.clusters.iter().map(String::as_str).collect();
            Some(
                all.iter()
                    .filter(|c| named.contains(c.name.as_str()))
                    .map(|c| (c.name.as_str(), c))
                    .collect(),
            )
        }
        _ => None,
    };
    let gate_labels = match (&ev.gate, scoped) {
        (Some(g), true) => gate_labels(conn, g).await?,
        _ => Default::default(),
    };
    let (mut hooks, mut clusters, mut kept, mut ids) = (vec![], vec![], vec![], vec![]);
    for r in wanted {
        let in_scope = match &r.owner_scope {
            None => None,
            Some(scopes) => match in_scope(scopes, ev, &gate_labels, labelled.as_ref()) {
                None => continue,
                Some(kept) => kept,
            },
        };
        let matched: Option<Vec<String>> = match (&r.clusters, &labelled) {
            (Some(scope), Some(all)) => Some(
                ev.clusters
                    .iter()
                    .filter(|c| {
                        all.get(c.as_str()).map_or_else(
                            || scope.names.contains(c),
                            |s| scope.matches(&s.name, &s.labels),
                        )
                    })
                    .cloned()
                    .collect(),
            ),
            _ => None,
        };
        let matched = match (matched, in_scope) {
            (Some(m), Some(s)) => {
                let s: HashSet<&str> = s.iter().map(String::as_str).collect();
                Some(m.into_iter().filter(|c| s.contains(c.as_str())).collect())
            }
            (m, None) => m,
            (None, s) => s,
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

/// `gate`'s `metadata.labels` (empty if it no longer exists).
async fn gate_labels(
    conn: &mut PgConnection,
    gate: &str,
) -> Result<std::collections::BTreeMap<String, String>> {
    let row: Option<(serde_json::Value,)> =
        sqlx::query_as("select manifest from gates where name = $1")
            .bind(gate)
            .fetch_optional(conn)
            .await?;
    Ok(row.map(|(m,)| manifest_labels(&m)).unwrap_or_default())
}

/// What of `ev` a subscriber with `scopes` may see: `None` if nothing (its
/// gate is outside them, or none of its clusters is inside), else the
/// event's clusters inside them (with its gate: where one scope holds both;
/// `Some(None)` for an event that names no cluster).
fn in_scope(
    scopes: &[fleetgate_api_types::AccessScope],
    ev: &NewEvent,
    gate_labels: &std::collections::BTreeMap<String, String>,
    labelled: Option<&Labelled<'_>>,
) -> Option<Option<Vec<String>>> {
    let gate_ok = |s: &fleetgate_api_types::AccessScope| {
        ev.gate.as_ref().is_none_or(|g| s.gate(g, gate_labels))
    };
    let seeing: Vec<&fleetgate_api_types::AccessScope> =
        scopes.iter().filter(|s| gate_ok(s)).collect();
    if seeing.is_empty() {
        return None;
    }
    let empty = std::collections::BTreeMap::new();
    let kept: Vec<String> = ev
        .clusters
        .iter()
        .filter(|c| {
            let labels = labelled
                .and_then(|all| all.get(c.as_str()))
                .map_or(&empty, |s| &s.labels);
            seeing.iter().any(|s| s.cluster(c, labels))
        })
        .cloned()
        .collect();
    match (ev.clusters.is_empty(), kept.is_empty()) {
        (true, _) => Some(None),
        (false, false) => Some(Some(kept)),
        (false, true) => None,
    }
}

/// Overrides that may change some gate's state after `from`: not cancelled
/// nor expired by then, started by `to`. A cancelled one ends at its
/// cancellation (its `expires_at` is moved there).
pub async fn overrides_since(
    conn: &mut PgConnection,
    from: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<crate::overrides::OverrideRecord>> {
    let mut rows: Vec<crate::overrides::OverrideRecord> = sqlx::query_as(sql!(
        "select {} from overrides where (cancelled_at is null or cancelled_at > $1) \
         and (expires_at is null or expires_at > $1) and (cancelled_at is null or cancelled_at > starts_at) \
         order by created_at, id",
        crate::overrides::COLUMNS
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

/// A cluster's liveness as the spoke notifications see it.
#[derive(Debug, sqlx::FromRow)]
pub struct SpokeLiveness {
    pub cluster: String,
    recorded_open: bool,
    pub last_seen_at: Option<chrono::DateTime<chrono::Utc>>,
    lease_ttl_ms: Option<i64>,
    /// Last seen before the outage announced (none announced: `None`).
    pub down_since: Option<chrono::DateTime<chrono::Utc>>,
}

impl SpokeLiveness {
    /// Whether the spoke is connected at `now` ([`crate::liveness`]).
    pub fn connected_at(&self, now: chrono::DateTime<chrono::Utc>) -> bool {
        crate::liveness::is_connected(
            self.recorded_open,
            self.last_seen_at,
            self.lease_ttl_ms,
            now,
        )
    }
}

/// The clusters a spoke scan must look at: those with an announced outage
/// and those not seen since `seen_before` (a connected spoke's replica
/// renews its lease every few seconds, so connected clusters are not read).
pub async fn spoke_liveness(
    conn: &mut PgConnection,
    seen_before: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<SpokeLiveness>> {
    Ok(sqlx::query_as(
        "select c.name as cluster, coalesce(k.connected, false) as recorded_open, \
           case when k.connected then greatest(k.last_seen_at, l.heartbeat_at) \
             else k.last_seen_at end as last_seen_at, \
           case when k.connected then \
             (extract(epoch from l.expires_at - l.heartbeat_at) * 1000)::bigint end as lease_ttl_ms, \
           d.since as down_since \
         from clusters c \
         left join cluster_connections k on k.cluster = c.name \
         left join replica_leases l on l.replica = k.connected_replica \
         left join notify_spokes_down d on d.cluster = c.name \
         where d.cluster is not null \
            or (case when k.connected then greatest(k.last_seen_at, l.heartbeat_at) \
                  else k.last_seen_at end) < $1 \
         order by c.name",
    )
    .bind(seen_before)
    .fetch_all(conn)
    .await?)
}

/// Records that `cluster`'s outage (last seen `since`) was announced.
pub async fn spoke_down(
    conn: &mut PgConnection,
    cluster: &str,
    since: chrono::DateTime<chrono::Utc>,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<()> {
    sqlx::query(
        "insert into notify_spokes_down (cluster, since, notified_at) values ($1, $2, $3) \
         on conflict (cluster) do nothing",
    )
    .bind(cluster)
    .bind(since)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Records that `cluster`'s spoke is back.
pub async fn spoke_up(conn: &mut PgConnection, cluster: &str) -> Result<()> {
    sqlx::query("delete from notify_spokes_down where cluster = $1")
        .bind(cluster)
        .execute(conn)
        .await?;
    Ok(())
}

/// The clusters `gate`'s current rollout released before `at`: those a
/// rollout gate's rules can open or close (the others wait for their wave).
pub async fn released_before(
    conn: &mut PgConnection,
    gate: &str,
    at: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "select m.cluster from rollout_clusters m join rollouts r on r.id = m.rollout_id \
         where r.gate = $1 and r.ended_at is null and m.released_at < $2 order by m.cluster",
    )
    .bind(gate)
    .bind(at)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(c,)| c).collect())
}

/// Whether `pattern` (a type, `family.*` or `*`) selects `event_type`.
pub fn type_matches(pattern: &str, event_type: &str) -> bool {
    pattern == "*"
        || pattern == event_type
        || pattern
            .strip_suffix(".*")
            .is_some_and(|family| event_type.split_once('.').is_some_and(|(f, _)| f == family))
}

/// An event to enqueue.
#[derive(Debug, Clone)]
pub struct NewEvent {
    /// One of [`EVENT_TYPES`].
    pub event_type: String,
    /// What the event is about: `gate/<name>`, `cluster/<name>`,
    /// `override/<id>`, `rollout/<gate>`; each subject has its own sequence.
    pub subject: String,
    /// Events with the same key are one event, however many replicas (or
    /// writes) enqueue it: the first wins. `None` for always-new events.
    pub dedup_key: Option<String>,
    /// When it happened (a window edge: the edge's instant).
    pub occurred_at: chrono::DateTime<chrono::Utc>,
    /// The gate concerned, for subscriptions' gate filters.
    pub gate: Option<String>,
    /// The clusters concerned, for cluster filters and per-cluster delivery.
    pub clusters: Vec<String>,
    /// The event's own fields (camelCase JSON object): the `data` of the message.
    pub data: serde_json::Value,
}

/// A stored manifest's `metadata.labels` (what gate selectors match).
pub fn manifest_labels(manifest: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    manifest
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| serde_json::from_value(l.clone()).ok())
        .unwrap_or_default()
}
