//! Which overrides and freezes decide a gate on a cluster: whether a gate reaches a
//! cluster at all, which stored overrides apply to it (in the policy crate's form), and
//! the opening fence a rollout gate's ended closes set. Pure functions over stored rows;
//! every evaluation of a gate on a cluster goes through [`applying`].

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, Gate, GateState, Override};

use crate::db;
use crate::db::clusters::Labelled;
use crate::db::overrides::{EndedClose, OverrideRecord};
use crate::{Error, Result};

/// Whether `gate` reaches `cluster`: its own cluster selection includes it
/// and so does one of `within`, the cluster scopes of the scoped admin that
/// last wrote it (none: unscoped). This is how a gate written by a team
/// never reaches a cluster outside the team's scope, also one registered or
/// relabelled later.
pub(crate) fn reaches(
    gate: &Gate,
    within: Option<&[ClusterScope]>,
    cluster: &impl Labelled,
) -> bool {
    let (name, labels) = (cluster.name(), cluster.labels());
    gate.spec.clusters.matches(name, labels)
        && within.is_none_or(|w| w.iter().any(|s| s.matches(name, labels)))
}

/// Whether override `row` applies to `cluster`: it is `gate`'s, the gate's
/// scope includes the cluster, and the override's own scope (absent: the
/// whole gate scope) does too.
pub(crate) fn applies(gate: &Gate, cluster: &impl Labelled, row: &OverrideRecord) -> bool {
    let (name, labels) = (cluster.name(), cluster.labels());
    row.gate == gate.name()
        && gate.spec.clusters.matches(name, labels)
        && row
            .clusters
            .as_ref()
            .is_none_or(|s| s.matches(name, labels))
}

/// What decides `gate` on `cluster` beside its rules: those of `rows` that apply to it, in
/// the policy crate's form and in the order given, then the freezes of `freezes` covering
/// the cluster (a freeze closes every gate). Every evaluation of a gate on a cluster — views,
/// snapshots, rollouts, the schedule preview, notifications — takes its overrides from
/// here, so none can leave the freezes out.
pub(crate) fn applying<'a>(
    gate: &Gate,
    cluster: &impl Labelled,
    rows: impl IntoIterator<Item = &'a OverrideRecord>,
    freezes: &[db::freezes::FreezeRecord],
) -> Vec<Override> {
    let mut own = own_applying(gate, cluster, rows);
    own.extend(super::super::freezes::scope::covering(freezes, cluster));
    own
}

/// Those of `rows` that apply to `cluster` for `gate`, without freezes (a snapshot carries
/// them apart).
pub(super) fn own_applying<'a>(
    gate: &Gate,
    cluster: &impl Labelled,
    rows: impl IntoIterator<Item = &'a OverrideRecord>,
) -> Vec<Override> {
    rows.into_iter()
        .filter(|r| applies(gate, cluster, r))
        .map(to_policy)
        .collect()
}

/// The latest end among `ended` (one gate's ended closing overrides) of those that apply to
/// `cluster` — every one, gate-wide or scoped to it — or, for `None`, of the gate-wide
/// ones only (the gate's own open period, which starts a rollout). The open period never
/// began before it ([`fleetgate_policy::CompiledGate::open_since_fenced`]).
pub(crate) fn opening_fence(
    ended: &[EndedClose],
    cluster: Option<&dyn Labelled>,
) -> Option<DateTime<Utc>> {
    ended
        .iter()
        .filter(|e| match (&e.scope, cluster) {
            (None, _) => true,
            (Some(scope), Some(c)) => scope.matches(c.name(), c.labels()),
            (Some(_), None) => false,
        })
        .map(|e| e.ended_at)
        .max()
}

/// Parses a stored manifest (already validated when written).
pub(crate) fn stored_gate(manifest: &serde_json::Value) -> Result<Gate> {
    fleetgate_policy::parse_gate_json(manifest.clone())
        .map_err(|e| Error::Internal(format!("stored gate manifest unreadable: {e}")))
}

/// The policy-crate form of a stored override.
pub(crate) fn to_policy(row: &OverrideRecord) -> Override {
    Override {
        id: row.id.to_string(),
        gate: row.gate.clone(),
        state: if row.state == "open" {
            GateState::Open
        } else {
            GateState::Closed
        },
        starts_at: row.starts_at,
        expires_at: row.expires_at,
        created_at: row.created_at,
        actor: row.actor.clone(),
        reason: row.reason.clone(),
    }
}
