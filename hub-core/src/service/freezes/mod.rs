//! Fleet freezes (the emergency stop): freeze some or all clusters at once — every gate on
//! them closes above every override, local request and rollout, and their spokes hold every
//! Kustomization/HelmRelease no gate covers — and unfreeze. A freeze is a closing override of
//! the reserved gate `fleet-freeze` in the snapshots (`fleetgate_policy::FREEZE_GATE`), so
//! spokes enforce it offline and its expiry needs no job: an expired freeze is no longer
//! selected. Freezes made inside a cluster (its spoke's `fleetgate-freeze` ConfigMap) are
//! reported by the spoke and recorded here, audited like in-cluster requests.

pub mod scope;

use chrono::{DateTime, Duration, Utc};
use fleetgate_policy::ClusterScope;
use uuid::Uuid;

use crate::db::clusters::Scoped;
use crate::db::freezes;
use crate::db::revision::Affected;
use crate::service::types::OverrideClusters;
use crate::service::{Actor, Audit, ClusterRef, Role, Service, Written, to_json};
use crate::{Error, Result, validate};

pub use fleetgate_api_types::{FreezeRecord, FreezeRequest, UnfreezeRequest};
pub(crate) use scope::{as_ended_closes, keep_visible, to_policy};

/// Longest freeze with an end.
pub const MAX_FREEZE_DAYS: i64 = 366;

/// A freeze made inside a cluster, as its spoke reports it.
#[derive(Debug, Clone)]
pub struct LocalFreeze {
    /// When the ConfigMap was created: the freeze starts and is created then.
    pub requested_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub reason: String,
    pub requested_by: String,
}

/// The clusters of `all` a freeze with `scope` covers.
fn covered(all: &[Scoped], scope: Option<&ClusterScope>) -> Vec<String> {
    all.iter()
        .filter(|c| scope.is_none_or(|s| s.matches(&c.name, &c.labels)))
        .map(|c| c.name.clone())
        .collect()
}

/// Who may freeze and unfreeze: an admin, within its scope (a team's admin freezes its
/// team's clusters). An emergency stop of many clusters at once is an incident decision,
/// not an operator's everyday open/close; decided here for every surface.
const FREEZE_ROLE: Role = Role::Admin;

