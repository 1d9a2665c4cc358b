//! Which wave of a rollout each in-scope cluster belongs to: a pure, deterministic function of
//! the rollout and the clusters' names and labels, so the hub, the CLI's preview and the tests
//! agree. The hub runs it once when a rollout starts and persists the result; clusters that
//! come into scope later join a wave that has not started (the hub decides which).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use crate::Rollout;

/// An in-scope cluster as the wave assignment sees it.
#[derive(Debug, Clone, Copy)]
pub struct WaveCandidate<'a> {
    pub name: &'a str,
    pub labels: &'a BTreeMap<String, String>,
}

/// The clusters of each wave (`result[i]` is wave `i`), each list in rollout order: by
/// `sortLabel` (numbers numerically first, then other values, then clusters without the label),
/// then by name. Every candidate lands in exactly one wave: waves are filled in order, each
/// taking only clusters no earlier wave took — `clusters` those it names or selects, `count`
/// the first N in rollout order, `percent` that share (rounded up) — and the last wave takes
/// whatever is left. Duplicate names count once. The result does not depend on the order of
/// `clusters`.
pub fn assign_waves(rollout: &Rollout, clusters: &[WaveCandidate<'_>]) -> Vec<Vec<String>> {
    let mut order: Vec<&WaveCandidate<'_>> = clusters.iter().collect();
    order.sort_by(|a, b| rollout_order(rollout, a, b));
    order.dedup_by(|a, b| a.name == b.name);
    let mut placed = vec![false; order.len()];
    let mut waves: Vec<Vec<String>> = Vec::with_capacity(rollout.waves.len());
    let last = rollout.waves.len().saturating_sub(1);
    for (i, wave) in rollout.waves.iter().enumerate() {
        let unplaced: Vec<usize> = (0..order.len()).filter(|k| !placed[*k]).collect();
        let take: Vec<usize> = if i == last {
            unplaced
        } else if let Some(scope) = &wave.clusters {
            unplaced
                .into_iter()
                .filter(|k| scope.matches(order[*k].name, order[*k].labels))
                .collect()
        } else if let Some(n) = wave.count {
            unplaced.into_iter().take(n as usize).collect()
        } else if let Some(p) = wave.percent {
            let n = (unplaced.len() * p as usize).div_ceil(100);
            unplaced.into_iter().take(n).collect()
        } else {
            Vec::new()
        };
        for k in &take {
            placed[*k] = true;
        }
        waves.push(
            take.into_iter()
                .map(|k| order[k].name.to_string())
                .collect(),
        );
    }
    waves
}

/// The rollout order of two clusters: sort label, then name.
fn rollout_order(rollout: &Rollout, a: &WaveCandidate<'_>, b: &WaveCandidate<'_>) -> Ordering {
    let key = |c: &WaveCandidate<'_>| {
        let value = rollout
            .sort_label
            .as_ref()
            .and_then(|l| c.labels.get(l.as_str()));
        match value {
            Some(v) => match v.parse::<u64>() {
                Ok(n) => (0, n, v.clone()),
                Err(_) => (1, 0, v.clone()),
            },
            None => (2, 0, String::new()),
        }
    };
    key(a).cmp(&key(b)).then_with(|| a.name.cmp(b.name))
}
