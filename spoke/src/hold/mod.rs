//! Object-level holds (`mode: holdObjects`): while a gate is closed, chosen
//! objects *inside* a Kustomization carry kustomize-controller's own opt-out
//! (`kustomize.toolkit.fluxcd.io/reconcile: disabled`) with fleetgate's marker
//! beside it; everything else the Kustomization applies stays real-time.
//! `plan` decides (pure), `enforce` patches, `watch` observes metadata only.

pub mod enforce;
pub mod kinds;
pub mod marks;
pub mod observed;
pub mod plan;
pub mod watch;

use std::collections::{HashMap, HashSet};

use observed::{AppliedObject, HeldKey};

/// Objects the spoke just patched, until their watch catches up (planning from
/// the stale copy would patch again with an old resourceVersion).
#[derive(Default)]
pub struct HeldOverlay(HashMap<HeldKey, (Option<String>, AppliedObject)>);

impl HeldOverlay {
    pub fn record(&mut self, applied: Vec<enforce::HeldApplied>) {
        for a in applied {
            self.0.insert(a.step.key, (a.stale_rv, a.fresh));
        }
    }

    /// Replaces stale copies with the patched ones; forgets entries the watch
    /// has caught up with (or whose objects are gone).
    pub fn apply(&mut self, objects: Vec<AppliedObject>) -> Vec<AppliedObject> {
        let mut seen = HashSet::new();
        let out = objects
            .into_iter()
            .map(|o| match self.0.get(&o.key) {
                Some((stale, fresh)) if *stale == o.resource_version => {
                    seen.insert(o.key.clone());
                    fresh.clone()
                }
                _ => o,
            })
            .collect();
        self.0.retain(|k, _| seen.contains(k));
        self.0.shrink_to_fit();
        out
    }
}