impl Service {
    /// Freezes the requested clusters, all by default (admin). A principal scoped to some
    /// clusters freezes those of them the request selects, named (clusters registered later
    /// are not covered); 403 when it selects none of them.
    pub async fn freeze(&self, actor: &Actor, req: FreezeRequest) -> Result<FreezeRecord> {
        actor.require(FREEZE_ROLE)?;
        validate::reason("reason", &req.reason)?;
        let now = self.now();
        let expires_at = match (&req.duration, req.until) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "until",
                    "give either for or until, not both",
                ));
            }
            (Some(d), None) => {
                let d = fleetgate_policy::parse_duration(d)
                    .map_err(|e| Error::invalid("for", e.message))?;
                if d <= Duration::zero() || d > Duration::days(MAX_FREEZE_DAYS) {
                    return Err(Error::invalid(
                        "for",
                        format!("must be positive and at most {MAX_FREEZE_DAYS} days"),
                    ));
                }
                Some(now + d)
            }
            (None, Some(u)) if u <= now => {
                return Err(Error::invalid("until", "must be in the future"));
            }
            (None, Some(u)) if u > now + Duration::days(MAX_FREEZE_DAYS) => {
                return Err(Error::invalid(
                    "until",
                    format!("more than {MAX_FREEZE_DAYS} days ahead"),
                ));
            }
            (None, until) => until,
        };
        let requested = match &req.clusters {
            None => None,
            Some(c) => Some(check_clusters(c)?),
        };
        let req = &req;
        let (rec, _) = self
            .write(actor, now, |tx| {
                let requested = requested.clone();
                Box::pin(async move {
                    let all = tx.scoped_clusters().await?;
                    for (i, n) in requested.iter().flat_map(|s| s.names.iter()).enumerate() {
                        if !all.iter().any(|c| &c.name == n) {
                            return Err(Error::invalid(
                                format!("clusters.names[{i}]"),
                                format!("cluster '{n}' is not registered"),
                            ));
                        }
                    }
                    let scope = narrow(actor, requested, &all)?;
                    let affected = covered(&all, scope.as_ref());
                    let rec = freezes::insert(
                        tx,
                        &FreezeRecord {
                            id: Uuid::new_v4(),
                            clusters: scope,
                            reason: req.reason.trim().to_string(),
                            starts_at: now,
                            expires_at,
                            actor: actor.name.clone(),
                            created_at: now,
                            requested_in: None,
                            requested_by: None,
                            ended_at: None,
                            ended_by: None,
                            end_reason: None,
                        },
                    )
                    .await?
                    .ok_or_else(|| Error::Internal("freeze id collision".into()))?;
                    crate::notify::enqueue(tx, &started_event(&rec, &affected)).await?;
                    let after = freezes::live(tx, now).await?;
                    let before: Vec<FreezeRecord> =
                        after.iter().filter(|f| f.id != rec.id).cloned().collect();
                    crate::notify::freezes::enqueue_edges(
                        tx,
                        &all,
                        &before,
                        &after,
                        now,
                        crate::notify::freezes::By::hub(&actor.name, now),
                    )
                    .await?;
                    let audit = Audit {
                        action: "freeze.start",
                        target_kind: "freeze",
                        target_name: rec.id.to_string(),
                        before: None,
                        after: to_json(&rec),
                        reason: Some(rec.reason.clone()),
                    };
                    let affected = if rec.clusters.is_none() {
                        Affected::All
                    } else {
                        Affected::among(affected, all.len())
                    };
                    Ok(Written::changed(rec, audit, affected))
                })
            })
            .await?;
        crate::metrics::freezes::started();
        Ok(rec)
    }

    /// Ends freezes in force (admin): the one named, or every one the actor may end —
    /// those covering only clusters in its scope. Freezes made inside a cluster end there
    /// (409 when named). 409 when there is nothing to end.
    pub async fn unfreeze(&self, actor: &Actor, req: UnfreezeRequest) -> Result<Vec<FreezeRecord>> {
        actor.require(FREEZE_ROLE)?;
        validate::reason("reason", &req.reason)?;
        let now = self.now();
        let req = &req;
        let (ended, _) = self
            .write(actor, now, |tx| {
                Box::pin(async move {
                    let all = tx.scoped_clusters().await?;
                    let live = freezes::live_for_update(tx, now).await?;
                    let mut chosen = Vec::new();
                    for f in live {
                        if req.id.is_some_and(|id| id != f.id) {
                            continue;
                        }
                        if let Some(cluster) = &f.requested_in {
                            if req.id.is_some() {
                                return Err(Error::conflict(format!(
                                    "freeze {} was made in cluster '{cluster}': end it there \
                                     (delete its fleetgate-freeze ConfigMap)",
                                    f.id
                                )));
                            }
                            continue;
                        }
                        let mine = covered(&all, f.clusters.as_ref()).iter().all(|n| {
                            all.iter().any(|c| {
                                &c.name == n
                                    && actor.covers_cluster(
                                        FREEZE_ROLE,
                                        ClusterRef {
                                            name: &c.name,
                                            labels: &c.labels,
                                        },
                                    )
                            })
                        }) && (f.clusters.is_some() || actor.is_unscoped(FREEZE_ROLE));
                        if !mine {
                            if req.id.is_some() {
                                return Err(Error::Forbidden(format!(
                                    "freeze {} covers clusters outside your scope",
                                    f.id
                                )));
                            }
                            continue;
                        }
                        chosen.push(f);
                    }
                    if chosen.is_empty() {
                        return Err(match req.id {
                            Some(id) => Error::conflict(format!("freeze {id} is not in force")),
                            None => Error::conflict("no freeze in force that you may end"),
                        });
                    }
                    let before = freezes::live(tx, now).await?;
                    let mut ended = Vec::new();
                    let mut affected: Vec<String> = Vec::new();
                    let mut everywhere = false;
                    for f in &chosen {
                        let row =
                            freezes::end(tx, f.id, now, &actor.name, req.reason.trim()).await?;
                        let clusters = covered(&all, row.clusters.as_ref());
                        everywhere |= row.clusters.is_none();
                        crate::notify::enqueue(tx, &ended_event(&row, &clusters)).await?;
                        affected.extend(clusters);
                        ended.push(row);
                    }
                    let after: Vec<FreezeRecord> = before
                        .iter()
                        .filter(|f| !ended.iter().any(|e: &FreezeRecord| e.id == f.id))
                        .cloned()
                        .collect();
                    crate::notify::freezes::enqueue_edges(
                        tx,
                        &all,
                        &before,
                        &after,
                        now,
                        crate::notify::freezes::By::hub(&actor.name, now),
                    )
                    .await?;
                    affected.sort();
                    affected.dedup();
                    let audit = Audit {
                        action: "freeze.end",
                        target_kind: "freeze",
                        target_name: ended
                            .iter()
                            .map(|f| f.id.to_string())
                            .collect::<Vec<_>>()
                            .join(","),
                        before: to_json(&chosen),
                        after: to_json(&ended),
                        reason: Some(req.reason.trim().to_string()),
                    };
                    let affected = if everywhere {
                        Affected::All
                    } else {
                        Affected::among(affected, all.len())
                    };
                    Ok(Written::changed(ended, audit, affected))
                })
            })
            .await?;
        crate::metrics::freezes::ended(ended.len());
        Ok(ended)
    }

    /// Freezes, newest first (viewer): those in force or starting later unless `all`. A
    /// viewer scoped to some clusters sees the freezes covering one of them, with the
    /// cluster names outside its scope left out.
    pub async fn list_freezes(&self, actor: &Actor, all: bool) -> Result<Vec<FreezeRecord>> {
        actor.require(Role::Viewer)?;
        let now = self.now();
        let mut conn = self.conn().await?;
        let mut list = freezes::list(&mut conn, (!all).then_some(now), 1000).await?;
        if actor.is_unscoped(Role::Viewer) {
            return Ok(list);
        }
        let clusters = crate::db::clusters::scoped(&mut conn).await?;
        let sees = |c: &Scoped| {
            actor.covers_cluster(
                Role::Viewer,
                ClusterRef {
                    name: &c.name,
                    labels: &c.labels,
                },
            )
        };
        let visible: Vec<&Scoped> = clusters.iter().filter(|c| sees(c)).collect();
        keep_visible(&mut list, &visible);
        Ok(list)
    }

    /// Records `cluster`'s own freeze state as its spoke reports it (on every connect and
    /// change): a freeze made there, already in force (recorded once, audited), or none
    /// (ending the recorded one, audited). Reads first, so a repeat of the state on record
    /// writes nothing.
    pub async fn record_local_freeze(
        &self,
        cluster: &str,
        state: Option<LocalFreeze>,
    ) -> Result<Option<FreezeRecord>> {
        let now = self.now();
        if let Some(f) = &state {
            if f.requested_at > now + Duration::minutes(5) {
                return Err(Error::invalid("localRequest.requestedAt", "in the future"));
            }
            validate::optional_reason("localRequest.reason", Some(&f.reason))?;
        }
        let recorded = {
            let mut conn = self.conn().await?;
            freezes::live_local(&mut conn, cluster, now).await?
        };
        let wanted = state
            .as_ref()
            .filter(|f| f.expires_at.is_none_or(|e| e > now));
        let same = match wanted {
            None => recorded.is_empty(),
            Some(f) => recorded.len() == 1 && recorded[0].created_at == f.requested_at,
        };
        if same {
            return Ok(None);
        }
        let who = state.as_ref().map_or("", |f| f.requested_by.as_str());
        let actor_name = super::local_gates::requests::local_actor(cluster, who);
        let actor = Actor::new(actor_name.clone(), Role::Operator);
        let (rec, _) = self
            .write(&actor, now, |tx| {
                let actor_name = actor_name.clone();
                Box::pin(async move {
                    let mut last = None;
                    let mut audits = Vec::new();
                    // Gate edges as an in-cluster request's: cause `inClusterRequest`,
                    // an end at this report, a start at the freeze's own instant (the
                    // scheduler's key, so a scan that passed it misses nothing).
                    let all = tx.scoped_clusters().await?;
                    let before = freezes::live(tx, now).await?;
                    for old in freezes::live_local(tx, cluster, now).await? {
                        if wanted.is_some_and(|f| f.requested_at == old.created_at) {
                            continue;
                        }
                        let row = freezes::end(
                            tx,
                            old.id,
                            now,
                            &actor_name,
                            "ended in the cluster (fleetgate-freeze ConfigMap deleted)",
                        )
                        .await?;
                        crate::notify::enqueue(tx, &ended_event(&row, &[cluster.to_string()]))
                            .await?;
                        audits.push(("freeze.local_end", to_json(&old), row.clone()));
                        last = Some(row);
                    }
                    let mid = freezes::live(tx, now).await?;
                    let in_cluster = crate::notify::freezes::By::in_cluster;
                    if last.is_some() {
                        crate::notify::freezes::enqueue_edges(
                            tx,
                            &all,
                            &before,
                            &mid,
                            now,
                            in_cluster(&actor_name, now),
                        )
                        .await?;
                    }
                    if let Some(f) = wanted {
                        let reason = if f.reason.trim().is_empty() {
                            "frozen in the cluster".to_string()
                        } else {
                            f.reason.trim().to_string()
                        };
                        let row = freezes::insert(
                            tx,
                            &FreezeRecord {
                                id: Uuid::new_v4(),
                                clusters: Some(ClusterScope {
                                    names: vec![cluster.to_string()],
                                    selector: None,
                                }),
                                reason,
                                starts_at: f.requested_at,
                                expires_at: f.expires_at.filter(|e| *e > f.requested_at),
                                actor: actor_name.clone(),
                                created_at: f.requested_at,
                                requested_in: Some(cluster.to_string()),
                                requested_by: Some(f.requested_by.clone())
                                    .filter(|s| !s.is_empty()),
                                ended_at: None,
                                ended_by: None,
                                end_reason: None,
                            },
                        )
                        .await?;
                        if let Some(row) = row {
                            crate::notify::enqueue(
                                tx,
                                &started_event(&row, &[cluster.to_string()]),
                            )
                            .await?;
                            let after = freezes::live(tx, now).await?;
                            crate::notify::freezes::enqueue_edges(
                                tx,
                                &all,
                                &mid,
                                &after,
                                now,
                                in_cluster(&actor_name, row.starts_at),
                            )
                            .await?;
                            audits.push(("freeze.local", None, row.clone()));
                            last = Some(row);
                        }
                    }
                    // One audit row per write: the last change (an end and a new freeze in
                    // one report are rare: a ConfigMap replaced while the hub was away).
                    let Some((action, before, rec)) = audits.pop() else {
                        return Ok(Written::unchanged(None));
                    };
                    let audit = Audit {
                        action,
                        target_kind: "freeze",
                        target_name: rec.id.to_string(),
                        before,
                        after: to_json(&rec),
                        reason: Some(rec.end_reason.clone().unwrap_or(rec.reason.clone())),
                    };
                    // The cluster's views change; its snapshot does not (a freeze made in
                    // the cluster is never sent back).
                    Ok(Written::changed(
                        last,
                        audit,
                        Affected::Clusters(vec![cluster.to_string()]),
                    ))
                })
            })
            .await?;
        Ok(rec)
    }
}

