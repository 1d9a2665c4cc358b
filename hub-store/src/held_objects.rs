//! `held_objects`: the objects inside Kustomizations that `holdObjects` gates
//! select, as each spoke reports them (written only by report ingestion through
//! [`super::reports::write_report`], read by the status views).

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::Result;

/// One object a Kustomization applied that a holdObjects gate selects, as its spoke
/// reports it, and that object as the views show it (shared with REST clients).
pub use fleetgate_api_types::{HeldObject, HeldObjectStatus};

/// Per cluster, what the fleet views count of its held objects.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct HeldCounts {
    pub cluster: String,
    /// Held by fleetgate.
    pub held: i64,
    /// Held by a person's own mark.
    pub by_person: i64,
    /// Held by fleetgate while the Kustomization applied a newer revision.
    pub waiting: i64,
    /// Selected by a gate, but the spoke may not hold their kind (HoldNotPermitted).
    pub not_permitted: i64,
    /// Closed warn-mode gates would hold them if enforced.
    pub would_hold: i64,
    /// Of those, whose Kustomization applied a newer revision since.
    pub would_hold_waiting: i64,
    /// Changes whenever the held set does (which objects, by which gates).
    pub digest: String,
}

/// Replaces `cluster`'s held objects with `objects` (unique by group, kind,
/// namespace, name), reported at `at`. The caller holds the cluster's
/// key-share lock (see `write_report`).
pub async fn replace(
    conn: &mut PgConnection,
    cluster: &str,
    objects: &[HeldObject],
    at: DateTime<Utc>,
) -> Result<()> {
    let json = serde_json::to_value(objects)
        .map_err(|e| crate::Error::Internal(format!("encoding held objects: {e}")))?;
    sqlx::query(
        r#"delete from held_objects h where h.cluster = $1 and not exists (
             select 1 from jsonb_to_recordset($2) as r("group" text, kind text, namespace text,
               name text)
             where r."group" = h.api_group and r.kind = h.kind and r.namespace = h.namespace
               and r.name = h.name)"#,
    )
    .bind(cluster)
    .bind(&json)
    .execute(&mut *conn)
    .await?;
    if objects.is_empty() {
        return Ok(());
    }
    // Only held objects whose content differs from their stored row are
    // written (as in `reports::write_report_diff`); the recordset's column
    // names are the objects' JSON (camelCase) names.
    sqlx::query(
        r#"with r as (
           select r."group" as api_group, r.kind, r.namespace, r.name,
             r."kustomizationNamespace" as kustomization_namespace,
             r."kustomizationName" as kustomization_name,
             array(select jsonb_array_elements_text(r.gates)) as gates,
             array(select jsonb_array_elements_text(r."heldBy")) as held_by,
             r."heldByPerson" as held_by_person, r."heldSinceRevision" as held_since_revision,
             r."heldSince" as held_since, r."newerRevisionApplied" as newer_revision_applied,
             coalesce(r."notPermitted", false) as not_permitted,
             array(select jsonb_array_elements_text(coalesce(r."wouldHoldBy", '[]')))
               as would_hold_by,
             r."wouldHoldSinceRevision" as would_hold_since_revision,
             coalesce(r."wouldHoldNewerRevision", false) as would_hold_newer_revision
           from jsonb_to_recordset($2) as r("group" text, kind text, namespace text, name text,
             "kustomizationNamespace" text, "kustomizationName" text, gates jsonb, "heldBy" jsonb,
             "heldByPerson" bool, "heldSinceRevision" text, "heldSince" timestamptz,
             "newerRevisionApplied" bool, "notPermitted" bool, "wouldHoldBy" jsonb,
             "wouldHoldSinceRevision" text, "wouldHoldNewerRevision" bool))
         insert into held_objects (cluster, api_group, kind, namespace, name,
           kustomization_namespace, kustomization_name, gates, held_by, held_by_person,
           held_since_revision, held_since, newer_revision_applied, not_permitted,
           would_hold_by, would_hold_since_revision, would_hold_newer_revision, reported_at)
         select $1, r.api_group, r.kind, r.namespace, r.name, r.kustomization_namespace,
           r.kustomization_name, r.gates, r.held_by, r.held_by_person, r.held_since_revision,
           r.held_since, r.newer_revision_applied, r.not_permitted, r.would_hold_by,
           r.would_hold_since_revision, r.would_hold_newer_revision, $3
         from r
         where not exists (
           select 1 from held_objects h
           where h.cluster = $1 and h.api_group = r.api_group and h.kind = r.kind
             and h.namespace = r.namespace and h.name = r.name
             and (h.kustomization_namespace, h.kustomization_name, h.gates, h.held_by,
                  h.held_by_person, h.held_since_revision, h.held_since,
                  h.newer_revision_applied, h.not_permitted, h.would_hold_by,
                  h.would_hold_since_revision, h.would_hold_newer_revision)
             is not distinct from
                 (r.kustomization_namespace, r.kustomization_name, r.gates, r.held_by,
                  r.held_by_person, r.held_since_revision, r.held_since,
                  r.newer_revision_applied, r.not_permitted, r.would_hold_by,
                  r.would_hold_since_revision, r.would_hold_newer_revision))
         on conflict (cluster, api_group, kind, namespace, name) do update set
           kustomization_namespace = excluded.kustomization_namespace,
           kustomization_name = excluded.kustomization_name, gates = excluded.gates,
           held_by = excluded.held_by, held_by_person = excluded.held_by_person,
           held_since_revision = excluded.held_since_revision,
           held_since = excluded.held_since,
           newer_revision_applied = excluded.newer_revision_applied,
           not_permitted = excluded.not_permitted,
           would_hold_by = excluded.would_hold_by,
           would_hold_since_revision = excluded.would_hold_since_revision,
           would_hold_newer_revision = excluded.would_hold_newer_revision,
           reported_at = excluded.reported_at"#,
    )
    .bind(cluster)
    .bind(&json)
    .bind(at)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Every reported held object of `cluster`: held ones first, then by
