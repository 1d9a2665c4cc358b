//! The window-edge scheduler: every replica wakes at the fleet's earliest
//! next transition (or its upcoming-notice time), scans the interval since
//! the last scan and enqueues one `gate.opened`/`gate.closed` per (gate,
//! instant, new state) and the `gate.upcoming` notices. Fleet freezes count like
//! overrides (through `fleet::applying`): no window opens a frozen cluster, and a
//! freeze's start and end are edges of every gate on its clusters. Replicas take turns
//! on the scheduler row's lock, and the events' dedup keys make a repeated
//! scan harmless, so two replicas never emit one edge twice. Driven by the
//! service's clock ([`crate::clock`]): tests move time and call [`Service::notify_scan`].

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, CompiledGate, Gate, Transition};
use tokio_util::sync::CancellationToken;

use super::event::{Cause, GateTransition, GateUpcoming};
use crate::Result;
use crate::db::clusters::Scoped;
use crate::db::freezes::FreezeRecord;
use crate::db::outbox;
use crate::db::overrides::OverrideRecord;
use crate::service::Service;
use crate::service::fleet::{applying, reaches, stored_gate};

/// Edges older than this when a scan finally runs (the whole hub was down)
/// are skipped: a "closed" message hours late helps nobody.
const MAX_CATCHUP: chrono::Duration = chrono::Duration::hours(1);

/// Longest sleep between scans (picks up new gates and overrides whose
/// edges no write announced).
const MAX_SLEEP: Duration = Duration::from_secs(5);

/// What one scan did.
#[derive(Debug, Default, Clone)]
pub struct ScanOutcome {
    /// Events inserted (not counting those another replica had inserted).
    pub inserted: usize,
    /// The next instant anything is due (edge or upcoming notice).
    pub next_due: Option<DateTime<Utc>>,
}

/// The clusters that changed at one (instant, state), the reason, the cause and their next
/// transition after it (the earliest).
type Group = (Vec<String>, String, Cause, Option<DateTime<Utc>>);

