//! Status views: per cluster, each gate's state now with reason and next
//! transition, and the governed objects its spoke reported (which are held);
//! and a fleet summary with counts. Evaluation uses the shared policy crate,
//! so the hub shows exactly what the spokes enforce.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use fleetgate_policy::{CompiledGate, Evaluation, Gate, combine, next_combined_change};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::gates::stored_gate;
use super::liveness;
use super::snapshot_inputs::{overrides_applying, overrides_for_cluster};
use super::types::Cluster;
use super::{Actor, Role, Service};
use crate::db::overrides::OverrideRow;
use crate::db::status::ObjectStatusRow;
use crate::db::{clusters, gates, overrides, revision, status};
use crate::{Error, Result};

/// A governed Flux object as last reported by its spoke.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectStatus {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub suspended: bool,
    /// Gates whose closure suspended it.
    pub suspended_by: Vec<String>,
    /// Gates governing it.
    pub gates: Vec<String>,
    pub last_applied_revision: Option<String>,
    pub newest_source_revision: Option<String>,
    /// A newer source revision waits for a gate to open.
    pub held: bool,
    /// Suspended by a person (fleetgate leaves it alone).
    pub suspended_by_human: bool,
    /// Annotated `fleetgate.io/ignore: "true"`: `gates` target it, but fleetgate never
    /// governs it (not counted as governed).
    pub ignored: bool,
    pub reported_at: DateTime<Utc>,
}

impl From<ObjectStatusRow> for ObjectStatus {
    fn from(r: ObjectStatusRow) -> Self {
        Self {
            kind: r.kind,
            namespace: r.namespace,
            name: r.name,
            suspended: r.suspended,
            suspended_by: r.suspended_by,
            gates: r.gates,
            last_applied_revision: r.last_applied_revision,
            newest_source_revision: r.newest_source_revision,
            held: r.held,
            suspended_by_human: r.suspended_by_human,
            ignored: r.ignored,
            reported_at: r.reported_at,
        }
    }
}

/// One gate's state on one cluster.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateStatus {
    pub gate: String,
    /// `open` or `closed`.
    pub state: String,
    /// Which rule decided, in words.
    pub reason: String,
    pub next_transition: Option<DateTime<Utc>>,
    /// Reported objects this gate governs.
    pub objects: Vec<ObjectStatus>,
    /// How many of them are held.
    pub held: usize,
}

/// Object counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectCounts {
    pub governed: i64,
    pub held: i64,
    pub suspended: i64,
}

/// A cluster's status.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterStatus {
    pub cluster: Cluster,
    /// The instant evaluated.
    pub at: DateTime<Utc>,
    /// All gates open: changes may flow.
    pub open: bool,
    /// The closed gates.
    pub closed_by: Vec<String>,
    /// When `open` next changes (not merely some gate): absent when it does not within the
    /// look-ahead, e.g. while a gate without windows is closed. Per-gate times are in `gates`.
    pub next_transition: Option<DateTime<Utc>>,
    pub gates: Vec<GateStatus>,
    /// Every reported object.
    pub objects: Vec<ObjectStatus>,
    pub counts: ObjectCounts,
}

/// One gate across the fleet.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GateSummary {
    pub gate: String,
    /// Clusters in scope.
    pub clusters: usize,
    pub open: usize,
    pub closed: usize,
}

/// Cluster counts.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClusterCounts {
    pub total: usize,
    pub connected: usize,
    pub disconnected: usize,
    /// All gates open.
    pub open: usize,
    /// At least one gate closed.
    pub closed: usize,
    /// At least one held object.
    pub with_held: usize,
}

/// The fleet at a glance.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FleetSummary {
    pub at: DateTime<Utc>,
    pub revision: i64,
    pub clusters: ClusterCounts,
    pub gates: Vec<GateSummary>,
    pub objects: ObjectCounts,
    /// Names of disconnected clusters (at most 100).
    pub disconnected: Vec<String>,
}

pub(crate) fn load_gates(
    rows: Vec<crate::db::gates::GateRow>,
) -> Result<Vec<(Gate, CompiledGate)>> {
    rows.iter()
        .map(|g| {
            let gate = stored_gate(&g.manifest)?;
            let compiled = gate
                .compile()
                .map_err(|e| Error::Internal(format!("stored gate '{}': {e}", g.name)))?;
            Ok((gate, compiled))
        })
        .collect()
}

pub(crate) fn by_gate(rows: Vec<OverrideRow>) -> HashMap<String, Vec<OverrideRow>> {
    let mut m: HashMap<String, Vec<OverrideRow>> = HashMap::new();
    for r in rows {
        m.entry(r.gate.clone()).or_default().push(r);
    }
    m
}

/// Every gate (compiled) and the live overrides at `now` by gate name.
pub(crate) async fn gates_with_live_overrides(
    conn: &mut sqlx::PgConnection,
    now: DateTime<Utc>,
) -> Result<(Vec<(Gate, CompiledGate)>, HashMap<String, Vec<OverrideRow>>)> {
    let all_gates = load_gates(gates::all(&mut *conn).await?)?;
    let names: Vec<String> = all_gates
        .iter()
        .map(|(g, _)| g.name().to_string())
        .collect();
    let ovs = by_gate(overrides::live_for_gates(conn, &names, now).await?);
    Ok((all_gates, ovs))
}

