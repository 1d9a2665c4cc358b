//! The `rollouts` and `rollout_clusters` tables (migration 0008): each gate opening's
//! rollout state machine and its clusters' waves and releases, plus the reads the driver
//! judges health from.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::Rollout;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

use crate::Result;

/// One governed object as the hub stored it from the spoke's last report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectHealth {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    /// The Ready condition's status: `True`, `False`, `Unknown`; `None`: not reported (a
    /// spoke that predates readiness reports, or no condition yet).
    pub ready: Option<String>,
    pub ready_message: Option<String>,
    pub stalled: bool,
    pub generation: Option<i64>,
    pub observed_generation: Option<i64>,
    pub last_applied_revision: Option<String>,
    pub newest_source_revision: Option<String>,
    /// The snapshot revision the spoke enforced when it reported this; `None` from spokes
    /// that predate it (then `reported_at` fences).
    pub report_revision: Option<i64>,
    /// When the hub received the report.
    pub reported_at: DateTime<Utc>,
    /// Since when it has been failing (Ready=False or Stalled) without a break, as the hub
    /// received its reports; `None` while it is not failing.
    pub failing_since: Option<DateTime<Utc>>,
}

/// One rollout.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct RolloutRow {
    pub id: Uuid,
    pub gate: String,
    pub opening_at: DateTime<Utc>,
    pub spec: Json<Rollout>,
    pub state: String,
    pub wave: i32,
    pub wave_released_at: Option<DateTime<Utc>>,
    pub health_since: Option<DateTime<Utc>>,
    pub healthy_at: Option<DateTime<Utc>>,
    pub approved_wave: Option<i32>,
    pub detail: Option<String>,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
}

/// One cluster of a rollout.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MemberRow {
    pub cluster: String,
    pub wave: i32,
    pub late: bool,
    pub released_at: Option<DateTime<Utc>>,
    pub opening_at: Option<DateTime<Utc>>,
    pub release_revision: Option<i64>,
    pub bypass: bool,
    /// Its place in the release order (the planned order of the waves' clusters: sortLabel,
    /// then name; late joiners after them).
    pub position: i32,
    /// When its wave failed on it (the driver's verdict; cleared by a resume).
    pub failed_at: Option<DateTime<Utc>>,
    /// Why: the failing object and its Ready message.
    pub failure: Option<String>,
}

const COLUMNS: &str = "id, gate, opening_at, spec, state, wave, wave_released_at, \
                       health_since, healthy_at, approved_wave, detail, started_at, ended_at";
const MEMBER_COLUMNS: &str = "cluster, wave, late, released_at, opening_at, release_revision, bypass, position, \
     failed_at, failure";

/// Takes the driver's lock on `gate` for the rest of the transaction, unless another
/// transaction (a replica's driver, an operator's command) holds it: false then.
pub async fn try_lock_gate(conn: &mut PgConnection, gate: &str) -> Result<bool> {
    let (got,): (bool,) = sqlx::query_as(
        "select pg_try_advisory_xact_lock(hashtextextended('fleetgate.rollout:' || $1, 0))",
    )
    .bind(gate)
    .fetch_one(conn)
    .await?;
    Ok(got)
}

/// Waits for the driver's lock on `gate` (operators' commands).
pub async fn lock_gate(conn: &mut PgConnection, gate: &str) -> Result<()> {
    sqlx::query("select pg_advisory_xact_lock(hashtextextended('fleetgate.rollout:' || $1, 0))")
        .bind(gate)
        .execute(conn)
        .await?;
    Ok(())
}

/// `gate`'s current rollout (not ended) with its clusters, by name.
pub async fn current(
    conn: &mut PgConnection,
    gate: &str,
) -> Result<Option<(RolloutRow, Vec<MemberRow>)>> {
    let row: Option<RolloutRow> = sqlx::query_as(sql!(
        "select {COLUMNS} from rollouts where gate = $1 and ended_at is null"
    ))
    .bind(gate)
    .fetch_optional(&mut *conn)
    .await?;
    with_members(conn, row).await
}

/// `row` (if any) with its members.
async fn with_members(
    conn: &mut PgConnection,
    row: Option<RolloutRow>,
) -> Result<Option<(RolloutRow, Vec<MemberRow>)>> {
    let Some(row) = row else { return Ok(None) };
    let members = members(conn, row.id).await?;
    Ok(Some((row, members)))
}

/// The newest rollout of `gate`, current or ended.
pub async fn latest(
    conn: &mut PgConnection,
    gate: &str,
) -> Result<Option<(RolloutRow, Vec<MemberRow>)>> {
    let row: Option<RolloutRow> = sqlx::query_as(sql!(
        "select {COLUMNS} from rollouts where gate = $1 \
         order by ended_at is null desc, started_at desc limit 1"
    ))
    .bind(gate)
    .fetch_optional(&mut *conn)
    .await?;
    with_members(conn, row).await
}