/// One gate's state changes on its clusters in `(from, to]`, one entry per
/// (instant, new state) with the clusters that changed then.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gate_edges(
    gate: &Gate,
    compiled: &CompiledGate,
    within: Option<&[ClusterScope]>,
    clusters: &[Scoped],
    overrides: &[OverrideRecord],
    freezes: &[FreezeRecord],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Vec<GateTransition> {
    let base = compiled.transitions(from, to, &[]);
    let mine: Vec<&OverrideRecord> = overrides.iter().filter(|o| o.gate == gate.name()).collect();
    if base.is_empty() && mine.is_empty() && freezes.is_empty() {
        return Vec::new();
    }
    let mut groups: BTreeMap<(DateTime<Utc>, &'static str), Group> = BTreeMap::new();
    let mut nexts: NextByOverrides = std::collections::HashMap::new();
    // The gate's changes with each distinct set of applying overrides, computed once per
    // set: a fleet-wide override applies to every cluster alike, and computing them per
    // cluster was most of a scan's time at 10,000 clusters (fleetgate-bench, issue 50).
    let mut by_set: TransitionsByOverrides = std::collections::HashMap::new();
    for c in clusters.iter().filter(|c| reaches(gate, within, *c)) {
        let ovs = applying(gate, c, mine.iter().copied(), freezes);
        let ids: Vec<String> = ovs.iter().map(|o| o.id.clone()).collect();
        if !ovs.is_empty() && !by_set.contains_key(&ids) {
            by_set.insert(ids.clone(), compiled.transitions(from, to, &ovs));
        }
        let changes = if ovs.is_empty() { &base } else { &by_set[&ids] };
        for t in changes {
            let by_override = t.reason.starts_with("override ")
                || ovs
                    .iter()
                    .any(|o| o.starts_at == t.at || o.expires_at == Some(t.at));
            // An in-cluster request or freeze starting or ending on this cluster now.
            let by_request = mine.iter().any(|o| {
                o.requested_in.as_deref() == Some(c.name.as_str())
                    && (o.starts_at == t.at || o.expires_at == Some(t.at))
            }) || freezes.iter().any(|f| {
                f.requested_in.as_deref() == Some(c.name.as_str())
                    && (f.starts_at == t.at || f.expires_at == Some(t.at))
            });
            // The next change with this cluster's overrides (one evaluation per set).
            let key = (t.at, ids.clone());
            let next = *nexts
                .entry(key)
                .or_insert_with(|| compiled.evaluate(t.at, &ovs).next_transition);
            let entry = groups.entry((t.at, t.state.as_str())).or_insert_with(|| {
                let cause = if by_request {
                    Cause::InClusterRequest
                } else {
                    Cause::Override
                };
                (Vec::new(), t.reason.clone(), cause, next)
            });
            entry.0.push(c.name.clone());
            entry.3 = super::event::earliest(entry.3, next);
            if !by_override && matches!(entry.2, Cause::Override | Cause::InClusterRequest) {
                entry.1 = t.reason.clone();
                entry.2 = if compiled.calendar_edge_at(t.at) {
                    Cause::Calendar
                } else {
                    Cause::Window
                };
            }
        }
    }
    groups
        .into_iter()
        .map(
            |((at, state), (clusters, reason, cause, next))| GateTransition {
                gate: gate.name().to_string(),
                state: state.to_string(),
                clusters,
                reason,
                cause,
                at,
                next_transition: next,
                actor: None,
            },
        )
        .collect()
}

/// `gate.upcoming` notices for window edges in `(from + lead, to + lead]`,
/// naming the clusters no override or freeze holds at that instant.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gate_upcoming(
    gate: &Gate,
    compiled: &CompiledGate,
    within: Option<&[ClusterScope]>,
    clusters: &[Scoped],
    overrides: &[OverrideRecord],
    freezes: &[FreezeRecord],
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    lead: chrono::Duration,
) -> Vec<GateUpcoming> {
    let base = compiled.transitions(from + lead, to + lead, &[]);
    base.into_iter()
        .filter_map(|t| {
            let names: Vec<String> = clusters
                .iter()
                .filter(|c| reaches(gate, within, *c))
                .filter(|c| {
                    let mine = overrides.iter().filter(|o| o.gate == gate.name());
                    applying(gate, *c, mine, freezes)
                        .iter()
                        .all(|o| !o.is_active(t.at))
                })
                .map(|c| c.name.clone())
                .collect();
            (!names.is_empty()).then(|| GateUpcoming {
                gate: gate.name().to_string(),
                state: t.state.as_str().to_string(),
                clusters: names,
                at: t.at,
                lead: fleetgate_policy::format_duration(lead),
                reason: t.reason,
            })
        })
        .collect()
}

