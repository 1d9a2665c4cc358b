//! Gate operations: create, read, replace (optimistic concurrency on the
//! version), delete, and preview of the schedule.

pub mod impact;

use chrono::{DateTime, Duration, Utc};
use fleetgate_policy::{ClusterScope, CompiledGate, Gate, Preview};

use super::fleet::applying::stored_gate;
use super::types::GateRecord;
use super::{Actor, Audit, Clusters, GateRef, Page, PageRequest, Role, Service, Written, to_json};
use crate::db::clusters::Scoped;
use crate::db::revision::Affected;
use crate::db::{clusters, gates, overrides};
use crate::{Error, Result};

/// Longest preview range.
pub const MAX_PREVIEW_DAYS: i64 = 366;
/// Preview range when `to` is absent.
pub const DEFAULT_PREVIEW_DAYS: i64 = 7;

/// Names of `clusters` in any of `scopes`.
pub(crate) fn clusters_in(clusters: &[Scoped], scopes: &[&ClusterScope]) -> Vec<String> {
    clusters
        .iter()
        .filter(|c| scopes.iter().any(|s| s.matches(&c.name, &c.labels)))
        .map(|c| c.name.clone())
        .collect()
}

/// Validates and compiles a gate (422 with the field path on failure).
pub fn compile(gate: &Gate) -> Result<CompiledGate> {
    gate.validate().map_err(Error::from_policy)?;
    gate.compile().map_err(Error::from_policy)
}

/// Logs the warnings a written gate carries (they are also in the response).
fn log_warnings(rec: &GateRecord) {
    for w in &rec.warnings {
        tracing::warn!(gate = %rec.name, field = %w.path, "{}", w.message);
    }
}

/// The manifest of a valid gate, as stored (422 with the field path if invalid).
fn valid_manifest(gate: &Gate) -> Result<serde_json::Value> {
    compile(gate)?;
    serde_json::to_value(gate).map_err(|e| Error::Internal(e.to_string()))
}