/// The scope a freeze requested as `requested` is stored with for `actor`: as requested for
/// an actor that may operate every cluster, else the in-scope clusters it selects, named.
fn narrow(
    actor: &Actor,
    requested: Option<ClusterScope>,
    all: &[Scoped],
) -> Result<Option<ClusterScope>> {
    if actor.is_unscoped(FREEZE_ROLE) {
        return Ok(requested);
    }
    let names: Vec<String> = all
        .iter()
        .filter(|c| {
            requested
                .as_ref()
                .is_none_or(|s| s.matches(&c.name, &c.labels))
                && actor.covers_cluster(
                    FREEZE_ROLE,
                    ClusterRef {
                        name: &c.name,
                        labels: &c.labels,
                    },
                )
        })
        .map(|c| c.name.clone())
        .collect();
    if names.is_empty() {
        return Err(Error::Forbidden(format!(
            "{} '{}' may not freeze any of the clusters selected",
            actor.identity.kind(),
            actor.name
        )));
    }
    Ok(Some(ClusterScope {
        names,
        selector: None,
    }))
}

/// Validates the requested clusters.
fn check_clusters(c: &OverrideClusters) -> Result<ClusterScope> {
    if c.names.is_empty() && c.selector.is_none() {
        return Err(Error::invalid(
            "clusters",
            "give names and/or a selector, or leave clusters out to freeze every cluster",
        ));
    }
    for (i, n) in c.names.iter().enumerate() {
        validate::dns_label(&format!("clusters.names[{i}]"), n)?;
    }
    Ok(ClusterScope {
        names: c.names.clone(),
        selector: c.selector.clone(),
    })
}

/// `freeze.started`.
fn started_event(rec: &FreezeRecord, clusters: &[String]) -> crate::notify::NewEvent {
    crate::notify::NewEvent {
        event_type: "freeze.started".into(),
        subject: format!("freeze/{}", rec.id),
        dedup_key: Some(format!("freeze.started/{}", rec.id)),
        occurred_at: rec.created_at,
        gate: None,
        clusters: clusters.to_vec(),
        data: serde_json::json!({ "freeze": rec, "clusters": clusters }),
    }
}

/// `freeze.ended` (unfrozen; expiry is visible from `expiresAt`).
fn ended_event(rec: &FreezeRecord, clusters: &[String]) -> crate::notify::NewEvent {
    crate::notify::NewEvent {
        event_type: "freeze.ended".into(),
        subject: format!("freeze/{}", rec.id),
        dedup_key: Some(format!("freeze.ended/{}", rec.id)),
        occurred_at: rec.ended_at.unwrap_or(rec.created_at),
        gate: None,
        clusters: clusters.to_vec(),
        data: serde_json::json!({ "freeze": rec, "clusters": clusters }),
    }
}
