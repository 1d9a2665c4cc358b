//! Which clusters a freeze covers, and a freeze as the policy's override: pure, shared by the
//! freeze operations, the fleet evaluation and the freeze notifications.

use fleetgate_policy::Override;

use crate::db::clusters::Labelled;
use crate::db::freezes::EndedFreeze;
use crate::db::overrides::EndedClose;
use fleetgate_api_types::FreezeRecord;

/// The policy-crate form of a freeze: a closing override of the reserved gate.
pub(crate) fn to_policy(f: &FreezeRecord) -> Override {
    Override::freeze(
        f.id.to_string(),
        f.starts_at,
        f.expires_at,
        f.created_at,
        f.actor.clone(),
        f.reason.clone(),
    )
}

/// Whether freeze `f` covers `cluster`.
pub(crate) fn covers(f: &FreezeRecord, cluster: &impl Labelled) -> bool {
    f.clusters
        .as_ref()
        .is_none_or(|s| s.matches(cluster.name(), cluster.labels()))
}

/// The freezes of `all` that cover `cluster`, as overrides.
pub(crate) fn covering<'a>(
    all: impl IntoIterator<Item = &'a FreezeRecord>,
    cluster: &impl Labelled,
) -> Vec<Override> {
    all.into_iter()
        .filter(|f| covers(f, cluster))
        .map(to_policy)
        .collect()
}

/// Keeps what a reader who sees only `visible` may see of `list`: the freezes covering one of
/// those clusters, with the cluster names outside them left out (so neither the list nor the
/// status views name other teams' clusters; the freezes' effect on `visible` is unchanged).
pub(crate) fn keep_visible<C: Labelled>(list: &mut Vec<FreezeRecord>, visible: &[&C]) {
    list.retain(|f| match &f.requested_in {
        Some(cluster) => visible.iter().any(|c| c.name() == cluster),
        None => visible.iter().any(|c| covers(f, *c)),
    });
    for f in list {
        if let Some(scope) = &mut f.clusters {
            scope
                .names
                .retain(|n| visible.iter().any(|c| c.name() == n));
        }
    }
}

/// Ended freezes as ended closing overrides of `gate`: each one fences the gate's opening
/// on the clusters it covered, so unfreezing opens rollout gates through their waves.
pub(crate) fn as_ended_closes(ended: &[EndedFreeze], gate: &str) -> Vec<EndedClose> {
    ended
        .iter()
        .map(|e| EndedClose {
            gate: gate.to_string(),
            scope: e.scope.clone(),
            ended_at: e.ended_at,
        })
        .collect()
}