impl Service {
    /// Lists gates by name (only those in the actor's gate scope).
    pub async fn list_gates(&self, actor: &Actor, page: &PageRequest) -> Result<Page<GateRecord>> {
        actor.require(Role::Viewer)?;
        let visible = actor.read_scope();
        let limit = page.limit()?;
        let mut after: Option<String> = page.key()?;
        let batch = i64::from(limit) + 1;
        let mut conn = self.conn().await?;
        let mut kept = Vec::new();
        'scan: loop {
            let rows = gates::list(&mut conn, after.as_deref(), batch).await?;
            let last_batch = (rows.len() as i64) < batch;
            for r in rows {
                after = Some(r.name.clone());
                if visible
                    .as_ref()
                    .is_none_or(|v| v.gate(&r.name, &manifest_labels(&r.manifest)))
                {
                    kept.push(r);
                    if kept.len() > limit as usize {
                        break 'scan;
                    }
                }
            }
            if last_batch {
                break;
            }
        }
        Ok(super::page::from_rows(
            kept,
            limit,
            |r| r.name.clone(),
            Into::into,
        ))
    }

    /// One gate (403 outside the actor's gate scope).
    pub async fn get_gate(&self, actor: &Actor, name: &str) -> Result<GateRecord> {
        actor.require(Role::Viewer)?;
        let mut conn = self.conn().await?;
        let row = gates::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("gate", name))?;
        actor.require_visible_gate(name, &manifest_labels(&row.manifest))?;
        let mut rec: GateRecord = row.into();
        let rows =
            crate::db::calendar_feeds::for_gates(&mut conn, Some(&[name.to_string()])).await?;
        let now = self.now();
        rec.calendars = rows
            .iter()
            .map(|r| super::calendars::feeds::status(r, now))
            .collect();
        Ok(rec)
    }

    /// Creates a gate (admin); 409 if the name exists.
    pub async fn create_gate(
        &self,
        actor: &Actor,
        gate: Gate,
        reason: Option<&str>,
    ) -> Result<GateRecord> {
        actor.require(Role::Admin)?;
        crate::validate::optional_reason("reason", reason)?;
        self.store_gate(actor, &gate, Store::Create, reason).await
    }

    /// Replaces a gate (admin). With `if_match`, 409 unless the stored
    /// version equals it. The body's metadata.name must equal `name`.
    pub async fn replace_gate(
        &self,
        actor: &Actor,
        name: &str,
        gate: Gate,
        if_match: Option<i64>,
        reason: Option<&str>,
    ) -> Result<GateRecord> {
        actor.require(Role::Admin)?;
        crate::validate::optional_reason("reason", reason)?;
        if gate.name() != name {
            return Err(Error::invalid(
                "metadata.name",
                format!(
                    "'{}' does not match the gate '{name}' in the URL",
                    gate.name()
                ),
            ));
        }
        self.store_gate(actor, &gate, Store::Replace { if_match }, reason)
            .await
    }

    /// Writes a valid gate as `store` says, audited with the manifest before
    /// and after; the clusters in its scope (and, on replace, the old scope)
    /// get a new desired state.
    async fn store_gate(
        &self,
        actor: &Actor,
        gate: &Gate,
        store: Store,
        reason: Option<&str>,
    ) -> Result<GateRecord> {
        let manifest = &valid_manifest(gate)?;
        // A scoped admin writes only gates in its gate scope, and the gate
        // keeps the writer's cluster scope (checked again below against the
        // clusters it selects today, and enforced on clusters added later).
        let within = admin_within(actor, gate)?;
        let within = within.as_deref();
        let now = self.now();
        let name = gate.name();
        let (rec, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let (action, row, old) = match store {
                        Store::Create => {
                            let row = gates::insert(tx, name, manifest, within, now).await?;
                            ("gate.create", row, None)
                        }
                        Store::Replace { if_match } => {
                            let old = gates::get_for_update(tx, name)
                                .await?
                                .ok_or_else(|| Error::not_found("gate", name))?;
                            check_version(name, old.version, if_match)?;
                            let old_gate = stored_gate(&old.manifest)?;
                            admin_within(actor, &old_gate)?;
                            // As it was, for the notifications of what this write changes.
                            let old_feeds =
                                crate::db::calendar_feeds::occurrences_of(tx, name).await?;
                            let row = gates::update(tx, name, manifest, within, now).await?;
                            let old_within = old.writer_scope.map(|w| w.0);
                            (
                                "gate.replace",
                                row,
                                Some((old.manifest, old_gate, old_feeds, old_within)),
                            )
                        }
                    };
                    crate::db::calendar_feeds::sync(
                        tx,
                        name,
                        &super::calendars::feeds::feed_windows(gate),
                        now,
                    )
                    .await?;
                    let all = tx.scoped_clusters().await?;
                    if let Some(w) = within {
                        selects_only_within(gate, w, &all)?;
                    }
                    let mut scopes = vec![&gate.spec.clusters];
                    scopes.extend(old.as_ref().map(|(_, g, _, _)| &g.spec.clusters));
                    let affected = clusters_in(&all, &scopes);
                    let before = match &old {
                        Some((_, g, feeds, w)) => {
                            Some(notify_version(g, feeds, w.as_deref(), now)?)
                        }
                        None => None,
                    };
                    let feeds = crate::db::calendar_feeds::occurrences_of(tx, name).await?;
                    let after = notify_version(gate, &feeds, within, now)?;
                    // Version and instant: a gate deleted and created again starts at 1.
                    let key = format!("manifest-v{}/{}", row.version, now.timestamp_micros());
                    let (before, after) = (before.as_ref(), Some(&after));
                    notify_state_changes(tx, name, &key, before, after, &all, now, actor).await?;
                    let rec = GateRecord::from(row);
                    let audit = Audit {
                        action,
                        target_kind: "gate",
                        target_name: rec.name.clone(),
                        before: old.map(|(manifest, ..)| {
                            super::calendars::feeds::manifest_for_audit(manifest)
                        }),
                        after: Some(super::calendars::feeds::manifest_for_audit(
                            rec.manifest.clone(),
                        )),
                        reason: reason.map(Into::into),
                    };
                    let affected = Affected::among(affected, all.len());
                    Ok(Written::changed(rec, audit, affected))
                })
            })
            .await?;
        log_warnings(&rec);
        Ok(rec)
    }

    /// Deletes a gate and its overrides (admin).
    pub async fn delete_gate(
        &self,
        actor: &Actor,
        name: &str,
        if_match: Option<i64>,
        reason: Option<&str>,
    ) -> Result<()> {
        actor.require(Role::Admin)?;
        crate::validate::optional_reason("reason", reason)?;
        let now = self.now();
        self.write(actor, now, |tx| {
            Box::pin(async move {
                let old = gates::get_for_update(tx, name)
                    .await?
                    .ok_or_else(|| Error::not_found("gate", name))?;
                check_version(name, old.version, if_match)?;
                let old_gate = stored_gate(&old.manifest)?;
                let all = tx.scoped_clusters().await?;
                if let Some(w) = admin_within(actor, &old_gate)? {
                    selects_only_within(&old_gate, &w, &all)?;
                }
                let feeds = crate::db::calendar_feeds::occurrences_of(tx, name).await?;
                let within = old.writer_scope.as_ref().map(|w| w.0.as_slice());
                let before = notify_version(&old_gate, &feeds, within, now)?;
                let key = format!("deleted-v{}/{}", old.version, now.timestamp_micros());
                notify_state_changes(tx, name, &key, Some(&before), None, &all, now, actor).await?;
                gates::delete(tx, name).await?;
                let affected = clusters_in(&all, &[&old_gate.spec.clusters]);
                let audit = Audit {
                    action: "gate.delete",
                    target_kind: "gate",
                    target_name: name.into(),
                    before: to_json(&GateRecord::from(old)).map(|r| {
                        super::calendars::feeds::manifest_for_audit(r["manifest"].clone())
                    }),
                    after: None,
                    reason: reason.map(Into::into),
                };
                let affected = Affected::among(affected, all.len());
                Ok(Written::changed((), audit, affected))
            })
        })
        .await?;
        Ok(())
    }

    /// The gate's transitions in `(from, to]` (default: now .. now+7d), in the
    /// CLI's JSON shape. Live overrides and fleet freezes count: with `cluster`,
    /// those applying to that cluster; without, those for the gate's whole scope.
    pub async fn preview_gate(
        &self,
        actor: &Actor,
        name: &str,
        from: Option<DateTime<Utc>>,
        to: Option<DateTime<Utc>>,
        cluster: Option<&str>,
    ) -> Result<Preview> {
        actor.require(Role::Viewer)?;
        let from = from.unwrap_or_else(|| self.now());
        for (field, t) in [("from", Some(from)), ("to", to)] {
            if t.is_some_and(|t| !plausible(t)) {
                return Err(Error::invalid(field, "must be between 1970 and 9999"));
            }
        }
        let to = to.unwrap_or(from + Duration::days(DEFAULT_PREVIEW_DAYS));
        if to <= from {
            return Err(Error::invalid("to", "must be after 'from'"));
        }
        if to - from > Duration::days(MAX_PREVIEW_DAYS) {
            return Err(Error::invalid(
                "to",
                format!("range longer than {MAX_PREVIEW_DAYS} days"),
            ));
        }
        let mut conn = self.conn().await?;
        let row = gates::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("gate", name))?;
        let gate = stored_gate(&row.manifest)?;
        actor.require_visible_gate(name, &gate.metadata.labels)?;
        let feeds = crate::db::calendar_feeds::occurrences_of(&mut conn, name).await?;
        let rows = overrides::live_for_gates(&mut conn, &[name.to_string()], self.now()).await?;
        let freezes = crate::db::freezes::live(&mut conn, self.now()).await?;
        let ovs = match cluster {
            // Without a cluster, the overrides and freezes every cluster of the gate gets.
            None => rows
                .iter()
                .filter(|r| r.clusters.is_none())
                .map(super::fleet::applying::to_policy)
                .chain(
                    freezes
                        .iter()
                        .filter(|f| f.clusters.is_none())
                        .map(super::freezes::scope::to_policy),
                )
                .collect(),
            Some(c) => {
                let c = clusters::get(&mut conn, c, self.now())
                    .await?
                    .ok_or_else(|| Error::not_found("cluster", c))?;
                actor.require_visible_cluster(&c.name, &c.labels)?;
                super::fleet::applying::applying(&gate, &c, &rows, &freezes)
            }
        };
        gate.preview_over(self.now(), from, to, feeds, &ovs)
            .map_err(Error::from_policy)
    }
}

