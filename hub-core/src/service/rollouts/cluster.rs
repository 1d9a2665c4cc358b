//! A cluster's status with its place in each gate's current rollout (`GET
//! /api/v1/clusters/{name}/status`, gRPC `GetClusterStatus`, `fleetgate status CLUSTER`, the
//! dashboard's cluster page): waiting for wave N, or released in it and how healthy. Here
//! rather than in `service::fleet` because it reads the rollouts' status (this module
//! depends on the fleet reads, not the other way round).

use super::status;
use crate::Result;
use crate::db;
use crate::rollout::State;
use crate::service::fleet::{ClusterRollout, ClusterStatus};
use crate::service::{Actor, Service};

impl Service {
    /// The status of one cluster now (viewer); 404 if unknown. Each gate whose current
    /// rollout placed the cluster says where (`GateStatus.rollout`).
    pub async fn cluster_status(&self, actor: &Actor, name: &str) -> Result<ClusterStatus> {
        let mut out = self.cluster_gates_status(actor, name).await?;
        let now = self.now();
        let mut tx = self.begin().await?;
        db::read_snapshot(&mut tx).await?;
        for gate in &mut out.gates {
            let Some(r) = status::read(&mut tx, &gate.gate, now).await? else {
                continue;
            };
            if r.state == State::Ended {
                continue;
            }
            gate.rollout = r.waves.iter().find_map(|w| {
                let c = w.clusters.iter().find(|c| c.name == name)?;
                Some(ClusterRollout {
                    rollout_id: r.id.clone(),
                    state: r.state,
                    wave: w.index,
                    wave_name: w.name.clone(),
                    released_at: c.released_at,
                    health: c.health,
                    detail: c.detail.clone(),
                })
            });
        }
        tx.commit().await?;
        Ok(out)
    }
}
