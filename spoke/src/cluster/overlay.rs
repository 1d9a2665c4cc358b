//! Objects the spoke just patched, until their watch catches up: planning from
//! the stale watched copy would patch again with an old resourceVersion. One
//! implementation for Flux objects and for held objects inside Kustomizations.

use std::{
    collections::{HashMap, HashSet},
    hash::Hash,
};

use crate::{
    cluster::observed::{ObjectKey, ObservedObject},
    hold::observed::{AppliedObject, HeldKey},
};

/// An observed object with an identity and a resourceVersion.
pub trait Versioned: Clone {
    type Key: Clone + Eq + Hash;
    fn key(&self) -> &Self::Key;
    fn resource_version(&self) -> Option<&str>;
}

impl Versioned for ObservedObject {
    type Key = ObjectKey;
    fn key(&self) -> &ObjectKey {
        &self.key
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
}

impl Versioned for AppliedObject {
    type Key = HeldKey;
    fn key(&self) -> &HeldKey {
        &self.key
    }
    fn resource_version(&self) -> Option<&str> {
        self.resource_version.as_deref()
    }
}

/// Patched copies keyed by object, with the resourceVersion they replace.
pub struct Overlay<T: Versioned>(pub(crate) HashMap<T::Key, (Option<String>, T)>);

impl<T: Versioned> Default for Overlay<T> {
    fn default() -> Self {
        Overlay(HashMap::new())
    }
}

impl<T: Versioned> Overlay<T> {
    /// Records `fresh` (what a patch returned) as replacing `stale_rv`.
    pub fn record(&mut self, stale_rv: Option<String>, fresh: T) {
        self.0.insert(fresh.key().clone(), (stale_rv, fresh));
    }

    /// Replaces stale copies with the patched ones; forgets entries the watch
    /// has caught up with (or whose objects are gone).
    pub fn apply(&mut self, objects: Vec<T>) -> Vec<T> {
        let mut seen = HashSet::new();
        let out = objects
            .into_iter()
            .map(|o| match self.0.get(o.key()) {
                Some((stale, fresh)) if stale.as_deref() == o.resource_version() => {
                    seen.insert(o.key().clone());
                    fresh.clone()
                }
                _ => o,
            })
            .collect();
        self.0.retain(|k, _| seen.contains(k));
        // A mass suspend or hold fills it with every object; do not keep that capacity.
        self.0.shrink_to_fit();
        out
    }
}