impl Service {
    /// Scans from the last scan to now, enqueues the edges and notices found
    /// (`leads`: the `gate.upcoming` lead times) and says when to scan next.
    pub async fn notify_scan(&self, leads: &[chrono::Duration]) -> Result<ScanOutcome> {
        let now = self.now();
        let mut tx = self.begin().await?;
        let Some(last) = outbox::lock_scheduler(&mut tx, now).await? else {
            tx.commit().await?;
            return Ok(ScanOutcome {
                inserted: 0,
                next_due: Some(now),
            });
        };
        let from = last.max(now - MAX_CATCHUP);
        let rows = crate::db::gates::all(&mut tx).await?;
        let feeds = crate::db::calendar_feeds::for_gates(&mut tx, None).await?;
        // Each gate with the writer scope it is kept within (a team's gate
        // never reaches, nor announces, a cluster outside the team's scope).
        let gates: Vec<(Gate, CompiledGate, Option<Vec<ClusterScope>>)> = rows
            .iter()
            .filter_map(|r| {
                let g = stored_gate(&r.manifest).ok()?;
                let mine: Vec<_> = feeds.iter().filter(|f| f.gate == r.name).cloned().collect();
                let occurrences = crate::service::calendars::feed_occurrences(&mine);
                let c = crate::service::calendars::compile_at(&g, &occurrences, now).ok()?;
                Some((g, c, r.writer_scope.as_ref().map(|w| w.0.clone())))
            })
            .collect();
        let overrides = outbox::overrides_since(&mut tx, from).await?;
        let freezes = crate::db::freezes::since(&mut tx, from).await?;
        let mut inserted = 0;
        if from < now {
            let bound_in = |t: DateTime<Utc>| from < t && t <= now;
            let due = overrides
                .iter()
                .any(|o| bound_in(o.starts_at) || o.expires_at.is_some_and(bound_in))
                || freezes
                    .iter()
                    .any(|f| bound_in(f.starts_at) || f.expires_at.is_some_and(bound_in))
                || gates.iter().any(|(_, c, _)| {
                    !c.transitions(from, now, &[]).is_empty()
                        || leads
                            .iter()
                            .any(|l| !c.transitions(from + *l, now + *l, &[]).is_empty())
                });
            if due {
                let clusters = crate::db::clusters::scoped(&mut tx).await?;
                for (g, c, within) in &gates {
                    let within = within.as_deref();
                    let edges =
                        gate_edges(g, c, within, &clusters, &overrides, &freezes, from, now);
                    inserted += super::enqueue_transitions(&mut tx, Some(g), edges, None).await?;
                    for lead in leads {
                        let notices = gate_upcoming(
                            g, c, within, &clusters, &overrides, &freezes, from, now, *lead,
                        );
                        for notice in notices {
                            inserted += usize::from(
                                outbox::enqueue(&mut tx, &notice.into_event(now))
                                    .await?
                                    .is_some(),
                            );
                        }
                    }
                }
                for o in &overrides {
                    if let Some(end) = o.expires_at.filter(|e| bound_in(*e)) {
                        let ev = super::overrides::ended(o, end, None);
                        inserted += usize::from(outbox::enqueue(&mut tx, &ev).await?.is_some());
                    }
                }
            }
            outbox::scanned(&mut tx, now).await?;
        }
        tx.commit().await?;
        let mut next_due: Option<DateTime<Utc>> = None;
        let mut due = |t: Option<DateTime<Utc>>| {
            if let Some(t) = t.filter(|t| *t > now) {
                next_due = Some(next_due.map_or(t, |n| n.min(t)));
            }
        };
        for (_, c, _) in &gates {
            due(c.evaluate(now, &[]).next_transition);
            for l in leads {
                due(c.evaluate(now + *l, &[]).next_transition.map(|t| t - *l));
            }
        }
        for o in &overrides {
            due(Some(o.starts_at));
            due(o.expires_at);
        }
        for f in &freezes {
            due(Some(f.starts_at));
            due(f.expires_at);
        }
        Ok(ScanOutcome { inserted, next_due })
    }
}

/// Scans until `stop`, sleeping until the next due instant (at most
/// [`MAX_SLEEP`], so new gates are picked up) or until `wake` fires.
pub async fn run(
    service: Service,
    leads: Vec<chrono::Duration>,
    wake: std::sync::Arc<tokio::sync::Notify>,
    stop: CancellationToken,
) {
    loop {
        let sleep = match service.notify_scan(&leads).await {
            Ok(out) => {
                if out.inserted > 0 {
                    wake.notify_waiters();
                }
                out.next_due
                    .and_then(|t| (t - service.now()).to_std().ok())
                    .map_or(MAX_SLEEP, |d| (d + Duration::from_millis(1)).min(MAX_SLEEP))
            }
            Err(e) => {
                tracing::warn!(error = %e, "notification scan failed");
                MAX_SLEEP
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = tokio::time::sleep(sleep) => {}
        }
    }
}

/// A gate's transitions per set of applying overrides (their ids).
type TransitionsByOverrides = std::collections::HashMap<Vec<String>, Vec<Transition>>;

/// The next transition per instant and set of applying overrides.
type NextByOverrides =
    std::collections::HashMap<(DateTime<Utc>, Vec<String>), Option<DateTime<Utc>>>;
