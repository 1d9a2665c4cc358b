//! Spoke token checks, batched: spokes connecting together (a reconnect storm
//! brings thousands at once) are checked with one query per batch of up to
//! [`BATCH`] tokens instead of one query each, which had taken every pooled
//! connection for seconds after a restart (fleetgate-bench storm). Whoever
//! arrives while a check runs waits for the next; an idle hub checks a lone
//! spoke at once. A batch whose query fails is checked one by one, so each
//! spoke gets its own error.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

use crate::auth::{hash_token, hashes_equal};
use crate::db::clusters::{self, IdentityBinding};
use crate::service::Service;
use crate::service::clusters::identity::SpokeSignIn;
use crate::service::types::Cluster;
use crate::{Error, Result};

/// Keys per query at most.
const BATCH: usize = 500;

/// Queries running at once, per kind of lookup.
const CHECKERS: usize = 2;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A plain queue: no invariant a panicking holder could break halfway.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Callers waiting for one kind of lookup, answered in batches: each gets
/// `Some(answer)`, or `None` when its batch's query failed (it then looks up alone).
struct Batched<K, A> {
    waiting: Vec<(K, oneshot::Sender<Option<A>>)>,
    readers: usize,
}

impl<K, A> Default for Batched<K, A> {
    fn default() -> Self {
        Self {
            waiting: Vec::new(),
            readers: 0,
        }
    }
}

/// Waits for `key`'s answer from `queue`, starting a reader when fewer than
/// [`CHECKERS`] run. A reader takes up to [`BATCH`] waiting keys at a time, runs
/// `query` once for them (distinct, sorted) and answers each waiter with
/// `answer(result, its key)`, until nobody waits.
async fn ask<K, A, R, Q, Fut>(
    queue: &Arc<Mutex<Batched<K, A>>>,
    key: K,
    what: &'static str,
    query: Q,
    answer: fn(&R, &K) -> A,
) -> Option<A>
where
    K: Clone + Ord + Send + 'static,
    A: Send + 'static,
    R: Send + 'static,
    Q: Fn(Vec<K>) -> Fut + Send + 'static,
    Fut: Future<Output = Result<R>> + Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let start = {
        let mut q = lock(queue);
        q.waiting.push((key, tx));
        let start = q.readers < CHECKERS;
        q.readers += usize::from(start);
        start
    };
    if start {
        tokio::spawn(read_batches(queue.clone(), what, query, answer));
    }
    rx.await.ok().flatten()
}

/// The reader of [`ask`].
async fn read_batches<K, A, R, Q, Fut>(
    queue: Arc<Mutex<Batched<K, A>>>,
    what: &'static str,
    query: Q,
    answer: fn(&R, &K) -> A,
) where
    K: Clone + Ord,
    Q: Fn(Vec<K>) -> Fut,
    Fut: Future<Output = Result<R>>,
{
    /// Counts the reader out however it ends.
    struct Running<'a, K, A>(&'a Mutex<Batched<K, A>>);
    impl<K, A> Drop for Running<'_, K, A> {
        fn drop(&mut self) {
            lock(self.0).readers -= 1;
        }
    }
    let _running = Running(&queue);
    loop {
        let batch: Vec<(K, oneshot::Sender<Option<A>>)> = {
            let mut q = lock(&queue);
            let n = q.waiting.len().min(BATCH);
            q.waiting.drain(..n).collect()
        };
        if batch.is_empty() {
            return;
        }
        let keys: Vec<K> = batch
            .iter()
            .map(|(k, _)| k.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let n = keys.len();
        match query(keys).await {
            Ok(found) => {
                for (key, tx) in batch {
                    let _ = tx.send(Some(answer(&found, &key)));
                }
            }
            Err(e) => {
                tracing::warn!(keys = n, error = %e, "batched spoke {what} failed; looking up one by one");
                for (_, tx) in batch {
                    let _ = tx.send(None);
                }
            }
        }
    }
}

/// What the binding lookup of a cluster answers: `None` if no cluster has that
/// name, `Some((None, _))` if it signs in with a cluster token; with the cluster's
/// credential hash read with it.
type Found = Option<(Option<IdentityBinding>, Vec<u8>)>;

/// Batched spoke token checks and binding lookups of one replica.
#[derive(Clone)]
pub struct SpokeAuth {
    service: Service,
    /// Token hashes → the token's cluster if the token is known.
    tokens: Arc<Mutex<Batched<Vec<u8>, Option<Cluster>>>>,
    /// Cluster names → their bindings.
    bindings: Arc<Mutex<Batched<String, Found>>>,
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
            tokens: Arc::default(),
            bindings: Arc::default(),
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
        let service = self.service.clone();
        let query = move |names: Vec<String>| {
            let service = service.clone();
            async move {
                let mut conn = service.conn().await?;
                clusters::identities(&mut conn, &names).await
            }
        };
        let answer = |found: &HashMap<String, (Option<IdentityBinding>, Vec<u8>)>,
                      name: &String| { found.get(name).cloned() };
        match ask(
            &self.bindings,
            cluster.to_string(),
            "binding lookup",
            query,
            answer,
        )
        .await
        {
            Some(found) => Ok(found),
            None => {
                let mut conn = self.service.conn().await?;
                clusters::identity_with_hash(&mut conn, cluster).await
            }
        }
    }

    /// The cluster `token` belongs to, as [`Service::authenticate_spoke`]
    /// answers it (unknown tokens: `Unauthenticated`).
    pub async fn authenticate(&self, token: &str) -> Result<Cluster> {
        let service = self.service.clone();
        let query = move |hashes: Vec<Vec<u8>>| {
            let service = service.clone();
            async move {
                let mut conn = service.conn().await?;
                let found = clusters::by_token_hashes(&mut conn, &hashes, service.now()).await?;
                Ok(found
                    .into_iter()
                    .map(|(row, stored)| (stored, row))
                    .collect::<HashMap<Vec<u8>, Cluster>>())
            }
        };
        match ask(&self.tokens, hash_token(token), "token check", query, known).await {
            Some(Some(cluster)) => Ok(cluster),
            Some(None) => Err(Error::Unauthenticated("unknown spoke token".into())),
            None => self.service.authenticate_spoke(token).await,
        }
    }
}

/// The cluster whose stored hash is `presented`: found by the hash (as the
/// one-by-one check's index lookup), confirmed in constant time like it.
fn known(found: &HashMap<Vec<u8>, Cluster>, presented: &Vec<u8>) -> Option<Cluster> {
    found
        .get_key_value(presented)
        .filter(|(stored, _)| hashes_equal(stored, presented))
        .map(|(_, row)| row.clone())
}
