//! A cluster's desired-state snapshot: the gates applying to the cluster
//! (manifest JSON + version) and the live overrides that apply to it, stamped
//! with the cluster's `desired_revision` — projected from a fleet read, held
//! by the fan-out index, converted to protobuf in `grpc::convert`.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, LazyLock, Mutex};

use fleetgate_policy::Override;

use super::inputs::FleetInputs;
use crate::{Error, Result};

/// One gate in a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotGate {
    /// metadata.name.
    pub name: String,
    /// The gate's version.
    pub version: u64,
    /// The manifest as JSON text, shared by every cluster's snapshot of this
    /// gate version (one copy per replica, not one per connected spoke).
    pub manifest_json: Arc<str>,
    /// For a gate with `spec.rollout`: this cluster's release for the gate's current open
    /// period (`None`: the rollout keeps it closed).
    pub release: Option<Release>,
    /// For a gate with `spec.rollout`: the wave its current rollout placed this cluster in,
    /// while that wave is not released (shown by the spoke, never opens anything).
    pub waiting: Option<Waiting>,
    /// For a gate with `spec.rollout`: the latest end of a closing override of the gate on
    /// this cluster (`GateRule.opening_fence`): no open period began before it.
    pub opening_fence: Option<chrono::DateTime<chrono::Utc>>,
    /// The occurrences of the gate's `calendar.url` windows (`GateRule.calendars`), shared by
    /// every cluster's snapshot of the gate.
    pub calendars: Arc<[fleetgate_policy::FeedOccurrences]>,
}

/// The wave a cluster waits for, in a snapshot (`GateRule.waiting`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    pub rollout_id: String,
    /// 0-based.
    pub wave: u32,
    pub wave_name: String,
}

/// A rollout release in a snapshot (`GateRule.release`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub rollout_id: String,
    /// When the cluster's current open period began: the spoke opens the gate only while
    /// its own evaluation agrees.
    pub opening_at: chrono::DateTime<chrono::Utc>,
    /// 0-based.
    pub wave: u32,
}

/// A cluster's full desired state at `revision`.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    /// The cluster's `desired_revision` when this was read.
    pub revision: u64,
    /// The cluster's name.
    pub cluster: String,
    /// Gates whose scope includes the cluster, ordered by name.
    pub gates: Vec<SnapshotGate>,
    /// Live overrides (active or upcoming) for those gates and this cluster,
    /// ordered by (created_at, id).
    pub overrides: Vec<Override>,
    /// The cluster's spoke token hash when it was read, so a stream woken by
    /// a change can re-check its token without a query (`None`: unknown).
    pub token_hash: Option<Arc<[u8]>>,
}

impl Snapshot {
    /// Builds a snapshot and puts gates and overrides in a canonical order, so
    /// two reads of the same state compare equal.
    pub fn new(
        revision: u64,
        cluster: String,
        mut gates: Vec<SnapshotGate>,
        mut overrides: Vec<Override>,
    ) -> Self {
        gates.sort_by(|a, b| a.name.cmp(&b.name));
        overrides.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        // Kept for as long as the cluster's spoke is connected: no spare capacity (a vector
        // grown by one push holds room for four, ~0.5 KiB of hub memory per connected spoke
        // with one gate). Free where the vectors come exactly sized, as the fleet read
        // (`snapshots`) hands them: reallocating here was its cost with many gates.
        gates.shrink_to_fit();
        overrides.shrink_to_fit();
        Self {
            revision,
            cluster,
            gates,
            overrides,
            token_hash: None,
        }
    }

    /// The same snapshot, carrying the cluster's token hash.
    pub fn with_token_hash(mut self, hash: Vec<u8>) -> Self {
        self.token_hash = Some(hash.into());
        self
    }

    /// Same gates and overrides, regardless of revision: whether a spoke
    /// holding `other` would have to be sent `self`.
    pub fn same_content(&self, other: &Self) -> bool {
        // Overrides first: what a flip changes.
        self.cluster == other.cluster
            && self.overrides == other.overrides
            && self.gates == other.gates
    }
}

