//! The level-triggered reconcile loop: on every snapshot, object change,
//! transition instant and periodic resync it evaluates the gates with the
//! local clock, plans every observed object and applies the steps.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use chrono::{DateTime, Utc};
use tokio_util::sync::CancellationToken;

use crate::{
    cluster::observed::ObservedObject,
    context::Context,
    hold::{
        self,
        plan::{HoldPlan, HoldPlanner},
    },
    hub::report::{InventoryEntry, Report},
    hub::snapshot::CompiledSnapshot,
    suspend::enforce,
    suspend::own_delivery::OwnDelivery,
    suspend::plan::Plan,
};

/// Bursts of watch events (a Flux controller updating many statuses) are
/// coalesced for this long before re-planning.
const COALESCE: Duration = Duration::from_millis(20);

/// Patched Flux objects until their watch catches up.
type Overlay = crate::cluster::overlay::Overlay<ObservedObject>;
/// Patched held objects until their watch catches up.
type HeldOverlay = crate::cluster::overlay::Overlay<hold::observed::AppliedObject>;

/// What object-level holds keep from one pass to the next.
#[derive(Default)]
struct HoldState {
    overlay: HeldOverlay,
    strays: hold::strays::Strays,
    /// The HoldNotPermitted Events already published.
    warned: hold::not_permitted::Warned,
}

