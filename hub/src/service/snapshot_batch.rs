//! Snapshot inputs of many clusters in one read, for the fan-out after a
//! fleet-wide change: gates and live overrides are read once, the clusters in
//! one query, and each cluster's inputs are assembled in memory — a constant
//! number of queries instead of six per connected cluster.

use fleetgate_policy::Gate;

use super::Service;
use super::gates::stored_gate;
use super::snapshot_inputs::{SnapshotGate, SnapshotInputs, applies, to_policy};
use crate::Result;
use crate::db::{clusters, gates, overrides};

/// One cluster's snapshot inputs and its spoke token hash.
#[derive(Debug, Clone)]
pub struct BatchedInputs {
    pub inputs: SnapshotInputs,
    pub token_hash: Vec<u8>,
}

impl Service {
    /// The snapshot inputs of those of `names` that exist (missing ones were
    /// deleted), read in one REPEATABLE READ transaction like
    /// [`Service::cluster_snapshot_inputs`], with the same selection rules.
    pub async fn clusters_snapshot_inputs(&self, names: &[String]) -> Result<Vec<BatchedInputs>> {
        let now = self.now();
        let mut tx = self.begin().await?;
        sqlx::query("set transaction isolation level repeatable read read only")
            .execute(&mut *tx)
            .await?;
        let rows = clusters::by_names_with_token_hash(&mut tx, names).await?;
        let mut all_gates: Vec<(Gate, SnapshotGate)> = Vec::new();
        for g in gates::all(&mut tx).await? {
            let gate = stored_gate(&g.manifest)?;
            all_gates.push((
                gate,
                SnapshotGate {
                    name: g.name,
                    version: g.version,
                    manifest: g.manifest,
                },
            ));
        }
        let gate_names: Vec<String> = all_gates.iter().map(|(_, g)| g.name.clone()).collect();
        let live = overrides::live_for_gates(&mut tx, &gate_names, now).await?;
        tx.commit().await?;

        let mut out = Vec::with_capacity(rows.len());
        for (row, token_hash) in rows {
            let selected: Vec<&(Gate, SnapshotGate)> = all_gates
                .iter()
                .filter(|(gate, _)| gate.spec.clusters.matches(&row.name, &row.labels.0))
                .collect();
            let mut ovs = Vec::new();
            for (gate, _) in &selected {
                ovs.extend(
                    live.iter()
                        .filter(|r| applies(gate, &row, r))
                        .map(to_policy),
                );
            }
            ovs.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
            out.push(BatchedInputs {
                inputs: SnapshotInputs {
                    desired_revision: row.desired_revision,
                    gates: selected.into_iter().map(|(_, g)| g.clone()).collect(),
                    overrides: ovs,
                    cluster: row.into(),
                },
                token_hash,
            });
        }
        Ok(out)
    }
}
