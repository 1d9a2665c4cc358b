//! The spoke's reflector: per watched kind, the planner's view of every object
//! (`ObservedObject`), kept up to date from watch events. Holding only the
//! extracted fields, not whole objects, and sharing what repeats across them
//! ([`Shared`]) keeps the spoke's memory small.

use std::{
    collections::BTreeMap,
    sync::{Arc, PoisonError, RwLock},
};

use fleetgate_policy::FluxKind;
use kube::runtime::watcher::Event;

use crate::cluster::flux_object::FluxObject;
use crate::cluster::observed::{ObjectKey, ObservedObject, Shared};

type Objects = BTreeMap<ObjectKey, ObservedObject>;

/// The objects of one kind as last listed and watched. Readers share it.
#[derive(Default)]
pub struct ObjectStore {
    objects: RwLock<Objects>,
}

impl ObjectStore {
    /// A copy of every object in the store.
    pub fn state(&self) -> Vec<ObservedObject> {
        self.objects
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .cloned()
            .collect()
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Objects> {
        self.objects.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Feeds one kind's watch events into its store. A re-list is buffered and
/// swapped in whole at `InitDone`, so readers never see a partial list.
pub struct StoreWriter {
    kind: FluxKind,
    store: Arc<ObjectStore>,
    buffer: Objects,
    shared: Shared,
}

impl StoreWriter {
    pub fn new(kind: FluxKind) -> Self {
        StoreWriter {
            kind,
            store: Arc::default(),
            buffer: Objects::new(),
            shared: Shared::default(),
        }
    }

    /// The store this writer fills.
    pub fn reader(&self) -> Arc<ObjectStore> {
        self.store.clone()
    }

    /// Applies one watch event. Returns true when it completed a (re-)list.
    pub fn apply(&mut self, event: Event<FluxObject>) -> bool {
        match event {
            Event::Apply(obj) => {
                let o = ObservedObject::from_flux(self.kind, obj, &mut self.shared);
                let live = {
                    let mut store = self.store.write();
                    store.insert(o.key.clone(), o);
                    store.len()
                };
                // Replaced revisions and conditions pile up in the shared
                // sets; drop them once they outnumber the objects.
                if self.shared.len() > 4 * live + 64 {
                    self.shared.sweep();
                }
            }
            Event::Delete(obj) => {
                let o = ObservedObject::from_flux(self.kind, obj, &mut self.shared);
                self.store.write().remove(&o.key);
            }
            Event::Init => self.buffer.clear(),
            Event::InitApply(obj) => {
                let o = ObservedObject::from_flux(self.kind, obj, &mut self.shared);
                self.buffer.insert(o.key.clone(), o);
            }
            Event::InitDone => {
                *self.store.write() = std::mem::take(&mut self.buffer);
                self.shared.sweep();
                return true;
            }
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ks(name: &str, rv: &str) -> FluxObject {
        crate::cluster::flux_object::from_value(json!({
            "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": rv},
            "spec": {"suspend": false}
        }))
        .unwrap()
    }

    fn names_rvs(store: &ObjectStore) -> Vec<(String, String)> {
        store
            .state()
            .into_iter()
            .map(|o| (o.key.name, o.resource_version.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn relist_is_swapped_in_whole_and_drops_vanished_objects() {
        let mut w = StoreWriter::new(FluxKind::Kustomization);
        let store = w.reader();
        assert!(!w.apply(Event::Init));
        assert!(!w.apply(Event::InitApply(ks("a", "1"))));
        assert!(!w.apply(Event::InitApply(ks("b", "1"))));
        // Nothing visible until the list is complete.
        assert!(store.state().is_empty());
        assert!(w.apply(Event::InitDone));
        assert_eq!(
            names_rvs(&store),
            [("a".into(), "1".into()), ("b".into(), "1".into())]
        );

        w.apply(Event::Apply(ks("a", "2")));
        w.apply(Event::Apply(ks("c", "3")));
        w.apply(Event::Delete(ks("b", "1")));
        assert_eq!(
            names_rvs(&store),
            [("a".into(), "2".into()), ("c".into(), "3".into())]
        );

        // A re-list keeps serving the old view until done, then replaces it.
        w.apply(Event::Init);
        w.apply(Event::InitApply(ks("c", "4")));
        assert_eq!(store.state().len(), 2);
        assert!(w.apply(Event::InitDone));
        assert_eq!(names_rvs(&store), [("c".into(), "4".into())]);
    }
}