impl Service {
    /// The status of one cluster now (viewer).
    pub async fn cluster_status(&self, actor: &Actor, name: &str) -> Result<ClusterStatus> {
        actor.require(Role::Viewer)?;
        let now = self.now();
        let mut conn = self.conn().await?;
        let cluster = clusters::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("cluster", name))?;
        let all = load_gates(gates::all(&mut conn).await?)?;
        let mine: Vec<_> = all
            .into_iter()
            .filter(|(g, _)| g.spec.clusters.matches(&cluster.name, &cluster.labels.0))
            .collect();
        let names: Vec<String> = mine.iter().map(|(g, _)| g.name().to_string()).collect();
        let ovs = by_gate(overrides::live_for_gates(&mut conn, &names, now).await?);
        let objects: Vec<ObjectStatus> = status::for_cluster(&mut conn, name)
            .await?
            .into_iter()
            .map(Into::into)
            .collect();
        let mut evals = Vec::new();
        let mut applying = Vec::new();
        for (gate, compiled) in &mine {
            let rows = ovs.get(gate.name()).cloned().unwrap_or_default();
            let o = overrides_for_cluster(gate, &cluster, rows);
            evals.push((gate.name().to_string(), compiled.evaluate(now, &o)));
            applying.push((compiled, o));
        }
        let combined = combine(evals.iter().map(|(n, e)| (n.as_str(), e)));
        let at_now: Vec<Evaluation> = evals.iter().map(|(_, e)| e.clone()).collect();
        let next_change = next_combined_change(now, &at_now, |i, t| {
            applying[i].0.evaluate(t, &applying[i].1)
        });
        let gates = evals
            .into_iter()
            .map(|(gate, e)| {
                let governed: Vec<ObjectStatus> = objects
                    .iter()
                    .filter(|o| o.gates.contains(&gate))
                    .cloned()
                    .collect();
                GateStatus {
                    held: governed.iter().filter(|o| o.held).count(),
                    objects: governed,
                    gate,
                    state: e.state.as_str().to_string(),
                    reason: e.reason,
                    next_transition: e.next_transition,
                }
            })
            .collect();
        let counts = ObjectCounts {
            governed: objects.iter().filter(|o| !o.ignored).count() as i64,
            held: objects.iter().filter(|o| o.held).count() as i64,
            suspended: objects.iter().filter(|o| o.suspended).count() as i64,
        };
        Ok(ClusterStatus {
            cluster: liveness::at(cluster, now).into(),
            at: now,
            open: combined.open,
            closed_by: combined.closed_by,
            next_transition: next_change,
            gates,
            objects,
            counts,
        })
    }

    /// Counts across the fleet now (viewer).
    pub async fn fleet_summary(&self, actor: &Actor) -> Result<FleetSummary> {
        actor.require(Role::Viewer)?;
        let now = self.now();
        let mut conn = self.conn().await?;
        let rev = revision::current(&mut conn).await?;
        let all_clusters = clusters::all(&mut conn).await?;
        let (all_gates, ovs) = gates_with_live_overrides(&mut conn, now).await?;
        let held = status::counts_by_cluster(&mut conn).await?;
        let mut summaries: Vec<GateSummary> = all_gates
            .iter()
            .map(|(g, _)| GateSummary {
                gate: g.name().to_string(),
                clusters: 0,
                open: 0,
                closed: 0,
            })
            .collect();
        let mut counts = ClusterCounts {
            total: all_clusters.len(),
            ..Default::default()
        };
        // A gate's state depends only on its rules and the overrides that
        // apply: evaluate each gate once for clusters without overrides.
        let base_open: Vec<bool> = all_gates
            .iter()
            .map(|(_, compiled)| compiled.evaluate(now, &[]).state.is_open())
            .collect();
        let no_rows = Vec::new();
        let mut disconnected = Vec::new();
        for c in &all_clusters {
            if liveness::is_connected(c, now) {
                counts.connected += 1;
            } else {
                counts.disconnected += 1;
                if disconnected.len() < 100 {
                    disconnected.push(c.name.clone());
                }
            }
            let mut all_open = true;
            for (((gate, compiled), summary), base) in
                all_gates.iter().zip(summaries.iter_mut()).zip(&base_open)
            {
                if !gate.spec.clusters.matches(&c.name, &c.labels.0) {
                    continue;
                }
                let rows = ovs.get(gate.name()).unwrap_or(&no_rows);
                let o = overrides_applying(gate, c, rows);
                summary.clusters += 1;
                let open = if o.is_empty() {
                    *base
                } else {
                    compiled.evaluate(now, &o).state.is_open()
                };
                if open {
                    summary.open += 1;
                } else {
                    summary.closed += 1;
                    all_open = false;
                }
            }
            if all_open {
                counts.open += 1;
            } else {
                counts.closed += 1;
            }
        }
        let mut objects = ObjectCounts::default();
        for (_, governed, h, suspended) in &held {
            objects.governed += governed;
            objects.held += h;
            objects.suspended += suspended;
            if *h > 0 {
                counts.with_held += 1;
            }
        }
        Ok(FleetSummary {
            at: now,
            revision: rev,
            clusters: counts,
            gates: summaries,
            objects,
            disconnected,
        })
    }
}