/// The snapshot of every cluster of `inputs`, in cluster order.
#[expect(
    clippy::drain_collect,
    reason = "the buffers are kept for the next cluster; the collected vectors are exactly their size"
)]
pub(super) fn snapshots(inputs: &FleetInputs) -> Result<Vec<Snapshot>> {
    // Each gate's JSON and calendars once per read, not once per cluster, by the gate's
    // place in `inputs.gates` (a lookup by name per gate and cluster was 1 % of a fleet-wide
    // change with 21 gates, fleetgate-bench).
    let shared = inputs
        .gates
        .iter()
        .map(|g| {
            let json = serde_json::to_string(&g.manifest)
                .map_err(|e| Error::Internal(format!("encoding gate '{}': {e}", g.name())))?;
            let calendars: Arc<[fleetgate_policy::FeedOccurrences]> = Arc::from(g.feeds.clone());
            Ok((intern_manifest(json), calendars))
        })
        .collect::<Result<Vec<_>>>()?;
    // A cluster's gates and overrides are gathered here, then moved into vectors of
    // exactly their size: grown push by push and shrunk after, each cluster's gates were
    // reallocated up to five times (8 % of the hub's CPU in a fleet-wide change with 21
    // gates on 10,000 clusters, fleetgate-bench `--extra-gates 20`).
    let mut gates: Vec<SnapshotGate> = Vec::with_capacity(inputs.gates.len());
    let mut overrides: Vec<Override> = Vec::new();
    Ok(inputs
        .clusters
        .iter()
        .map(|c| {
            for (g, (manifest, calendars)) in inputs.gates.iter().zip(&shared) {
                if !g.applies_to(&c.row) {
                    continue;
                }
                gates.push(SnapshotGate {
                    name: g.name().to_string(),
                    version: u64::try_from(g.version).unwrap_or(0),
                    manifest_json: manifest.clone(),
                    release: placed(&inputs.releases, g.name(), &c.row.name).map(|r| Release {
                        rollout_id: r.rollout_id.to_string(),
                        opening_at: r.opening_at,
                        wave: u32::try_from(r.wave).unwrap_or(0),
                    }),
                    waiting: placed(&inputs.waiting, g.name(), &c.row.name).map(|w| Waiting {
                        rollout_id: w.rollout_id.to_string(),
                        wave: u32::try_from(w.wave).unwrap_or(0),
                        wave_name: w.wave_name(),
                    }),
                    opening_fence: inputs.opening_fence(g.name(), &c.row),
                    calendars: calendars.clone(),
                });
                overrides.extend(inputs.applying_own(g, &c.row));
            }
            // Once per cluster, with or without gates: the spoke also holds what no gate covers.
            overrides.extend(inputs.freezes_sent_to(&c.row));
            Snapshot::new(
                u64::try_from(c.row.desired_revision).unwrap_or(0),
                c.row.name.clone(),
                gates.drain(..).collect(),
                overrides.drain(..).collect(),
            )
            .with_token_hash(c.token_hash.clone())
        })
        .collect())
}

/// `map`'s entry for (`gate`, `cluster`): a rollout's release or wave. Looked up only where a
/// rollout placed clusters: the key is two new strings per gate and cluster, 10,000 clusters
/// per fleet-wide change.
fn placed<'a, T>(
    map: &'a HashMap<(String, String), T>,
    gate: &str,
    cluster: &str,
) -> Option<&'a T> {
    if map.is_empty() {
        return None;
    }
    map.get(&(gate.to_string(), cluster.to_string()))
}

/// Every snapshot of the replica shares one copy of each distinct manifest
/// JSON: clusters connecting one by one read their snapshot alone, and a
/// per-spoke copy of every gate's JSON was ~1 KiB of hub memory per spoke.
static MANIFESTS: LazyLock<Mutex<HashSet<Arc<str>>>> = LazyLock::new(Mutex::default);

fn intern_manifest(json: String) -> Arc<str> {
    // The set has no invariant a panicking holder could break halfway.
    let mut set = MANIFESTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(shared) = set.get(json.as_str()) {
        return shared.clone();
    }
    // Forget manifests no snapshot holds any more (old gate versions); amortised
    // by only sweeping when the set has doubled since the last sweep.
    if set.len() >= 64 && set.len().is_power_of_two() {
        set.retain(|m| Arc::strong_count(m) > 1);
    }
    let shared: Arc<str> = json.into();
    set.insert(shared.clone());
    shared
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_manifests_share_one_copy() {
        let a = intern_manifest(r#"{"kind":"Gate","t":"intern"}"#.to_string());
        let b = intern_manifest(r#"{"kind":"Gate","t":"intern"}"#.to_string());
        let c = intern_manifest(r#"{"kind":"Gate","t":"other"}"#.to_string());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(&*c, r#"{"kind":"Gate","t":"other"}"#);
    }

    #[test]
    fn canonical_order() {
        let a = Snapshot::new(
            1,
            "c".into(),
            vec![
                SnapshotGate {
                    name: "b".into(),
                    version: 1,
                    manifest_json: "".into(),
                    release: None,
                    waiting: None,
                    opening_fence: None,
                    calendars: Arc::from([]),
                },
                SnapshotGate {
                    name: "a".into(),
                    version: 1,
                    manifest_json: "".into(),
                    release: None,
                    waiting: None,
                    opening_fence: None,
                    calendars: Arc::from([]),
                },
            ],
            vec![],
        );
        assert_eq!(a.gates[0].name, "a");
    }
}
