//! One simulated cluster's storage: objects in memory, one etcd-like global
//! resourceVersion counter, a bounded history of watch events (older resourceVersions
//! are "compacted" → 410 Gone) and a broadcast of new events to live watches.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{Notify, broadcast};

/// A change as delivered to watches.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    pub rv: u64,
    /// Resource type key (`ResourceType::key`).
    pub key: String,
    pub namespace: String,
    pub type_: EventType,
    pub object: Arc<Value>,
    /// The object before a MODIFIED (watches use it to turn selector enter/leave into
    /// ADDED/DELETED, as the watch cache does).
    pub prev: Option<Arc<Value>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

type ObjKey = (String, String);

/// The mutable state, only reachable through [`Store::lock`].
#[derive(Debug)]
pub struct State {
    objects: HashMap<String, BTreeMap<ObjKey, Arc<Value>>>,
    rv: u64,
    history: VecDeque<Arc<WatchEvent>>,
    /// Highest resourceVersion whose event has been dropped from history.
    compacted: u64,
    history_cap: usize,
    tx: broadcast::Sender<Arc<WatchEvent>>,
    touched_flux: bool,
}

/// Thread-safe handle of one cluster's storage.
#[derive(Debug)]
pub struct Store {
    state: Mutex<State>,
    /// Woken after any write to a Flux object (drives the simulator).
    pub flux_changed: Notify,
}

impl Store {
    pub fn new(history_cap: usize) -> Store {
        // Slots are preallocated per cluster; a watcher lagging this far is closed and
        // resumes from history (like a slow watcher of the real watch cache).
        let (tx, _) = broadcast::channel(1024);
        Store {
            state: Mutex::new(State {
                objects: HashMap::new(),
                rv: 1,
                history: VecDeque::new(),
                compacted: 0,
                history_cap: history_cap.max(1),
                tx,
                touched_flux: false,
            }),
            flux_changed: Notify::new(),
        }
    }

    /// Runs `f` atomically on the state; wakes the Flux simulator if `f` wrote a Flux object.
    pub fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        let (r, flux) = {
            let mut guard = self.lock();
            let r = f(&mut guard);
            let flux = std::mem::take(&mut guard.touched_flux);
            (r, flux)
        };
        if flux {
            self.flux_changed.notify_one();
        }
        r
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent-enough data for a test server.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Result of asking for the events after a resourceVersion.
pub enum Since {
    Events(Vec<Arc<WatchEvent>>, broadcast::Receiver<Arc<WatchEvent>>),
    /// The requested resourceVersion was compacted away; carries the oldest still available.
    TooOld(u64),
}

impl State {
    pub fn current_rv(&self) -> u64 {
        self.rv
    }

    pub fn get(&self, key: &str, ns: &str, name: &str) -> Option<Arc<Value>> {
        self.objects
            .get(key)?
            .get(&(ns.to_string(), name.to_string()))
            .cloned()
    }