async fn members(conn: &mut PgConnection, id: Uuid) -> Result<Vec<MemberRow>> {
    let rows = sqlx::query_as(sql!(
        "select {MEMBER_COLUMNS} from rollout_clusters where rollout_id = $1 \
         order by wave, position, cluster"
    ))
    .bind(id)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// Inserts or updates `row`.
pub async fn save(conn: &mut PgConnection, row: &RolloutRow) -> Result<()> {
    sqlx::query(
        "insert into rollouts (id, gate, opening_at, spec, state, wave, wave_released_at, \
         health_since, healthy_at, approved_wave, detail, started_at, ended_at) \
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
         on conflict (id) do update set state = excluded.state, wave = excluded.wave, \
         wave_released_at = excluded.wave_released_at, health_since = excluded.health_since, \
         healthy_at = excluded.healthy_at, approved_wave = excluded.approved_wave, \
         detail = excluded.detail, ended_at = excluded.ended_at",
    )
    .bind(row.id)
    .bind(&row.gate)
    .bind(row.opening_at)
    .bind(&row.spec)
    .bind(&row.state)
    .bind(row.wave)
    .bind(row.wave_released_at)
    .bind(row.health_since)
    .bind(row.healthy_at)
    .bind(row.approved_wave)
    .bind(&row.detail)
    .bind(row.started_at)
    .bind(row.ended_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts or updates the clusters of rollout `id`.
pub async fn save_members(conn: &mut PgConnection, id: Uuid, members: &[&MemberRow]) -> Result<()> {
    for m in members {
        sqlx::query(
            "insert into rollout_clusters (rollout_id, cluster, wave, late, released_at, \
             opening_at, release_revision, bypass, position, failed_at, failure) \
             values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
             on conflict (rollout_id, cluster) do update set wave = excluded.wave, \
             late = excluded.late, released_at = excluded.released_at, \
             opening_at = excluded.opening_at, release_revision = excluded.release_revision, \
             bypass = excluded.bypass, position = excluded.position, \
             failed_at = excluded.failed_at, failure = excluded.failure",
        )
        .bind(id)
        .bind(&m.cluster)
        .bind(m.wave)
        .bind(m.late)
        .bind(m.released_at)
        .bind(m.opening_at)
        .bind(m.release_revision)
        .bind(m.bypass)
        .bind(m.position)
        .bind(m.failed_at)
        .bind(&m.failure)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// A release as a snapshot carries it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ReleaseRow {
    pub gate: String,
    pub cluster: String,
    pub rollout_id: Uuid,
    pub opening_at: DateTime<Utc>,
    pub wave: i32,
}

/// The releases of current rollouts for those of `names` (all clusters when `None`).
pub async fn releases(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<ReleaseRow>> {
    const SELECT: &str = "select r.gate, m.cluster, r.id as rollout_id, \
         coalesce(m.opening_at, r.opening_at) as opening_at, m.wave from rollout_clusters m \
         join rollouts r on r.id = m.rollout_id \
         where r.ended_at is null and m.released_at is not null";
    super::fetch_named(conn, SELECT, "and m.cluster = any($1)", "", names).await
}

/// A cluster of a current rollout not released yet: the wave it waits for.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WaitingRow {
    pub gate: String,
    pub cluster: String,
    pub rollout_id: Uuid,
    /// 0-based.
    pub wave: i32,
    /// `spec.rollout.waves[wave].name` (none for unnamed and late waves).
    pub wave_name: Option<String>,
    /// The rollout's state (running, paused, halted, aborted, completed).
    pub state: String,
}

impl WaitingRow {
    /// The wave's name as every surface shows it (`wave-N`, 1-based, when unnamed).
    pub fn wave_name(&self) -> String {
        self.wave_name
            .clone()
            .unwrap_or_else(|| format!("wave-{}", self.wave + 1))
    }
}

/// The waves of the current rollouts' clusters not released yet, with the rollout's
/// state, by (gate, cluster): the views' "waiting for rollout wave N" and the snapshots'
/// `GateRule.waiting`.
pub async fn waiting(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<HashMap<(String, String), WaitingRow>> {
    const SELECT: &str = "select r.gate, m.cluster, r.id as rollout_id, m.wave, \
         r.spec->'waves'->m.wave->>'name' as wave_name, r.state from rollout_clusters m \
         join rollouts r on r.id = m.rollout_id \
         where r.ended_at is null and m.released_at is null";
    let rows: Vec<WaitingRow> =
        super::fetch_named(conn, SELECT, "and m.cluster = any($1)", "", names).await?;
    Ok(rows
        .into_iter()
        .map(|w| ((w.gate.clone(), w.cluster.clone()), w))
        .collect())
}

/// A cluster whose wave failed in a current rollout (`rollout_clusters.failed_at`).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct FailureRow {
    pub gate: String,
    pub cluster: String,
    pub rollout_id: Uuid,
    /// 0-based.
    pub wave: i32,
    /// `spec.rollout.waves[wave].name` (none for unnamed and late waves).
    pub wave_name: Option<String>,
    /// The rollout's state (halted until an operator resumes it).
    pub state: String,
    pub failed_at: DateTime<Utc>,
    pub failure: String,
}

/// The failed clusters of current rollouts, by (gate, cluster): what the fleet table, the
/// grid and the cluster status mark (the driver's verdict at the failure).
pub async fn failures(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<HashMap<(String, String), FailureRow>> {
    const SELECT: &str = "select r.gate, m.cluster, r.id as rollout_id, m.wave, \
         r.spec->'waves'->m.wave->>'name' as wave_name, r.state, m.failed_at, \
         coalesce(m.failure, '') as failure from rollout_clusters m \
         join rollouts r on r.id = m.rollout_id \
         where r.ended_at is null and m.failed_at is not null";
    let rows: Vec<FailureRow> =
        super::fetch_named(conn, SELECT, "and m.cluster = any($1)", "", names).await?;
    Ok(rows
        .into_iter()
        .map(|f| ((f.gate.clone(), f.cluster.clone()), f))
        .collect())
}

/// What the spokes of `clusters` last reported about the objects `gate` governs there
/// (ignored ones left out), by cluster.
pub async fn object_health(
    conn: &mut PgConnection,
    gate: &str,
    clusters: &[String],
) -> Result<HashMap<String, Vec<ObjectHealth>>> {
    #[derive(sqlx::FromRow)]
    struct Row {
        cluster: String,
        kind: String,
        namespace: String,
        name: String,
        ready: Option<String>,
        ready_message: Option<String>,
        stalled: bool,
        generation: Option<i64>,
        observed_generation: Option<i64>,
        last_applied_revision: Option<String>,
        newest_source_revision: Option<String>,
        report_revision: Option<i64>,
        reported_at: DateTime<Utc>,
        failing_since: Option<DateTime<Utc>>,
    }
    // The report fence is the cluster's: an unchanged report at a newer snapshot revision
    // updates `cluster_connections.report_revision` and no object row (db/reports.rs).
    let rows: Vec<Row> = sqlx::query_as(
        "select o.cluster, o.kind, o.namespace, o.name, o.ready, o.ready_message, o.stalled, \
         o.generation, o.observed_generation, o.last_applied_revision, \
         o.newest_source_revision, k.report_revision, \
         greatest(o.reported_at, k.reported_at) as reported_at, o.failing_since \
         from object_status o left join cluster_connections k on k.cluster = o.cluster \
         where o.cluster = any($1) and $2 = any(o.gates) and not o.ignored \
         order by o.cluster, o.kind, o.namespace, o.name",
    )
    .bind(clusters)
    .bind(gate)
    .fetch_all(conn)
    .await?;
    let mut by_cluster: HashMap<String, Vec<ObjectHealth>> = HashMap::new();
    for r in rows {
        by_cluster.entry(r.cluster).or_default().push(ObjectHealth {
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
            ready: r.ready,
            ready_message: r.ready_message,
            stalled: r.stalled,
            generation: r.generation,
            observed_generation: r.observed_generation,
            last_applied_revision: r.last_applied_revision,
            newest_source_revision: r.newest_source_revision,
            report_revision: r.report_revision,
            reported_at: r.reported_at,
            failing_since: r.failing_since,
        });
    }
    Ok(by_cluster)
}

/// Gates the driver steps: those with `spec.rollout`, and those with a current rollout
/// (whose `spec.rollout` may have just been removed).
pub async fn gates_to_drive(conn: &mut PgConnection) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "select name from gates where manifest->'spec' ? 'rollout' \
         union select gate from rollouts where ended_at is null order by 1",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

/// The newest rollout of a gate (current or ended) as the change streams compare it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct RolloutSummaryRow {
    pub gate: String,
    pub id: Uuid,
    pub state: String,
    /// The current wave, 0-based.
    pub wave: i32,
    /// Waves of the spec plus late ones.
    pub waves: i32,
    pub wave_released: bool,
    pub healthy: bool,
    /// Clusters released / in the rollout.
    pub released: i64,
    pub clusters: i64,
    pub detail: Option<String>,
}

/// The newest rollout of every gate (a deleted gate's rollouts go with it).
pub async fn summaries(conn: &mut PgConnection) -> Result<Vec<RolloutSummaryRow>> {
    let rows = sqlx::query_as(
        "select distinct on (r.gate) r.gate, r.id, r.state, r.wave, \
         greatest(jsonb_array_length(coalesce(r.spec->'waves', '[]'::jsonb)), \
                  coalesce(m.last_wave + 1, 0))::int4 as waves, \
         r.wave_released_at is not null as wave_released, r.healthy_at is not null as healthy, \
         coalesce(m.released, 0) as released, coalesce(m.clusters, 0) as clusters, r.detail \
         from rollouts r \
         left join lateral (select count(*) filter (where released_at is not null) as released, \
                count(*) as clusters, max(wave) as last_wave \
                from rollout_clusters where rollout_id = r.id) m on true \
         order by r.gate, r.ended_at is null desc, r.started_at desc",
    )
    .fetch_all(conn)
    .await?;
    Ok(rows)
}