/// Runs until `shutdown`.
pub async fn run(ctx: Arc<Context>, shutdown: CancellationToken) {
    let mut snapshot_rx = ctx.snapshot.subscribe();
    let mut local_rx = ctx.local_overrides.subscribe();
    let mut freeze_rx = ctx.local_freeze.subscribe();
    let mut overlay = Overlay::default();
    let mut own = OwnDelivery::new(&ctx.config.own_kustomization);
    let mut holds = HoldState::default();
    let changed = ctx.watches.changed.clone();
    let mut clock_moved = ctx.config.clock.moved();
    loop {
        let snapshot = snapshot_rx.borrow_and_update().clone();
        local_rx.borrow_and_update();
        freeze_rx.borrow_and_update();
        let mut next_transition = None;
        if let Some(objects) = ctx.watches.observed().await {
            let objects = overlay.apply(objects);
            match &snapshot {
                Some(snap) => {
                    next_transition =
                        reconcile(&ctx, snap, objects, &mut overlay, &mut holds, &mut own).await;
                }
                None => {
                    ctx.ready.store(true, Ordering::Release);
                    ctx.report.send_replace(Some(Arc::new(Report::default())));
                }
            }
        }
        let resync = tokio::time::Instant::now() + ctx.config.resync_interval;
        let wake = next_transition.map_or(resync, |t| {
            resync.min(instant_of(t, ctx.config.clock.now()))
        });
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = clock_moved.next() => {}
            r = snapshot_rx.changed() => if r.is_err() { return },
            r = local_rx.changed() => if r.is_err() { return },
            r = freeze_rx.changed() => if r.is_err() { return },
            _ = changed.notified() => {
                tokio::time::sleep(COALESCE).await;
            }
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}

/// The monotonic instant of a wall-clock instant `t` seen at `now` (now if
/// it has passed).
pub(crate) fn instant_of(t: DateTime<Utc>, now: DateTime<Utc>) -> tokio::time::Instant {
    let ahead = (t - now).to_std().unwrap_or(Duration::ZERO);
    tokio::time::Instant::now() + ahead
}

/// One pass: evaluate, plan, apply, report. Returns the next transition.
#[tracing::instrument(name = "pass", skip_all, fields(revision = snapshot.revision(), objects = objects.len()))]
async fn reconcile(
    ctx: &Arc<Context>,
    snapshot: &CompiledSnapshot,
    objects: Vec<ObservedObject>,
    overlay: &mut Overlay,
    hold_state: &mut HoldState,
    own: &mut OwnDelivery,
) -> Option<DateTime<Utc>> {
    ctx.metrics.reconciles.inc();
    let local = ctx.local_overrides_now();
    let eval = snapshot.evaluate_with(ctx.config.clock.now(), &local);
    let frozen = eval
        .gates
        .iter()
        .any(|g| g.name == fleetgate_policy::FREEZE_GATE);
    ctx.metrics.frozen.set(i64::from(frozen));
    let planner = eval.planner(&objects);
    if let Some((key, gates)) = own.check(&planner, &objects) {
        crate::suspend::own_delivery::warn(ctx, &key, &gates).await;
    }
    let mut plan = planner.plan(&objects);
    let steps = std::mem::take(&mut plan.steps);
    let mut patched = false;
    if !steps.is_empty() {
        tracing::debug!(steps = steps.len(), "applying");
        let applied = enforce::apply(ctx, &planner, &eval.gates, steps).await;
        if !applied.is_empty() {
            for a in applied {
                overlay.record(a.stale_rv, a.fresh);
            }
            patched = true;
        }
    }
    // Holds read only the Kustomizations' identity, labels and applied
    // revision, which suspends do not change.
    let holds = reconcile_holds(ctx, &eval.gates, &objects, hold_state).await;
    let inventory = objects.iter().map(InventoryEntry::of).collect();
    if patched {
        // Report what the patches left, not what was there before.
        let objects = overlay.apply(objects);
        plan = eval.planner(&objects).plan(&objects);
    }
    publish(
        ctx,
        snapshot.revision(),
        (plan, holds, inventory),
        eval.gates.iter().filter(|g| g.holds()).count(),
    );
    eval.next_transition
}

/// Object-level holds inside Kustomizations (`mode: holdObjects`): plan from
/// the metadata watches, patch, and plan again from what the patches left.
async fn reconcile_holds(
    ctx: &Arc<Context>,
    gates: &[crate::suspend::plan::GateView],
    objects: &[ObservedObject],
    state: &mut HoldState,
) -> HoldPlan {
    // Where warn gates already would hold an object: the revision since.
    let previous = ctx.report.borrow().clone();
    let previous = previous.as_deref().map_or(&[][..], |r| &r.held_objects[..]);
    let planner = HoldPlanner::new(gates, objects).remembering(previous);
    let mut plan = hold_pass(ctx, &planner, gates, &mut state.overlay, &mut state.strays).await;
    not_permitted(ctx, &planner, gates, &mut plan, &mut state.warned).await;
    plan
}

/// Plans the watched objects, patches, and plans again from what the patches left.
async fn hold_pass(
    ctx: &Arc<Context>,
    planner: &HoldPlanner<'_>,
    gates: &[crate::suspend::plan::GateView],
    held_overlay: &mut HeldOverlay,
    strays: &mut hold::strays::Strays,
) -> HoldPlan {
    let mut applied = ctx.held.observed().await;
    let unlabelled = strays.read(ctx, planner, &applied).await;
    applied.extend(unlabelled);
    let applied = held_overlay.apply(applied);
    let mut plan = planner.plan(&applied);
    let steps = std::mem::take(&mut plan.steps);
    if steps.is_empty() {
        return plan;
    }
    tracing::debug!(steps = steps.len(), "applying holds");
    let done = hold::enforce::apply(ctx, planner, gates, steps).await;
    if done.is_empty() {
        return plan;
    }
    for a in done {
        held_overlay.record(a.stale_rv, a.fresh);
    }
    let applied = held_overlay.apply(applied);
    planner.plan(&applied)
}

/// Adds the objects holdObjects gates select that `--held-kinds` does not
/// permit to the report, and warns on their Kustomizations while closed.
async fn not_permitted(
    ctx: &Context,
    planner: &HoldPlanner<'_>,
    gates: &[crate::suspend::plan::GateView],
    holds: &mut HoldPlan,
    warned: &mut hold::not_permitted::Warned,
) {
    let permitted = ctx.held.configured();
    let found = hold::not_permitted::find(planner, permitted);
    warned
        .publish(ctx, hold::not_permitted::warnings(&found, gates, permitted))
        .await;
    if !found.is_empty() {
        holds.report.extend(found);
        holds.report.sort_by(|a, b| a.key.cmp(&b.key));
    }
}

/// Publishes the pass's outcome. Ready is set first, so whoever sees the
/// first report also sees `/readyz` succeed.
fn publish(
    ctx: &Context,
    revision: u64,
    (plan, holds, inventory): (Plan, HoldPlan, Vec<InventoryEntry>),
    closed: usize,
) {
    ctx.ready.store(true, Ordering::Release);
    let m = &ctx.metrics;
    m.objects_governed
        .set(i64::try_from(plan.report.len()).unwrap_or(i64::MAX));
    m.objects_suspended
        .set(i64::try_from(plan.suspended_count()).unwrap_or(i64::MAX));
    m.objects_held
        .set(i64::try_from(plan.held_count()).unwrap_or(i64::MAX));
    m.objects_would_suspend
        .set(i64::try_from(plan.would_suspend_count()).unwrap_or(i64::MAX));
    m.objects_would_hold
        .set(i64::try_from(plan.would_hold_count()).unwrap_or(i64::MAX));
    m.applied_objects_held
        .set(i64::try_from(holds.held_count()).unwrap_or(i64::MAX));
    m.applied_objects_held_by_person
        .set(i64::try_from(holds.held_by_person_count()).unwrap_or(i64::MAX));
    m.applied_objects_not_permitted
        .set(i64::try_from(holds.not_permitted_count()).unwrap_or(i64::MAX));
    m.applied_objects_would_hold
        .set(i64::try_from(holds.would_hold_count()).unwrap_or(i64::MAX));
    m.applied_objects_would_hold_waiting
        .set(i64::try_from(holds.would_hold_waiting_count()).unwrap_or(i64::MAX));
    m.gates_closed
        .set(i64::try_from(closed).unwrap_or(i64::MAX));
    let report = Report {
        revision,
        // Moved, not copied: one entry per governed object.
        objects: plan.report,
        held_objects: holds.report,
        inventory,
    };
    ctx.report.send_if_modified(|cur| {
        if cur.as_deref() == Some(&report) {
            false
        } else {
            *cur = Some(Arc::new(report));
            true
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::observed::ObjectKey;
    use fleetgate_policy::FluxKind;

    fn obj(name: &str, rv: &str, suspended: bool) -> ObservedObject {
        ObservedObject {
            key: ObjectKey::new(FluxKind::Kustomization, "ns", name),
            labels: Default::default(),
            resource_version: Some(rv.into()),
            suspended,
            suspended_by: None,
            freeze_reason: None,
            source_refs: vec![],
            last_applied_revision: None,
            artifact_revision: None,
            ignored: false,
            nesting: Default::default(),
            readiness: Default::default(),
            inventory: None,
        }
    }

    #[test]
    fn overlay_replaces_stale_copies_until_the_store_catches_up() {
        let mut overlay = Overlay::default();
        overlay.record(Some("1".into()), obj("a", "2", true));
        // The store still has rv 1: the patched copy is used.
        let seen = overlay.apply(vec![obj("a", "1", false), obj("b", "5", false)]);
        assert!(seen[0].suspended && seen[0].resource_version.as_deref() == Some("2"));
        assert_eq!(seen[1], obj("b", "5", false));
        // The store moved on (our write or a later one): the store wins and the entry goes.
        let seen = overlay.apply(vec![obj("a", "3", false)]);
        assert_eq!(seen[0], obj("a", "3", false));
        assert!(overlay.0.is_empty());
    }
}