/// Kustomization, namespace, name, kind.
pub async fn for_cluster(conn: &mut PgConnection, cluster: &str) -> Result<Vec<HeldObjectStatus>> {
    let rows = sqlx::query_as(
        // Unchanged reports write nothing; the times are as in
        // `status::for_cluster`.
        "select h.api_group, h.kind, h.namespace, h.name, h.kustomization_namespace, \
         h.kustomization_name, h.gates, h.held_by, h.held_by_person, h.held_since_revision, \
         h.held_since, h.newer_revision_applied, h.not_permitted, h.would_hold_by, \
         h.would_hold_since_revision, h.would_hold_newer_revision, \
         (cardinality(h.held_by) > 0 or h.held_by_person) as held, \
         greatest(h.reported_at, k.reported_at, \
         case when k.connected then l.heartbeat_at end) as reported_at \
         from held_objects h left join cluster_connections k on k.cluster = h.cluster \
         left join replica_leases l on l.replica = k.connected_replica \
         where h.cluster = $1 \
         order by held desc, h.not_permitted desc, h.kustomization_namespace, h.kustomization_name, h.namespace, \
         h.name, h.kind, h.api_group",
    )
    .bind(cluster)
    .fetch_all(conn)
    .await?;
    Ok(rows)
}

/// [`HeldCounts`] of every cluster with reported held objects.
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn counts_by_cluster_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<HeldCounts>> {
    crate::fetch_named(
        conn,
        "select cluster, \
         count(*) filter (where cardinality(held_by) > 0) as held, \
         count(*) filter (where held_by_person) as by_person, \
         count(*) filter (where cardinality(held_by) > 0 and newer_revision_applied) as waiting, \
         count(*) filter (where not_permitted) as not_permitted, \
         count(*) filter (where cardinality(would_hold_by) > 0) as would_hold, \
         count(*) filter (where would_hold_newer_revision) as would_hold_waiting, \
         md5(coalesce(string_agg(api_group || '/' || kind || '/' || namespace || '/' || name \
           || '=' || array_to_string(held_by, ',') || case when held_by_person then '+p' else '' end \
           || case when not_permitted then '!' || array_to_string(gates, ',') else '' end, \
           ';' order by api_group, kind, namespace, name) \
           filter (where cardinality(held_by) > 0 or held_by_person or not_permitted), '')) as digest \
         from held_objects",
        "where cluster = any($1)",
        "group by cluster",
        names,
    )
    .await
}

/// Objects closed warn-mode gates would hold per (cluster, gate).
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn would_hold_by_gate_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(String, String, i64)>> {
    crate::fetch_named(
        conn,
        "select cluster, gate, count(*) from held_objects, unnest(would_hold_by) as gate",
        "where cluster = any($1)",
        "group by cluster, gate",
        names,
    )
    .await
}

/// Objects held by fleetgate per (cluster, gate of its mark).
///
/// Only of the clusters in `names`, or of every cluster when it is `None`.
pub async fn held_by_gate_of(
    conn: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Vec<(String, String, i64)>> {
    crate::fetch_named(
        conn,
        "select cluster, gate, count(*) from held_objects, unnest(held_by) as gate",
        "where cluster = any($1)",
        "group by cluster, gate",
        names,
    )
    .await
}