/// The cluster scopes within which `actor` may write `gate` (none: all
/// clusters); 403 unless the actor holds admin for the gate (its name and
/// `metadata.labels`: a team cannot move a gate out of its own scope).
pub(crate) fn admin_within(actor: &Actor, gate: &Gate) -> Result<Option<Vec<ClusterScope>>> {
    let gate_ref = GateRef {
        name: gate.name(),
        labels: &gate.metadata.labels,
    };
    Ok(match actor.clusters_for(Role::Admin, gate_ref)? {
        Clusters::All => None,
        Clusters::Within(w) => Some(w.into_iter().cloned().collect()),
    })
}

/// 403 naming the first registered cluster `gate` selects outside `within`.
fn selects_only_within(gate: &Gate, within: &[ClusterScope], all: &[Scoped]) -> Result<()> {
    let outside = all.iter().find(|c| {
        gate.spec.clusters.matches(&c.name, &c.labels)
            && !within.iter().any(|w| w.matches(&c.name, &c.labels))
    });
    match outside {
        Some(c) => Err(Error::Forbidden(format!(
            "gate '{}' selects cluster '{}', which is outside your cluster scope",
            gate.name(),
            c.name
        ))),
        None => Ok(()),
    }
}

pub use crate::db::outbox::manifest_labels;

