//! Spoke token checks, batched: spokes connecting together (a reconnect storm
//! brings thousands at once) are checked with one query per batch of up to
//! [`BATCH`] tokens instead of one query each, which had taken every pooled
//! connection for seconds after a restart (fleetgate-bench storm). Whoever
//! arrives while a check runs waits for the next; an idle hub checks a lone
//! spoke at once. A batch whose query fails is checked one by one, so each
//! spoke gets its own error.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::auth::{hash_token, hashes_equal};
use crate::db::clusters::{self, IdentityBinding};
use crate::service::Service;
use crate::service::clusters::identity::SpokeSignIn;
use crate::service::types::Cluster;
use crate::{Error, Result};

/// Tokens per check query at most.
const BATCH: usize = 500;

/// Check queries running at once.
const CHECKERS: usize = 2;

/// A check's answer: `None` if its batch failed (check alone), else the
/// token's cluster if the token is known.
type Answer = Option<Option<Cluster>>;

#[derive(Default)]
struct Queue {
    waiting: Vec<(Vec<u8>, oneshot::Sender<Answer>)>,
    checkers: usize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A plain queue: no invariant a panicking holder could break halfway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What the binding lookup of a cluster answers: `None` if no cluster has that
/// name, `Some((None, _))` if it signs in with a cluster token; with the cluster's
/// credential hash read with it.
type Found = Option<(Option<IdentityBinding>, Vec<u8>)>;

/// Spokes waiting for their cluster's binding (`None` to a waiter: its batch
/// failed, look up alone).
#[derive(Default)]
struct Lookups {
    waiting: Vec<(String, oneshot::Sender<Option<Found>>)>,
    readers: usize,
}

/// Batched spoke token checks and binding lookups of one replica.
#[derive(Clone)]
pub struct SpokeAuth {
    service: Service,
    queue: Arc<Mutex<Queue>>,
    lookups: Arc<Mutex<Lookups>>,
}

impl std::fmt::Debug for SpokeAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpokeAuth").finish_non_exhaustive()
    }
}

impl SpokeAuth {
    /// Checks against `service`'s database.
    pub fn new(service: Service) -> Self {
        Self {
            service,
            queue: Arc::default(),
            lookups: Arc::default(),
        }
    }

    /// Checks a spoke's JWT as [`Service::authenticate_spoke_jwt`] does, with its
    /// cluster's binding read in a batch with the other spokes signing in meanwhile.
    pub async fn authenticate_jwt(&self, cluster: &str, token: &str) -> Result<SpokeSignIn> {
        let found = self.binding(cluster).await?;
        self.service.verify_spoke_jwt(cluster, token, found).await
    }

    /// The identity binding of `cluster`, as [`clusters::identity_with_hash`] answers it.
    async fn binding(&self, cluster: &str) -> Result<Found> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut q = lock(&self.lookups);
            q.waiting.push((cluster.to_string(), tx));
            let start = q.readers < CHECKERS;
            q.readers += usize::from(start);
            start
        };
        if start {
            tokio::spawn(self.clone().read_bindings());
        }
        match rx.await {
            Ok(Some(found)) => Ok(found),
            _ => {
                let mut conn = self.service.conn().await?;
                clusters::identity_with_hash(&mut conn, cluster).await
            }
        }
    }

    /// Reads waiting clusters' bindings in batches until none is left.
    async fn read_bindings(self) {
        /// Counts the reader out however it ends.
        struct Running(Arc<Mutex<Lookups>>);
        impl Drop for Running {
            fn drop(&mut self) {
                lock(&self.0).readers -= 1;
            }
        }
        let _running = Running(self.lookups.clone());
        loop {
            let batch: Vec<(String, oneshot::Sender<Option<Found>>)> = {
                let mut q = lock(&self.lookups);
                let n = q.waiting.len().min(BATCH);
                q.waiting.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            let names: Vec<String> = batch
                .iter()
                .map(|(c, _)| c.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let found = async {
                let mut conn = self.service.conn().await?;
                clusters::identities(&mut conn, &names).await
            }
            .await;
            match found {
                Ok(found) => {
                    for (cluster, tx) in batch {
                        let _ = tx.send(Some(found.get(&cluster).cloned()));
                    }
                }
                Err(e) => {
                    tracing::warn!(clusters = names.len(), error = %e, "batched spoke binding lookup failed; looking up one by one");
                    for (_, tx) in batch {
                        let _ = tx.send(None);
                    }
                }
            }
        }
    }

    /// The cluster `token` belongs to, as [`Service::authenticate_spoke`]
    /// answers it (unknown tokens: `Unauthenticated`).
    pub async fn authenticate(&self, token: &str) -> Result<Cluster> {
        let (tx, rx) = oneshot::channel();
        let start = {
            let mut q = lock(&self.queue);
            q.waiting.push((hash_token(token), tx));
            let start = q.checkers < CHECKERS;
            q.checkers += usize::from(start);
            start
        };
        if start {
            tokio::spawn(self.clone().check_waiting());
        }
        match rx.await {
            Ok(Some(Some(cluster))) => Ok(cluster),
            Ok(Some(None)) => Err(Error::Unauthenticated("unknown spoke token".into())),
            _ => self.service.authenticate_spoke(token).await,
        }
    }

    /// Checks waiting tokens in batches until none is left.
    async fn check_waiting(self) {
        /// Counts the checker out however it ends.
        struct Running(Arc<Mutex<Queue>>);
        impl Drop for Running {
            fn drop(&mut self) {
                lock(&self.0).checkers -= 1;
            }
        }
        let _running = Running(self.queue.clone());
        loop {
            let batch: Vec<(Vec<u8>, oneshot::Sender<Answer>)> = {
                let mut q = lock(&self.queue);
                let n = q.waiting.len().min(BATCH);
                q.waiting.drain(..n).collect()
            };
            if batch.is_empty() {
                return;
            }
            let hashes: Vec<Vec<u8>> = batch
                .iter()
                .map(|(h, _)| h.clone())
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            let found = async {
                let mut conn = self.service.conn().await?;
                clusters::by_token_hashes(&mut conn, &hashes, self.service.now()).await
            }
            .await;
            match found {
                Ok(found) => {
                    let by_hash: HashMap<&[u8], &Cluster> = found
                        .iter()
                        .map(|(row, stored)| (stored.as_slice(), row))
                        .collect();
                    for (presented, tx) in batch {
                        // Found by the hash (as the one-by-one check's index
                        // lookup), confirmed in constant time like it.
                        let cluster = by_hash
                            .get_key_value(presented.as_slice())
                            .filter(|(stored, _)| hashes_equal(stored, &presented))
                            .map(|(_, row)| (*row).clone());
                        let _ = tx.send(Some(cluster));
                    }
                }
                Err(e) => {
                    tracing::warn!(tokens = hashes.len(), error = %e, "batched spoke token check failed; checking one by one");
                    for (_, tx) in batch {
                        let _ = tx.send(None);
                    }
                }
            }
        }
    }
}
