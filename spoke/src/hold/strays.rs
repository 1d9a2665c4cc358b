//! Objects a targeted Kustomization's inventory lists that the watches do not
//! see: the held-kind watches select the owner labels (cheap: only what Flux
//! applied), and someone may have removed those labels from an object that
//! kustomize-controller still manages (a held object is never re-applied, so
//! its labels stay removed). The spoke reads such objects by name, metadata
//! only, and keeps the copy for one resync interval: planning from a copy that
//! is stale is safe, every patch carries the resourceVersion it was planned
//! from (409 → re-read, re-plan). Usually there are none, and nothing is read.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use fleetgate_policy::GroupKind;
use futures::StreamExt;
use tokio::time::Instant;

use super::{
    inventory::Entry,
    observed::{AppliedObject, HeldKey},
    plan::HoldPlanner,
};
use crate::{context::Context, error::Error};

/// Inventory-listed objects read by name, with when they were read (`None`:
/// not found).
#[derive(Default)]
pub struct Strays {
    cache: HashMap<HeldKey, (Instant, Option<AppliedObject>)>,
}

impl Strays {
    /// The objects listed in the inventories `planner` indexed that are not
    /// among `watched`, of the kinds the spoke watches.
    pub async fn read(
        &mut self,
        ctx: &Context,
        planner: &HoldPlanner<'_>,
        watched: &[AppliedObject],
    ) -> Vec<AppliedObject> {
        let known: HashSet<Entry<'_>> = watched
            .iter()
            .map(|o| {
                let k = &o.key;
                (&*k.namespace, &*k.name, &*k.kind.group, &*k.kind.kind)
            })
            .collect();
        let missing = planner.unwatched_entries(|e| known.contains(e));
        if missing.is_empty() && self.cache.is_empty() {
            return Vec::new();
        }
        let now = Instant::now();
        let ttl = ctx.config.resync_interval;
        let mut fresh = HashMap::with_capacity(missing.len());
        let mut to_read = Vec::new();
        for (ns, name, group, kind) in missing {
            let Some(gk) = ctx.held.watched_kind(group, kind).await else {
                continue;
            };
            let key = HeldKey {
                kind: gk,
                namespace: Arc::from(ns),
                name: Arc::from(name),
            };
            match self.cache.remove(&key) {
                Some((at, obj)) if now.duration_since(at) < ttl => {
                    fresh.insert(key, (at, obj));
                }
                _ => to_read.push(key),
            }
        }
        let read: Vec<(HeldKey, Option<AppliedObject>)> = futures::stream::iter(to_read)
            .map(|key| async move {
                let obj = read_one(ctx, &key).await;
                (key, obj)
            })
            .buffer_unordered(ctx.config.patch_concurrency.max(1))
            .collect()
            .await;
        for (key, obj) in read {
            fresh.insert(key, (now, obj));
        }
        self.cache = fresh;
        let mut out: Vec<AppliedObject> =
            self.cache.values().filter_map(|(_, o)| o.clone()).collect();
        out.sort_by(|a, b| a.key.cmp(&b.key));
        out
    }
}

async fn read_one(ctx: &Context, key: &HeldKey) -> Option<AppliedObject> {
    let gk: &Arc<GroupKind> = &key.kind;
    let api = ctx.held.api(gk, &key.namespace).await?;
    match api.get_metadata_opt(&key.name).await {
        Ok(meta) => meta.map(|m| AppliedObject::from_meta(gk, &m.metadata)),
        Err(e) => {
            let e = Error::from(e);
            ctx.metrics.error(&e);
            tracing::warn!(object = %key, error = %e, "could not read an inventory-listed object");
            None
        }
    }
}
