//! Events of override writes: `override.created`, `override.ended`, and the
//! `gate.opened`/`gate.closed` an override causes at once, computed in the
//! write's transaction from the gate's state before and after it.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use fleetgate_policy::{CompiledGate, Gate};

use super::event::{Cause, GateTransition, NewEvent, StateGroups, earliest};
use crate::db::clusters::Scoped;
use crate::db::freezes::FreezeRecord;
use crate::db::overrides::OverrideRecord;
use crate::service::fleet::applying::applying;

/// `override.created` (`clusters`: those it applies to).
pub(crate) fn created(rec: &OverrideRecord, clusters: &[String]) -> NewEvent {
    NewEvent {
        event_type: "override.created".into(),
        subject: format!("gate/{}", rec.gate),
        dedup_key: Some(format!("override.created/{}", rec.id)),
        occurred_at: rec.created_at,
        gate: Some(rec.gate.clone()),
        clusters: clusters.to_vec(),
        data: serde_json::json!({
            "override": rec,
            "clusters": clusters,
        }),
    }
}

/// `override.ended` at `at`: expired, or cancelled by `by`. One per
/// override, whether the cancel write or the scheduler sees it first.
pub(crate) fn ended(rec: &OverrideRecord, at: DateTime<Utc>, by: Option<&str>) -> NewEvent {
    NewEvent {
        event_type: "override.ended".into(),
        subject: format!("gate/{}", rec.gate),
        dedup_key: Some(format!("override.ended/{}", rec.id)),
        occurred_at: at,
        gate: Some(rec.gate.clone()),
        clusters: Vec::new(),
        data: serde_json::json!({
            "override": rec,
            "endedAt": at,
            "how": if by.is_some() { "cancelled" } else { "expired" },
            "cancelledBy": by,
        }),
    }
}

/// The clusters of `clusters` whose state of `gate` at `now` differs
/// between the override sets `before` and `after` (with the live `freezes`, which
/// outrank both), grouped by new state.
#[allow(clippy::too_many_arguments)]
pub(crate) fn state_changes(
    gate: &Gate,
    clusters: &[&Scoped],
    before: &[OverrideRecord],
    after: &[OverrideRecord],
    freezes: &[FreezeRecord],
    now: DateTime<Utc>,
    cause: Cause,
    actor: &str,
) -> Vec<GateTransition> {
    let Ok(compiled) = gate.compile() else {
        return Vec::new();
    };
    let at = At { now, cause, actor };
    changes(
        gate,
        &compiled,
        clusters,
        (before, freezes),
        (after, freezes),
        &at,
    )
}

/// The clusters of `clusters` whose state of `gate` (`compiled` with its
/// calendars) at `now` differs between the fleet freezes `before` and `after`
/// a freeze write, grouped by new state. A freeze is a closing override above
/// all others, so a hub freeze's edges have the cause `override` and one made
/// in a cluster `inClusterRequest`, as the scheduler's do.
#[allow(clippy::too_many_arguments)]
pub(crate) fn freeze_changes(
    gate: &Gate,
    compiled: &CompiledGate,
    clusters: &[&Scoped],
    overrides: &[OverrideRecord],
    before: &[FreezeRecord],
    after: &[FreezeRecord],
    now: DateTime<Utc>,
    cause: Cause,
    actor: &str,
) -> Vec<GateTransition> {
    let at = At { now, cause, actor };
    changes(
        gate,
        compiled,
        clusters,
        (overrides, before),
        (overrides, after),
        &at,
    )
}

/// The instant, cause and actor of a write's changes.
struct At<'a> {
    now: DateTime<Utc>,
    cause: Cause,
    actor: &'a str,
}

/// A gate's own overrides and the fleet freezes, before or after a write.
type Rules<'a> = (&'a [OverrideRecord], &'a [FreezeRecord]);

fn changes(
    gate: &Gate,
    compiled: &CompiledGate,
    clusters: &[&Scoped],
    before: Rules<'_>,
    after: Rules<'_>,
    at: &At<'_>,
) -> Vec<GateTransition> {
    let now = at.now;
    // Per new state: the clusters, the reason, and the next transition (the override's end
    // where one decides it).
    let mut groups: StateGroups = BTreeMap::new();
    // Clusters with the same applying overrides share one evaluation: an
    // override on a gate of 10,000 clusters evaluates a handful of sets, not
    // 20,000 cluster states, inside the write.
    let mut cache: HashMap<Vec<String>, fleetgate_policy::Evaluation> = HashMap::new();
    let mut eval = |ovs: Vec<fleetgate_policy::Override>| {
        let key: Vec<String> = ovs.iter().map(|o| o.id.clone()).collect();
        cache
            .entry(key)
            .or_insert_with(|| compiled.evaluate(now, &ovs))
            .clone()
    };
    for c in clusters {
        let old = eval(applying(gate, *c, before.0, before.1));
        let new = eval(applying(gate, *c, after.0, after.1));
        if old.state != new.state {
            let e = groups
                .entry(new.state.as_str())
                .or_insert_with(|| (Vec::new(), new.reason.clone(), new.next_transition));
            e.0.push(c.name.clone());
            // Clusters whose overrides differ may change next at different instants: the
            // event names the earliest.
            e.2 = earliest(e.2, new.next_transition);
        }
    }
    groups
        .into_iter()
        .map(|(state, (clusters, reason, next))| GateTransition {
            gate: gate.name().to_string(),
            state: state.to_string(),
            clusters,
            reason,
            cause: at.cause,
            at: now,
            next_transition: next,
            actor: Some(at.actor.to_string()),
        })
        .collect()
}
