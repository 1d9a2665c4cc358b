//! The fleet as the hub knows it at one instant: [`FleetInputs::read`] reads
//! clusters, gates, live overrides and reported objects in one consistent
//! (REPEATABLE READ) transaction, and every view is a pure projection of it —
//! the fleet summary and status, a cluster's status, the fleet view the change
//! streams diff, the dashboard's grid, and the spokes' snapshots.

pub mod applying;
mod briefs;
mod evaluate;
pub mod grid;
pub mod grid_page;
pub mod inputs;
mod reported;
pub mod snapshot;
pub mod status;
pub mod summary;
pub mod view;

use super::{Actor, ClusterRef, GateRef, Role, Service};
use crate::db;
use crate::db::clusters::Cluster;
use crate::{Error, Result};

pub use crate::db::held_objects::HeldObjectStatus;
pub use crate::db::reports::LocalGate;
pub use crate::db::status::ObjectStatus;
pub use briefs::{FeedBrief, ReportProblemBrief, SnapshotBrief};
pub use grid::{Cell, FleetGrid, FleetRow, ScopedCluster};
pub use inputs::{ClusterInput, FleetInputs, GateInput, Scope};
pub use snapshot::{Snapshot, SnapshotGate, Waiting};
pub use status::{ClusterBrief, ClusterRollout, ClusterStatus, FleetStatus, GateBrief, GateStatus};
pub use summary::{ClusterCounts, FleetSummary, GateSummary, ObjectCounts};
pub use view::{
    FleetView, GateOnCluster, HeldSet, RolloutSummary, SpokeState, ViewLabels, WouldCounts,
};

pub(crate) use applying::{applies, applying, opening_fence, reaches, stored_gate, to_policy};
pub use reported::Reported;

impl Service {
    /// Reads the fleet inputs of `scope` now, in one consistent transaction.
    pub async fn read_fleet(&self, scope: Scope<'_>) -> Result<FleetInputs> {
        let now = self.now();
        let mut tx = self.begin().await?;
        db::read_snapshot(&mut tx).await?;
        let inputs = FleetInputs::read(&mut tx, now, scope, &self.scoped).await?;
        tx.commit().await?;
        Ok(inputs)
    }

    /// [`Service::read_fleet`] as `actor` sees it (viewer): restricted to its
    /// scope. Every fleet view a person or team reads comes through here.
    pub async fn read_fleet_as(&self, actor: &Actor, scope: Scope<'_>) -> Result<FleetInputs> {
        actor.require(Role::Viewer)?;
        let visible = actor.read_scope();
        if let (Some(v), Scope::Cluster(name)) = (&visible, scope) {
            // Naming a cluster outside the scope is refused, not emptied.
            let inputs = self.read_fleet(scope).await?;
            if let Some(c) = inputs.clusters.first() {
                actor.require_visible_cluster(name, &c.row.labels)?;
            }
            let mut inputs = inputs;
            inputs.restrict(v.clone());
            return Ok(inputs);
        }
        // A fleet read of a reader whose every grant names its clusters asks for those
        // only; restricting them after is then exact (and still decides gates and pairs).
        let within = match (&visible, scope) {
            (Some(v), Scope::Fleet) => cluster_scopes(v),
            _ => None,
        };
        let mut inputs = match &within {
            Some(scopes) => self.read_fleet(Scope::Within(scopes)).await?,
            None => self.read_fleet(scope).await?,
        };
        if let Some(v) = visible {
            inputs.restrict(v);
        }
        Ok(inputs)
    }

    /// Counts across the fleet now (viewer).
    pub async fn fleet_summary(&self, actor: &Actor) -> Result<FleetSummary> {
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        summary::summary(&inputs, &evaluate::evaluate(&inputs)?)
    }

    /// The fleet summary and each cluster's gate states now (viewer), only
    /// clusters whose labels match `selector` (kubectl syntax) if given.
    pub async fn fleet_status(&self, actor: &Actor, selector: Option<&str>) -> Result<FleetStatus> {
        actor.require(Role::Viewer)?;
        let selector = selector
            .map(fleetgate_policy::LabelSelector::parse)
            .transpose()
            .map_err(|e| Error::invalid("selector", e.message))?;
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        status::fleet_status(&inputs, selector.as_ref())
    }

    /// [`Service::fleet_status`] with its clusters paged by name (`page.limit`, 1..=1000, and
    /// `page.cursor`; without `limit`, every cluster): `GET /api/v1/status/clusters` and
    /// `fleetgate status --limit`. Only the page's clusters are described; the summary
    /// counts the whole fleet. 422 naming `limit`, 400 for a bad `cursor`.
    pub async fn fleet_status_page(
        &self,
        actor: &Actor,
        selector: Option<&str>,
        page: &super::PageRequest,
    ) -> Result<FleetStatus> {
        actor.require(Role::Viewer)?;
        let after = page.key::<String>()?;
        let limit = match page.limit {
            Some(_) => Some(page.limit()? as usize),
            None => None,
        };
        let selector = selector
            .map(fleetgate_policy::LabelSelector::parse)
            .transpose()
            .map_err(|e| Error::invalid("selector", e.message))?;
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        let paged = limit.map(|limit| status::ClusterPage {
            after: after.as_deref(),
            limit,
        });
        let mut out = status::fleet_status_page(&inputs, selector.as_ref(), paged)?;
        out.next_cursor = out.next_cursor.map(|last| super::page::cursor(&last));
        Ok(out)
    }

