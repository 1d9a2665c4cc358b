//! The benchmark's own view of the simulated clusters: one watch per cluster
//! and governed kind (Kustomization, HelmRelease) from this process, not the
//! spokes' reports. Each object's `spec.suspend` and
//! `reconcile.fluxcd.io/requestedAt` are kept with the instant this process
//! received the watch event that last changed them, so a flip's per-object
//! latency is "REST call → the API server told a watcher".

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use kube::runtime::{WatchStreamExt as _, watcher};
use tokio::task::JoinSet;

use crate::{Error, Result};

/// The kinds the bench gate governs, as the simulator serves them.
pub fn governed_kinds() -> [ApiResource; 2] {
    [
        ApiResource::from_gvk(&GroupVersionKind::gvk(
            "kustomize.toolkit.fluxcd.io",
            "v1",
            "Kustomization",
        )),
        ApiResource::from_gvk(&GroupVersionKind::gvk(
            "helm.toolkit.fluxcd.io",
            "v2",
            "HelmRelease",
        )),
    ]
}

/// One Flux object of one simulated cluster.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    /// Index of the cluster (its position in the clients given to `start`).
    pub cluster: usize,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// What the flips change on an object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct State {
    pub suspended: bool,
    pub requested_at: Option<String>,
}

impl State {
    fn of(obj: &DynamicObject) -> Self {
        Self {
            suspended: obj
                .data
                .pointer("/spec/suspend")
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            requested_at: obj
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(fleetgate_spoke::suspend::annotations::REQUESTED_AT))
                .cloned(),
        }
    }
}

#[derive(Debug)]
struct Seen {
    state: State,
    /// When this process received the event that made `state`.
    since: Instant,
}

type Map = HashMap<Key, Seen>;

/// Watches on every cluster; dropped = watches end.
pub struct Observer {
    map: Arc<Mutex<Map>>,
    /// Watch errors (each followed by a re-list); none expected.
    errors: Arc<AtomicU64>,
    tasks: JoinSet<()>,
}

fn lock(m: &Mutex<Map>) -> MutexGuard<'_, Map> {
    // A plain map: no invariant a panicking holder could break halfway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// How often a wait looks at the map. Arrival times are taken by the watch
/// tasks when the event arrives, so this bounds only when a wait returns.
const POLL: Duration = Duration::from_millis(5);

impl Observer {
    /// Starts a watch per client (cluster) and governed kind.
    pub fn start(clients: &[kube::Client]) -> Self {
        let map = Arc::new(Mutex::new(Map::new()));
        let errors = Arc::new(AtomicU64::new(0));
        let mut tasks = JoinSet::new();
        for (cluster, client) in clients.iter().enumerate() {
            for ar in governed_kinds() {
                let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
                let map = map.clone();
                let errors = errors.clone();
                let kind = ar.kind.clone();
                tasks.spawn(async move {
                    let mut events = watcher(api, watcher::Config::default())
                        .default_backoff()
                        .boxed();
                    while let Some(event) = events.next().await {
                        let obj = match event {
                            Ok(watcher::Event::Apply(o) | watcher::Event::InitApply(o)) => o,
                            Ok(_) => continue,
                            Err(_) => {
                                // The watcher re-lists after its backoff.
                                errors.fetch_add(1, Ordering::Relaxed);
                                continue;
                            }
                        };
                        let now = Instant::now();
                        let key = Key {
                            cluster,
                            kind: kind.clone(),
                            namespace: obj.metadata.namespace.clone().unwrap_or_default(),
                            name: obj.metadata.name.clone().unwrap_or_default(),
                        };
                        let state = State::of(&obj);
                        let mut map = lock(&map);
                        match map.get_mut(&key) {
                            Some(seen) if seen.state == state => {}
                            Some(seen) => *seen = Seen { state, since: now },
                            None => {
                                map.insert(key, Seen { state, since: now });
                            }
                        }
                    }
                });
            }
        }
        Self { map, errors, tasks }
    }

    /// Watch errors so far.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// Objects seen so far.
    pub fn count(&self) -> usize {
        lock(&self.map).len()
    }

    /// Every object's state now (the baseline a flip is judged against).
    pub fn states(&self) -> HashMap<Key, State> {
        lock(&self.map)
            .iter()
            .map(|(k, s)| (k.clone(), s.state.clone()))
            .collect()
    }

    /// Waits (≤ `bound`) until `n` objects are known.
    pub async fn wait_count(&self, n: usize, bound: Duration) -> Result<()> {
        let deadline = Instant::now() + bound;
        while self.count() < n {
            if Instant::now() > deadline {
                return Err(Error::Timeout(format!(
                    "bench watches saw {} of {n} Flux objects within {bound:?}",
                    self.count()
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Waits (≤ `bound`) until every object of `base` satisfies `done(before,
    /// now)`; returns each one's latency after `t0` (when the watch delivered
    /// the state that satisfied it).
    pub async fn wait_all(
        &self,
        base: &HashMap<Key, State>,
        t0: Instant,
        done: impl Fn(&State, &State) -> bool,
        bound: Duration,
    ) -> Result<Vec<Duration>> {
        let deadline = t0 + bound;
        loop {
            {
                let map = lock(&self.map);
                let mut lat = Vec::with_capacity(base.len());
                for (key, before) in base {
                    match map.get(key) {
                        Some(seen) if done(before, &seen.state) => {
                            lat.push(seen.since.saturating_duration_since(t0));
                        }
                        _ => break,
                    }
                }
                if lat.len() == base.len() {
                    return Ok(lat);
                }
                if Instant::now() > deadline {
                    let missing = base
                        .iter()
                        .filter(|(k, b)| !map.get(*k).is_some_and(|s| done(b, &s.state)))
                        .count();
                    return Err(Error::Timeout(format!(
                        "{missing} of {} objects not changed within {bound:?}",
                        base.len()
                    )));
                }
            }
            tokio::time::sleep(POLL).await;
        }
    }

    /// Ends the watches.
    pub async fn stop(mut self) {
        self.tasks.abort_all();
        while self.tasks.join_next().await.is_some() {}
    }
}

/// Close target: suspended.
pub fn suspended(_before: &State, now: &State) -> bool {
    now.suspended
}

/// Open target: resumed with a new reconcile request.
pub fn resumed(before: &State, now: &State) -> bool {
    !now.suspended && now.requested_at.is_some() && now.requested_at != before.requested_at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_needs_a_new_reconcile_request() {
        let state = |suspended, at: Option<&str>| State {
            suspended,
            requested_at: at.map(str::to_owned),
        };
        let before = state(true, Some("t1"));
        assert!(suspended(&state(false, None), &before));
        assert!(!suspended(&before, &state(false, None)));
        assert!(resumed(&before, &state(false, Some("t2"))));
        assert!(!resumed(&before, &state(false, Some("t1"))), "old request");
        assert!(!resumed(&before, &state(false, None)));
        assert!(!resumed(&before, &state(true, Some("t2"))));
    }
}
