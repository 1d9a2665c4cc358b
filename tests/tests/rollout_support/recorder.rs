//! Watches the Kustomization `apps` of every simulated cluster and keeps, in the order they
//! were seen, each change of its `lastAppliedRevision` (the proof of which revision reached
//! which cluster, and when relative to the others) and its latest `spec.suspend`.

use std::sync::{Arc, Mutex};

use fleetgate_tests::SimCluster;
use futures::StreamExt;
use kube::{
    Client,
    api::DynamicObject,
    runtime::{WatchStreamExt, watcher},
};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::{WAIT, kustomizations};

/// What one cluster's Kustomization shows now.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Seen {
    pub applied: Option<String>,
    /// `lastAttemptedRevision`: set before the apply, so a failed revision shows here.
    pub attempted: Option<String>,
    pub suspended: bool,
    /// The Ready condition's status (`True`, `False`, `Unknown`).
    pub ready: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    /// (cluster index, revision) in the order the revisions were first applied.
    applied: Vec<(usize, String)>,
    /// (cluster index, revision) in the order the revisions were first attempted.
    attempted: Vec<(usize, String)>,
    latest: Vec<Seen>,
}

/// The recorder; its watch tasks stop when it is dropped.
pub struct Recorder {
    inner: Arc<Mutex<Inner>>,
    changed: watch::Receiver<u64>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

fn seen(o: &DynamicObject) -> Seen {
    Seen {
        applied: o.data["status"]["lastAppliedRevision"]
            .as_str()
            .map(str::to_owned),
        attempted: o.data["status"]["lastAttemptedRevision"]
            .as_str()
            .map(str::to_owned),
        suspended: o.data["spec"]["suspend"].as_bool().unwrap_or(false),
        ready: o.data["status"]["conditions"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
            .and_then(|c| c["status"].as_str())
            .map(str::to_owned),
    }
}

impl Recorder {
    pub fn start(clusters: &[SimCluster], clients: &[Client]) -> Recorder {
        let inner = Arc::new(Mutex::new(Inner {
            applied: Vec::new(),
            attempted: Vec::new(),
            latest: vec![Seen::default(); clusters.len()],
        }));
        let (tx, changed) = watch::channel(0u64);
        let tx = Arc::new(tx);
        let tasks = clients
            .iter()
            .enumerate()
            .map(|(i, client)| {
                let (inner, tx, api) = (inner.clone(), tx.clone(), kustomizations(client));
                tokio::spawn(async move {
                    // With a backoff: once the simulator is gone, a retry loop without one
                    // never yields, and the test's runtime could not shut down.
                    let s = watcher::watch_object(api, "apps").default_backoff();
                    let mut s = std::pin::pin!(s.boxed());
                    while let Some(ev) = s.next().await {
                        let Ok(Some(o)) = ev else { continue };
                        let now = seen(&o);
                        let mut g = inner.lock().unwrap();
                        if let Some(r) = &now.applied
                            && g.latest[i].applied.as_ref() != Some(r)
                        {
                            g.applied.push((i, r.clone()));
                        }
                        if let Some(r) = &now.attempted
                            && g.latest[i].attempted.as_ref() != Some(r)
                        {
                            g.attempted.push((i, r.clone()));
                        }
                        g.latest[i] = now;
                        drop(g);
                        tx.send_modify(|n| *n += 1);
                    }
                })
            })
            .collect();
        Recorder {
            inner,
            changed,
            tasks,
        }
    }

    /// Cluster `i` now.
    pub fn latest(&self, i: usize) -> Seen {
        self.inner.lock().unwrap().latest[i].clone()
    }

    /// Every revision cluster `i` applied, in order.
    pub fn history(&self, i: usize) -> Vec<String> {
        let g = self.inner.lock().unwrap();
        g.applied
            .iter()
            .filter(|(c, _)| *c == i)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// Every revision cluster `i` attempted (applied or failed), in order.
    pub fn attempted(&self, i: usize) -> Vec<String> {
        let g = self.inner.lock().unwrap();
        g.attempted
            .iter()
            .filter(|(c, _)| *c == i)
            .map(|(_, r)| r.clone())
            .collect()
    }

    /// The clusters that applied `revision`, in the order they did.
    pub fn order_of(&self, revision: &str) -> Vec<usize> {
        let g = self.inner.lock().unwrap();
        g.applied
            .iter()
            .filter(|(_, r)| r == revision)
            .map(|(c, _)| *c)
            .collect()
    }

    /// Waits (bounded) until `pred` holds for cluster `i`.
    pub async fn wait(&self, i: usize, what: &str, pred: impl Fn(&Seen) -> bool) -> Seen {
        let mut rx = self.changed.clone();
        let fut = async {
            loop {
                let now = self.latest(i);
                if pred(&now) {
                    return now;
                }
                rx.changed().await.expect("recorder running");
            }
        };
        tokio::time::timeout(WAIT, fut)
            .await
            .unwrap_or_else(|_| panic!("timed out: cluster {i} {what}: {:?}", self.latest(i)))
    }

    /// Waits until cluster `i` applied `revision`.
    pub async fn wait_applied(&self, i: usize, revision: &str) {
        self.wait(i, &format!("applies {revision}"), |s| {
            s.applied.as_deref() == Some(revision)
        })
        .await;
    }

    /// Waits until cluster `i`'s Kustomization is suspended or not.
    pub async fn wait_suspended(&self, i: usize, suspended: bool) {
        self.wait(i, &format!("suspended = {suspended}"), |s| {
            s.suspended == suspended
        })
        .await;
    }
}