    /// The status of one cluster now (viewer); 404 if unknown. Without the clusters'
    /// places in rollouts: `Service::cluster_status` (service::rollouts) adds them.
    pub(crate) async fn cluster_gates_status(
        &self,
        actor: &Actor,
        name: &str,
    ) -> Result<ClusterStatus> {
        let inputs = self.read_fleet_as(actor, Scope::Cluster(name)).await?;
        let may: Vec<(String, bool)> = match inputs.clusters.first() {
            Some(c) => inputs
                .gates
                .iter()
                .map(|g| (g.name().to_string(), may_operate(actor, g, &c.row)))
                .collect(),
            None => Vec::new(),
        };
        let mut out = status::cluster_status(inputs)?;
        for g in &mut out.gates {
            g.may_operate = may.iter().any(|(n, m)| *m && *n == g.gate);
        }
        Ok(out)
    }

    /// The whole fleet now (viewer), as the change streams diff it.
    pub async fn fleet_view(&self, actor: &Actor) -> Result<FleetView> {
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        let mut view = view::view(&inputs)?;
        view.approvals = self.approvals_for_view(view.at).await?;
        Ok(view)
    }

    /// Every gate on every cluster now (viewer): the dashboard's grid.
    pub async fn fleet_grid(&self, actor: &Actor) -> Result<FleetGrid> {
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        grid::grid(&inputs)
    }

    /// The page `q` asks for of the grid (viewer): the dashboard's fleet page. Only the
    /// page's rows are built; the counts and filters read every cluster's gate states.
    pub async fn fleet_grid_page(
        &self,
        actor: &Actor,
        q: &grid_page::FleetPageQuery,
    ) -> Result<grid_page::FleetGridPage> {
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        grid_page::grid_page(&inputs, q)
    }

    /// The clusters in `gate`'s scope with its state on each (viewer).
    pub async fn gate_clusters(&self, actor: &Actor, gate: &str) -> Result<Vec<ScopedCluster>> {
        let inputs = self.read_fleet_as(actor, Scope::Fleet).await?;
        let mut out = grid::gate_clusters(&inputs, gate)?;
        if let Some(g) = inputs.gates.iter().find(|g| g.name() == gate) {
            for sc in &mut out {
                sc.may_operate = inputs
                    .clusters
                    .iter()
                    .find(|c| c.row.name == sc.name)
                    .is_some_and(|c| may_operate(actor, g, &c.row));
            }
        }
        Ok(out)
    }

    /// The snapshots of those of `names` that exist (missing ones were
    /// deleted), in one read: a fleet-wide change costs the fan-out a few
    /// queries per batch of clusters, not a few per connected spoke.
    pub async fn snapshots(&self, names: &[String]) -> Result<Vec<Snapshot>> {
        let inputs = self.read_fleet(Scope::Clusters(names)).await?;
        snapshot::snapshots(&inputs)
    }

    /// Every cluster's snapshot, in one read (the fan-out's warm start).
    pub async fn all_snapshots(&self) -> Result<Vec<Snapshot>> {
        let inputs = self.read_fleet(Scope::AllClusters).await?;
        snapshot::snapshots(&inputs)
    }

    /// `cluster`'s snapshot (a batch of one); 404 if unknown.
    pub async fn cluster_snapshot(&self, cluster: &str) -> Result<Snapshot> {
        let names = [cluster.to_string()];
        self.snapshots(&names)
            .await?
            .pop()
            .ok_or_else(|| Error::not_found("cluster", cluster))
    }
}

/// The cluster scopes a reader's visible clusters are the union of; `None` when some grant
/// covers every cluster (then nothing narrows the read).
fn cluster_scopes(visible: &super::ReadScope) -> Option<Vec<fleetgate_policy::ClusterScope>> {
    visible
        .scopes()
        .iter()
        .map(|s| s.clusters.clone())
        .collect()
}

/// Whether `actor` may open, close and cancel `gate` on `cluster` (the
/// dashboard shows those buttons only then; the writes check again).
fn may_operate(actor: &Actor, gate: &GateInput, cluster: &Cluster) -> bool {
    let gate = GateRef {
        name: gate.name(),
        labels: &gate.gate.metadata.labels,
    };
    let cluster = ClusterRef {
        name: &cluster.name,
        labels: &cluster.labels,
    };
    actor.grant_for(Role::Operator, gate, cluster).is_some()
}