    /// Objects of one type, sorted by (namespace, name), optionally in one namespace and
    /// starting after `after`.
    pub fn list(&self, key: &str, ns: Option<&str>, after: Option<&ObjKey>) -> Vec<Arc<Value>> {
        let Some(map) = self.objects.get(key) else {
            return Vec::new();
        };
        let iter: Box<dyn Iterator<Item = (&ObjKey, &Arc<Value>)>> = match after {
            Some(a) => Box::new(map.range::<ObjKey, _>((
                std::ops::Bound::Excluded(a.clone()),
                std::ops::Bound::Unbounded,
            ))),
            None => Box::new(map.iter()),
        };
        iter.filter(|((n, _), _)| ns.is_none_or(|want| want == n))
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Stores `obj` (metadata.namespace/name must be set), assigning the next
    /// resourceVersion, and emits ADDED or MODIFIED.
    pub fn put(&mut self, key: &str, mut obj: Value, flux: bool) -> Arc<Value> {
        self.rv += 1;
        obj["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let ns = str_at(&obj, "namespace");
        let name = str_at(&obj, "name");
        let obj = Arc::new(obj);
        let prev = self
            .objects
            .entry(key.to_string())
            .or_default()
            .insert((ns.clone(), name), obj.clone());
        let type_ = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(key, ns, type_, obj.clone(), prev, flux);
        obj
    }

    /// Inserts a prepared object sharing its `Arc` (the seeded CRDs, one copy for every
    /// cluster) when its resourceVersion is still ahead of this store's; a copy through
    /// [`State::put`] otherwise.
    pub fn seed(&mut self, key: &str, obj: Arc<Value>) {
        let rv = obj["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse::<u64>().ok())
            .unwrap_or(0);
        if rv <= self.rv {
            self.put(key, (*obj).clone(), false);
            return;
        }
        self.rv = rv;
        let ns = str_at(&obj, "namespace");
        let name = str_at(&obj, "name");
        let prev = self
            .objects
            .entry(key.to_string())
            .or_default()
            .insert((ns.clone(), name), obj.clone());
        let type_ = if prev.is_some() {
            EventType::Modified
        } else {
            EventType::Added
        };
        self.emit(key, ns, type_, obj, prev, false);
    }

    /// Removes an object; the DELETED event carries a fresh resourceVersion.
    pub fn remove(&mut self, key: &str, ns: &str, name: &str, flux: bool) -> Option<Arc<Value>> {
        let old = self
            .objects
            .get_mut(key)?
            .remove(&(ns.to_string(), name.to_string()))?;
        self.rv += 1;
        let mut obj = (*old).clone();
        obj["metadata"]["resourceVersion"] = Value::String(self.rv.to_string());
        let obj = Arc::new(obj);
        self.emit(
            key,
            ns.to_string(),
            EventType::Deleted,
            obj.clone(),
            None,
            flux,
        );
        Some(obj)
    }

    fn emit(
        &mut self,
        key: &str,
        namespace: String,
        type_: EventType,
        object: Arc<Value>,
        prev: Option<Arc<Value>>,
        flux: bool,
    ) {
        let ev = Arc::new(WatchEvent {
            rv: self.rv,
            key: key.to_string(),
            namespace,
            type_,
            object,
            prev,
        });
        self.history.push_back(ev.clone());
        while self.history.len() > self.history_cap {
            if let Some(old) = self.history.pop_front() {
                self.compacted = old.rv;
            }
        }
        self.touched_flux |= flux;
        // No receivers is fine: nobody is watching.
        let _ = self.tx.send(ev);
    }

    /// Events after `rv` (any type) plus a receiver for everything newer, atomically.
    pub fn since(&self, rv: u64) -> Since {
        if rv < self.compacted {
            return Since::TooOld(self.compacted + 1);
        }
        let start = self.history.partition_point(|e| e.rv <= rv);
        let events = self.history.iter().skip(start).cloned().collect();
        Since::Events(events, self.tx.subscribe())
    }

    /// A receiver for events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<WatchEvent>> {
        self.tx.subscribe()
    }

    /// Drops all history: every earlier resourceVersion becomes too old to watch from.
    pub fn compact(&mut self) {
        self.history.clear();
        self.compacted = self.rv;
    }
}

fn str_at(obj: &Value, field: &str) -> String {
    obj["metadata"][field]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rv_increases_and_history_compacts() {
        let store = Store::new(2);
        store.with(|s| {
            let a = s.put(
                "k",
                json!({"metadata": {"name": "a", "namespace": "n"}}),
                false,
            );
            assert_eq!(a["metadata"]["resourceVersion"], "2");
            s.put(
                "k",
                json!({"metadata": {"name": "b", "namespace": "n"}}),
                false,
            );
            s.put(
                "k",
                json!({"metadata": {"name": "a", "namespace": "n"}}),
                false,
            );
            assert!(matches!(s.since(1), Since::TooOld(3)));
            match s.since(2) {
                Since::Events(ev, _) => {
                    assert_eq!(ev.iter().map(|e| e.rv).collect::<Vec<_>>(), vec![3, 4]);
                    assert_eq!(ev[1].type_, EventType::Modified);
                }
                Since::TooOld(_) => panic!("rv 2 is retained"),
            }
            let d = s.remove("k", "n", "a", false).unwrap();
            assert_eq!(d["metadata"]["resourceVersion"], "5");
            assert_eq!(s.list("k", Some("n"), None).len(), 1);
        });
    }
}