/// Instants a schedule can sensibly be evaluated at (also keeps date
/// arithmetic far from chrono's limits).
pub(crate) fn plausible(t: DateTime<Utc>) -> bool {
    (1970..=9999).contains(&chrono::Datelike::year(&t))
}

/// A gate version as the manifest-change notifications evaluate it.
fn notify_version<'a>(
    gate: &'a Gate,
    feeds: &[fleetgate_policy::FeedOccurrences],
    within: Option<&'a [ClusterScope]>,
    now: DateTime<Utc>,
) -> Result<crate::notify::manifest::Version<'a>> {
    Ok(crate::notify::manifest::Version {
        gate,
        compiled: super::calendars::feeds::compile_at(gate, feeds, now)
            .map_err(Error::from_policy)?,
        within,
    })
}

/// Enqueues the `gate.opened`/`gate.closed` of a manifest write (before and
/// after it, with the gate's live overrides and the freezes), in the write's transaction.
#[allow(clippy::too_many_arguments)]
async fn notify_state_changes(
    tx: &mut sqlx::PgConnection,
    name: &str,
    key: &str,
    before: Option<&crate::notify::manifest::Version<'_>>,
    after: Option<&crate::notify::manifest::Version<'_>>,
    all: &[Scoped],
    now: DateTime<Utc>,
    actor: &Actor,
) -> Result<()> {
    let live = overrides::live_for_gates(tx, &[name.to_string()], now).await?;
    let freezes = crate::db::freezes::live(tx, now).await?;
    let changes = crate::notify::manifest::state_changes(
        name,
        before,
        after,
        all,
        &live,
        &freezes,
        now,
        &actor.name,
    );
    crate::notify::enqueue_transitions(tx, after.map(|v| v.gate), changes, Some(key)).await?;
    Ok(())
}

/// How a gate is stored.
#[derive(Debug, Clone, Copy)]
enum Store {
    /// A new gate; 409 if the name exists.
    Create,
    /// Over the stored one; with `if_match`, 409 unless its version equals it.
    Replace { if_match: Option<i64> },
}

fn check_version(name: &str, stored: i64, if_match: Option<i64>) -> Result<()> {
    match if_match {
        Some(v) if v != stored => Err(Error::Conflict {
            field: Some("If-Match".into()),
            message: format!("gate '{name}' is at version {stored}, not {v}; reload and retry"),
        }),
        _ => Ok(()),
    }
}
