//! Gate objects in the cluster (`gates.fleetgate.io`, cluster-scoped). One
//! loop watches them and, on every change, snapshot, report or transition:
//! - standalone (`--standalone`): builds the snapshot from the valid Gate
//!   objects selecting this cluster (an invalid edit keeps the last valid
//!   version in force);
//! - with a hub: mirrors the hub's gates into Gate objects and reverts edits;
//! - turns open/close request annotations into local overrides (offline too);
//! - keeps every Gate's status (Opened, Ready, counts) and publishes an Event
//!   at each transition.

pub(crate) mod freeze;
pub(crate) mod freeze_watch;
mod judge;
mod local;
mod mirror;
mod object;
mod pass;
mod report;
pub(crate) mod requests;
mod specs;
mod state;
pub(crate) mod status;

use std::{sync::Arc, time::Duration};

use futures::StreamExt;
use kube::{
    Api,
    api::DynamicObject,
    core::GroupVersionKind,
    discovery::pinned_kind,
    runtime::{WatchStreamExt, reflector, watcher},
};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::context::Context;
pub use object::{
    GROUP, HUB_VERSION_ANNOTATION, KIND, ORIGIN_LABEL, VERSION, is_from_hub, resource,
};
use state::State;

/// Watch bursts (a status write echoing back) are coalesced this long.
const COALESCE: Duration = Duration::from_millis(20);

/// Waits until the Gate CRD is served; `None` on shutdown.
async fn wait_for_crd(ctx: &Context, shutdown: &CancellationToken) -> Option<Api<DynamicObject>> {
    let gvk = GroupVersionKind::gvk(GROUP, VERSION, KIND);
    let mut logged = false;
    loop {
        match pinned_kind(ctx.watches.client(), &gvk).await {
            Ok((resource, _)) => {
                return Some(Api::all_with(ctx.watches.client().clone(), &resource));
            }
            Err(e) => {
                if !logged {
                    tracing::warn!(error = %e, "Gate CRD (gates.fleetgate.io) not served; Gate objects are skipped until it is installed");
                    logged = true;
                }
            }
        }
        let period = ctx
            .config
            .discovery_interval
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        tokio::select! {
            _ = shutdown.cancelled() => return None,
            _ = tokio::time::sleep(period) => {}
        }
    }
}

/// Standalone: the snapshot the last run built from the Gate objects holds
/// the last valid version of each gate; a Gate object whose spec became
/// invalid keeps that version in force after a restart too.
async fn seed_from_persisted(ctx: &Context, in_force: &mut local::InForce) {
    match ctx.store.load().await {
        Ok(Some((snapshot, persisted))) if snapshot.cluster == ctx.config.cluster => {
            ctx.persisted_at_start(persisted);
            tracing::info!(
                revision = snapshot.revision,
                gates = snapshot.gates.len(),
                "last valid Gate objects read from the persisted snapshot"
            );
            in_force.seed(&snapshot);
        }
        Ok(_) => {}
        Err(e) => {
            ctx.metrics.error(&e);
            tracing::warn!(error = %e, "could not read the persisted snapshot; a Gate object with an invalid spec enforces nothing until it is fixed");
        }
    }
}

/// Runs until `shutdown`.
pub async fn run(ctx: Arc<Context>, shutdown: CancellationToken) {
    let Some(api) = wait_for_crd(&ctx, &shutdown).await else {
        return;
    };
    let writer = reflector::store::Writer::new(resource());
    let store = writer.as_reader();
    let changed = Arc::new(Notify::new());
    let (notify, sd) = (changed.clone(), shutdown.clone());
    let stream =
        reflector(writer, watcher(api.clone(), watcher::Config::default())).default_backoff();
    tokio::spawn(async move {
        let mut stream = std::pin::pin!(stream);
        loop {
            tokio::select! {
                _ = sd.cancelled() => break,
                event = stream.next() => match event {
                    Some(Ok(_)) => notify.notify_one(),
                    Some(Err(e)) => tracing::warn!(error = %e, "Gate watch error; retrying with backoff"),
                    None => break,
                },
            }
        }
    });
    tokio::select! {
        _ = shutdown.cancelled() => return,
        r = store.wait_until_ready() => if r.is_err() { return },
    }
    tracing::info!(standalone = ctx.config.standalone, "watching Gate objects");
    let mut state = State::default();
    if ctx.config.standalone {
        seed_from_persisted(&ctx, &mut state.in_force).await;
    }
    let mut snapshot_rx = ctx.snapshot.subscribe();
    let mut report_rx = ctx.report.subscribe();
    let mut clock_moved = ctx.config.clock.moved();
    loop {
        snapshot_rx.borrow_and_update();
        report_rx.borrow_and_update();
        let objects = store.state();
        let next = pass::pass(&ctx, &api, &objects, &mut state).await;
        let resync = tokio::time::Instant::now() + ctx.config.resync_interval;
        let wake = next.map_or(resync, |t| {
            resync.min(crate::controller::instant_of(t, ctx.config.clock.now()))
        });
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = clock_moved.next() => {}
            _ = changed.notified() => tokio::time::sleep(COALESCE).await,
            r = snapshot_rx.changed() => if r.is_err() { return },
            r = report_rx.changed() => if r.is_err() { return },
            _ = tokio::time::sleep_until(wake) => {}
        }
    }
}
