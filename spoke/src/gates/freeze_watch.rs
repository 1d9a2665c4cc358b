//! Watches the in-cluster freeze ConfigMap (`gates::freeze`) and publishes it in the
//! context, remembering the end of the freeze in force for the rollout fence.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::{
    Api,
    runtime::{WatchStreamExt, watcher},
};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::gates::freeze::{CONFIGMAP, LocalFreeze};

/// Watches the ConfigMap until `shutdown`, publishing the freeze in `ctx.local_freeze`.
pub async fn run(ctx: Arc<Context>, shutdown: CancellationToken) {
    let api: Api<ConfigMap> = Api::namespaced(ctx.watches.client().clone(), &ctx.config.namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={CONFIGMAP}"));
    let mut events = std::pin::pin!(watcher(api, config).default_backoff());
    // What a relist has seen so far (published at its end).
    let mut listing: Option<Option<LocalFreeze>> = None;
    loop {
        let event = tokio::select! {
            _ = shutdown.cancelled() => return,
            event = events.next() => event,
        };
        let freeze = match event {
            None => return,
            Some(Err(e)) => {
                tracing::warn!(error = %e, configmap = CONFIGMAP, "freeze ConfigMap watch error; retrying with backoff");
                continue;
            }
            Some(Ok(watcher::Event::Init)) => {
                listing = Some(None);
                continue;
            }
            Some(Ok(watcher::Event::InitApply(cm))) => {
                listing = Some(LocalFreeze::from_configmap(&cm));
                continue;
            }
            Some(Ok(watcher::Event::InitDone)) => listing.take().flatten(),
            Some(Ok(watcher::Event::Apply(cm))) => LocalFreeze::from_configmap(&cm),
            Some(Ok(watcher::Event::Delete(_))) => None,
        };
        publish(&ctx, freeze);
    }
}

fn publish(ctx: &Context, freeze: Option<LocalFreeze>) {
    ctx.local_freeze.send_if_modified(|cur| {
        if *cur == freeze {
            return false;
        }
        // The freeze in force ends (deleted, or replaced): remember its end for the fence.
        if let Some(old) = cur.as_ref().filter(|old| freeze.as_ref().is_none_or(|f| f.since != old.since)) {
            let now = ctx.config.clock.now();
            let mut ended = old.to_override();
            ended.expires_at = Some(old.until.filter(|u| *u < now).unwrap_or(now));
            *ctx.local_freeze_ended.lock().unwrap_or_else(|e| e.into_inner()) = Some(ended);
        }
        match &freeze {
            Some(f) => {
                tracing::warn!(since = %f.since, by = %f.by, reason = %f.reason, "frozen in the cluster ({CONFIGMAP} ConfigMap)");
            }
            None => tracing::info!("the freeze made in the cluster ended ({CONFIGMAP} ConfigMap gone)"),
        }
        *cur = freeze.clone();
        true
    });
}
