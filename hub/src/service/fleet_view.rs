//! The whole fleet at one instant, for change streams (admin `WatchFleet`):
//! every (gate, cluster) state, live overrides, spoke connections and held
//! counts, read in a few bulk queries and evaluated with the policy crate.
//! Watchers diff two views to produce events.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::GateState;

use super::liveness;
use super::snapshot_inputs::overrides_for_cluster;
use super::status::{by_gate, load_gates};
use super::types::OverrideRecord;
use super::{Actor, Role, Service};
use crate::Result;
use crate::db::{clusters, gates, overrides, status};

/// One gate's state on one cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOnCluster {
    pub state: GateState,
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
}

/// A cluster's spoke connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpokeState {
    pub connected: bool,
    pub replica: Option<String>,
    pub spoke_version: Option<String>,
}

/// The fleet at `at`.
#[derive(Debug, Clone, Default)]
pub struct FleetView {
    pub at: DateTime<Utc>,
    /// Keyed by (gate, cluster).
    pub gates: BTreeMap<(String, String), GateOnCluster>,
    /// Live overrides (active now or starting later) by id.
    pub overrides: BTreeMap<String, OverrideRecord>,
    /// Every registered cluster's spoke connection.
    pub spokes: BTreeMap<String, SpokeState>,
    /// Held objects per cluster (clusters without any are absent).
    pub held: BTreeMap<String, u32>,
    /// The earliest next transition of any (gate, cluster).
    pub next_transition: Option<DateTime<Utc>>,
}

impl Service {
    /// The whole fleet now (viewer).
    pub async fn fleet_view(&self, actor: &Actor) -> Result<FleetView> {
        actor.require(Role::Viewer)?;
        let now = self.now();
        let mut conn = self.conn().await?;
        let all_clusters = clusters::all(&mut conn).await?;
        let all_gates = load_gates(gates::all(&mut conn).await?)?;
        let names: Vec<String> = all_gates
            .iter()
            .map(|(g, _)| g.name().to_string())
            .collect();
        let live = overrides::live_for_gates(&mut conn, &names, now).await?;
        let held = status::counts_by_cluster(&mut conn).await?;
        drop(conn);

        let mut view = FleetView {
            at: now,
            ..FleetView::default()
        };
        view.overrides = live
            .iter()
            .cloned()
            .map(|r| (r.id.to_string(), OverrideRecord::from(r)))
            .collect();
        let ovs = by_gate(live);
        for c in &all_clusters {
            view.spokes.insert(
                c.name.clone(),
                SpokeState {
                    connected: liveness::is_connected(c, now),
                    replica: c.connected_replica.clone(),
                    spoke_version: c.spoke_version.clone(),
                },
            );
            for (gate, compiled) in &all_gates {
                if !gate.spec.clusters.matches(&c.name, &c.labels.0) {
                    continue;
                }
                let rows = ovs.get(gate.name()).cloned().unwrap_or_default();
                let e = compiled.evaluate(now, &overrides_for_cluster(gate, c, rows));
                if let Some(t) = e.next_transition {
                    view.next_transition = Some(view.next_transition.map_or(t, |n| n.min(t)));
                }
                view.gates.insert(
                    (gate.name().to_string(), c.name.clone()),
                    GateOnCluster {
                        state: e.state,
                        reason: e.reason,
                        next_transition: e.next_transition,
                    },
                );
            }
        }
        for (cluster, _, h, _) in held {
            if h > 0 {
                view.held
                    .insert(cluster, u32::try_from(h).unwrap_or(u32::MAX));
            }
        }
        Ok(view)
    }
}
