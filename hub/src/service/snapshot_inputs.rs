//! What a cluster's desired state is made of: the gates whose scope includes
//! it and the live overrides that apply to it. Read by the gRPC side to build
//! snapshots and by the status views to evaluate gates.

use fleetgate_policy::{Gate, GateState, Override};

use super::Service;
use super::gates::stored_gate;
use super::types::Cluster;
use crate::db::clusters::ClusterRow;
use crate::db::overrides::OverrideRow;
use crate::db::{clusters, gates, overrides};
use crate::{Error, Result};

/// One gate as it goes into a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct SnapshotGate {
    pub name: String,
    pub version: i64,
    /// The validated manifest as JSON.
    pub manifest: serde_json::Value,
}

/// Everything a cluster's snapshot is computed from, read consistently.
#[derive(Debug, Clone)]
pub struct SnapshotInputs {
    pub cluster: Cluster,
    /// Gates whose scope includes the cluster, by name.
    pub gates: Vec<SnapshotGate>,
    /// Overrides of those gates that apply to the cluster and are neither
    /// cancelled nor expired (active now or starting later), oldest first.
    pub overrides: Vec<Override>,
    /// The cluster's `desired_revision` at the time of the read.
    pub desired_revision: i64,
}

/// The policy-crate form of a stored override.
pub(crate) fn to_policy(row: &OverrideRow) -> Override {
    Override {
        id: row.id.to_string(),
        gate: row.gate.clone(),
        state: if row.state == "open" {
            GateState::Open
        } else {
            GateState::Closed
        },
        starts_at: row.starts_at,
        expires_at: row.expires_at,
        created_at: row.created_at,
        actor: row.actor.clone(),
        reason: row.reason.clone(),
    }
}

/// Does the override apply to `cluster`? Its scope narrows the gate's scope
/// (absent = the whole gate scope).
pub(crate) fn applies(gate: &Gate, cluster: &ClusterRow, row: &OverrideRow) -> bool {
    row.gate == gate.name()
        && gate.spec.clusters.matches(&cluster.name, &cluster.labels.0)
        && row
            .scope
            .as_ref()
            .is_none_or(|s| s.0.matches(&cluster.name, &cluster.labels.0))
}

/// The overrides among `rows` that apply to `cluster` for `gate`.
pub(crate) fn overrides_for_cluster(
    gate: &Gate,
    cluster: &ClusterRow,
    rows: Vec<OverrideRow>,
) -> Vec<Override> {
    overrides_applying(gate, cluster, &rows)
}

/// Like [`overrides_for_cluster`], borrowing the rows.
pub(crate) fn overrides_applying(
    gate: &Gate,
    cluster: &ClusterRow,
    rows: &[OverrideRow],
) -> Vec<Override> {
    rows.iter()
        .filter(|r| applies(gate, cluster, r))
        .map(to_policy)
        .collect()
}

impl Service {
    /// The inputs of `cluster`'s snapshot, read in one REPEATABLE READ
    /// transaction so the revision matches the data. 404 if unknown.
    pub async fn cluster_snapshot_inputs(&self, cluster: &str) -> Result<SnapshotInputs> {
        let now = self.now();
        let mut tx = self.begin().await?;
        sqlx::query("set transaction isolation level repeatable read read only")
            .execute(&mut *tx)
            .await?;
        let row = clusters::get(&mut tx, cluster)
            .await?
            .ok_or_else(|| Error::not_found("cluster", cluster))?;
        let mut selected = Vec::new();
        for g in gates::all(&mut tx).await? {
            let gate = stored_gate(&g.manifest)?;
            if gate.spec.clusters.matches(&row.name, &row.labels.0) {
                selected.push((gate, g));
            }
        }
        let names: Vec<String> = selected.iter().map(|(_, g)| g.name.clone()).collect();
        let live = overrides::live_for_gates(&mut tx, &names, now).await?;
        tx.commit().await?;
        let mut ovs = Vec::new();
        for (gate, _) in &selected {
            ovs.extend(
                live.iter()
                    .filter(|r| applies(gate, &row, r))
                    .map(to_policy),
            );
        }
        ovs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(SnapshotInputs {
            desired_revision: row.desired_revision,
            cluster: row.into(),
            gates: selected
                .into_iter()
                .map(|(_, g)| SnapshotGate {
                    name: g.name,
                    version: g.version,
                    manifest: g.manifest,
                })
                .collect(),
            overrides: ovs,
        })
    }
}
