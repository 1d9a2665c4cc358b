//! The fleet status in one response (`GET /api/v1/status/clusters`): the
//! fleet summary plus, per cluster, each gate's state with reason, next
//! transition and held count — what `fleetgate status` shows, read in a few
//! bulk queries instead of one request per cluster.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::{Evaluation, LabelSelector, combine, next_combined_change};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::liveness;
use super::snapshot_inputs::overrides_applying;
use super::status::{FleetSummary, ObjectCounts, gates_with_live_overrides};
use super::types::Cluster;
use super::{Actor, Role, Service};
use crate::db::{clusters, status};
use crate::{Error, Result};

/// One gate's state on one cluster (without the objects).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateBrief {
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which rule decided, in words.
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects governed by this gate that are held.
    pub held: i64,
}

/// One cluster's gates now, without its objects (see the per-cluster status
/// for those).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterBrief {
    pub cluster: Cluster,
    /// All gates open: changes may flow.
    pub open: bool,
    /// The closed gates.
    pub closed_by: Vec<String>,
    /// When `open` next changes (not merely some gate): absent when it does not within the
    /// look-ahead, e.g. while a gate without windows is closed.
    pub next_transition: Option<DateTime<Utc>>,
    /// The gates applying to the cluster, by name.
    pub gates: Vec<GateBrief>,
    pub counts: ObjectCounts,
}

/// The fleet summary and every (selected) cluster's gate states.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetStatus {
    /// Counts over the whole fleet (the selector does not apply).
    pub summary: FleetSummary,
    /// Clusters by name.
    pub clusters: Vec<ClusterBrief>,
}

impl Service {
    /// The fleet summary and each cluster's gate states now (viewer), only
    /// clusters whose labels match `selector` (kubectl syntax) if given.
    pub async fn fleet_status(&self, actor: &Actor, selector: Option<&str>) -> Result<FleetStatus> {
        actor.require(Role::Viewer)?;
        let selector = selector
            .map(LabelSelector::parse)
            .transpose()
            .map_err(|e| Error::invalid("selector", e.message))?;
        let summary = self.fleet_summary(actor).await?;
        let now = summary.at;
        let mut conn = self.conn().await?;
        let mut all_clusters = clusters::all(&mut conn).await?;
        if let Some(sel) = &selector {
            all_clusters.retain(|c| sel.matches(&c.labels.0));
        }
        let (all_gates, ovs) = gates_with_live_overrides(&mut conn, now).await?;
        let counts: HashMap<String, ObjectCounts> = status::counts_by_cluster(&mut conn)
            .await?
            .into_iter()
            .map(|(c, governed, held, suspended)| {
                let counts = ObjectCounts {
                    governed,
                    held,
                    suspended,
                };
                (c, counts)
            })
            .collect();
        let held: HashMap<(String, String), i64> = status::held_by_gate(&mut conn)
            .await?
            .into_iter()
            .map(|(c, g, n)| ((c, g), n))
            .collect();
        drop(conn);

        // Without applicable overrides a gate evaluates the same on every
        // cluster: evaluate it once.
        let base: Vec<Evaluation> = all_gates
            .iter()
            .map(|(_, compiled)| compiled.evaluate(now, &[]))
            .collect();
        // The same holds at the later instants the clusters' next changes look at.
        let mut later: HashMap<(usize, DateTime<Utc>), Evaluation> = HashMap::new();
        let no_rows = Vec::new();
        let mut out = Vec::with_capacity(all_clusters.len());
        for c in all_clusters {
            let mut evals: Vec<(&str, Evaluation)> = Vec::new();
            let mut applying = Vec::new();
            for (i, ((gate, compiled), base)) in all_gates.iter().zip(&base).enumerate() {
                if !gate.spec.clusters.matches(&c.name, &c.labels.0) {
                    continue;
                }
                let rows = ovs.get(gate.name()).unwrap_or(&no_rows);
                let o = overrides_applying(gate, &c, rows);
                let e = if o.is_empty() {
                    base.clone()
                } else {
                    compiled.evaluate(now, &o)
                };
                evals.push((gate.name(), e));
                applying.push((i, o));
            }
            let combined = combine(evals.iter().map(|(n, e)| (*n, e)));
            let at_now: Vec<Evaluation> = evals.iter().map(|(_, e)| e.clone()).collect();
            let next_change = next_combined_change(now, &at_now, |k, t| {
                let (i, o) = &applying[k];
                if o.is_empty() {
                    later
                        .entry((*i, t))
                        .or_insert_with(|| all_gates[*i].1.evaluate(t, &[]))
                        .clone()
                } else {
                    all_gates[*i].1.evaluate(t, o)
                }
            });
            let gates = evals
                .into_iter()
                .map(|(gate, e)| GateBrief {
                    held: held
                        .get(&(c.name.clone(), gate.to_string()))
                        .copied()
                        .unwrap_or(0),
                    gate: gate.to_string(),
                    state: e.state.as_str().to_string(),
                    reason: e.reason,
                    next_transition: e.next_transition,
                })
                .collect();
            out.push(ClusterBrief {
                counts: counts.get(&c.name).cloned().unwrap_or_default(),
                cluster: liveness::at(c, now).into(),
                open: combined.open,
                closed_by: combined.closed_by,
                next_transition: next_change,
                gates,
            });
        }
        Ok(FleetStatus {
            summary,
            clusters: out,
        })
    }
}
