//! The simulator's floor, measured in the same run before any spoke runs: this
//! process merge-patches the same objects itself with the spoke's own patch
//! bodies (`fleetgate_spoke::suspend::annotations`), as many at a time per cluster as a
//! spoke does (its `--patch-concurrency` default, 8), every cluster at once,
//! and the same watches clock it. No hub, no snapshot, no planning.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::StreamExt as _;
use kube::api::{Api, DynamicObject, Patch, PatchParams};

use super::watch::{self, Key, Observer, State};
use crate::Result;

/// The spoke's default `--patch-concurrency`.
const PER_CLUSTER: usize = 8;

/// Suspends (`close`) or resumes every object of `base` by patching it
/// directly; returns the time until the client's last patch call returned.
pub async fn patch_all(
    clients: &[kube::Client],
    base: &HashMap<Key, State>,
    gate: &str,
    close: bool,
) -> Result<Duration> {
    let t0 = Instant::now();
    let mut per_cluster: Vec<Vec<&Key>> = vec![Vec::new(); clients.len()];
    for key in base.keys() {
        per_cluster[key.cluster].push(key);
    }
    let gates = [gate.to_string()];
    let params = PatchParams {
        field_manager: Some("fleetgate-bench".into()),
        ..PatchParams::default()
    };
    let kinds = watch::governed_kinds();
    let clusters = per_cluster.iter().enumerate().map(|(i, keys)| {
        let client = &clients[i];
        let params = &params;
        let kinds = &kinds;
        let gates = &gates;
        async move {
            futures::stream::iter(keys.iter())
                .map(|key| async move {
                    let ar = kinds
                        .iter()
                        .find(|ar| ar.kind == key.kind)
                        .unwrap_or(&kinds[0]);
                    let api: Api<DynamicObject> =
                        Api::namespaced_with(client.clone(), &key.namespace, ar);
                    let body = if close {
                        fleetgate_spoke::suspend::annotations::suspend_patch(
                            None,
                            gates,
                            Utc::now(),
                        )
                    } else {
                        fleetgate_spoke::suspend::annotations::resume_patch(None, Utc::now())
                    };
                    api.patch(&key.name, params, &Patch::Merge(&body)).await
                })
                .buffer_unordered(PER_CLUSTER)
                .collect::<Vec<_>>()
                .await
        }
    });
    for results in futures::future::join_all(clusters).await {
        for r in results {
            r?;
        }
    }
    Ok(t0.elapsed())
}

/// One direct flip: patch everything, wait (≤ `bound`) until the watches saw
/// it; returns (per-object latencies, last patch call returned).
pub async fn flip(
    observer: &Observer,
    clients: &[kube::Client],
    gate: &str,
    close: bool,
    bound: Duration,
) -> Result<(Vec<Duration>, Duration)> {
    let base = observer.states();
    let t0 = Instant::now();
    let calls = patch_all(clients, &base, gate, close).await?;
    let target = if close {
        watch::suspended
    } else {
        watch::resumed
    };
    let lat = observer.wait_all(&base, t0, target, bound).await?;
    Ok((lat, calls))
}
