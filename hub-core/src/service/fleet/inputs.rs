//! What every fleet view is computed from ([`FleetInputs`], read at one instant) and its
//! parts. A leaf of `service/fleet/` as far as the views go: the views import it, it imports
//! none of them.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use fleetgate_policy::{ClusterScope, Gate, Override};
use sqlx::PgConnection;

use super::applying::{applying, opening_fence, own_applying, reaches, stored_gate, to_policy};
use super::briefs::brief;
use super::reported::{Reported, read_fleet_reported};
use crate::db::clusters::Cluster;
use crate::db::overrides::{EndedClose, OverrideRecord};
use crate::db::rollouts::{FailureRow, ReleaseRow, RolloutSummaryRow, WaitingRow};
use crate::db::{self, clusters, gates, held_objects, overrides, revision};
use crate::service::{ClusterRef, GateRef, ReadScope};
use crate::{Error, Result};

/// Which clusters a read covers, and how much of what their spokes reported.
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// Every cluster, with reported-object counts (fleet views).
    Fleet,
    /// The clusters one of these scopes matches, as [`Scope::Fleet`] reads them: a scoped
    /// reader's fleet views. PostgreSQL selects them (`db::scope_sql`), and everything
    /// read per cluster is read for those only, so the read costs the reader's share of the
    /// fleet.
    Within(&'a [ClusterScope]),
    /// Those of the named clusters that exist, without reported objects or
    /// connection state (snapshots: the fan-out reads connected clusters in
    /// batches; `db::clusters::snapshots`).
    Clusters(&'a [String]),
    /// Every cluster, as [`Scope::Clusters`] reads them (the fan-out's warm start).
    AllClusters,
    /// One cluster with every object its spoke reported; 404 if unknown.
    Cluster(&'a str),
}

/// A registered cluster and its spoke token hash.
#[derive(Debug, Clone)]
pub struct ClusterInput {
    pub row: Cluster,
    pub token_hash: Vec<u8>,
}

/// A stored gate, parsed.
#[derive(Debug, Clone)]
pub struct GateInput {
    pub gate: Gate,
    pub version: i64,
    /// The validated manifest as stored.
    pub manifest: serde_json::Value,
    /// The occurrences of its `calendar.url` windows' feeds (those fetched).
    pub feeds: Vec<fleetgate_policy::FeedOccurrences>,
    /// The cluster scopes of the scoped admin that last wrote it (none:
    /// unscoped): the gate reaches only clusters inside one of them.
    pub within: Option<Vec<ClusterScope>>,
}

impl GateInput {
    /// metadata.name.
    pub fn name(&self) -> &str {
        self.gate.name()
    }

    /// `spec.enforcement: warn`: evaluated and shown, never enforced.
    pub fn is_warn(&self) -> bool {
        self.gate.spec.enforcement.is_warn()
    }

    /// `enforce` or `warn`.
    pub fn enforcement(&self) -> String {
        self.gate.spec.enforcement.as_str().to_string()
    }

    /// Whether the gate's scope includes `cluster` (and its last writer's
    /// scope does too).
    pub fn applies_to(&self, cluster: &Cluster) -> bool {
        reaches(&self.gate, self.within.as_deref(), cluster)
    }
}

/// Everything the fleet's views are computed from, read at one instant.
#[derive(Debug, Clone)]
pub struct FleetInputs {
    /// The instant evaluated (the service clock when read).
    pub at: DateTime<Utc>,
    /// The fleet revision the read saw.
    pub revision: i64,
    /// The clusters in scope, by name.
    pub clusters: Vec<ClusterInput>,
    /// Every gate, by name.
    pub gates: Vec<GateInput>,
    /// Live overrides (neither cancelled nor expired at `at`: active or
    /// starting later) by gate, oldest first.
    pub(super) overrides: HashMap<String, Vec<OverrideRecord>>,
    pub reported: Reported,
    /// Rollout releases of current rollouts, by (gate, cluster).
    pub releases: HashMap<(String, String), ReleaseRow>,
    /// Clusters current rollouts have not released: their wave, by (gate, cluster).
    pub waiting: HashMap<(String, String), WaitingRow>,
    /// Clusters on which current rollouts failed, by (gate, cluster).
    pub rollout_failures: HashMap<(String, String), FailureRow>,
    /// Each gate's newest rollout ([`Scope::Fleet`] only).
    pub rollouts: Vec<RolloutSummaryRow>,
    /// Closing overrides of rollout gates that ended, the latest per scope, by gate: the
    /// opening fences ([`opening_fence`]); ended fleet freezes count for every rollout gate.
    pub(super) ended_closes: HashMap<String, Vec<EndedClose>>,
    /// Set by [`FleetInputs::restrict`] when a reader's grants differ in
    /// scope: which (gate, cluster) pairs it sees.
    pub(super) pairs: Option<ReadScope>,
    /// Fleet freezes in force or starting later, oldest first (those made in a cluster too).
    pub freezes: Vec<db::freezes::FreezeRecord>,
}

impl FleetInputs {
    /// Reads the inputs of `scope` at `now` from `tx`, which should be a
    /// REPEATABLE READ transaction ([`db::begin_read`]) so all parts agree. A
    /// [`Scope::Clusters`] read takes the clusters' labels from `labels` while it is
    /// current (`clusters::snapshots::for_snapshots_cached`).
    pub(crate) async fn read(
        tx: &mut PgConnection,
        now: DateTime<Utc>,
        scope: Scope<'_>,
        labels: &clusters::ScopedCache,
    ) -> Result<Self> {
        let revision = revision::current(tx).await?;
        let mut names: Option<Vec<String>> = match scope {
            Scope::Fleet | Scope::Within(_) | Scope::AllClusters => None,
            Scope::Clusters(names) => Some(names.to_vec()),
            Scope::Cluster(name) => Some(vec![name.to_string()]),
        };
        let rows = match scope {
            Scope::Clusters(names) => {
                clusters::snapshots::for_snapshots_cached(tx, names, labels).await?
            }
            Scope::AllClusters => clusters::snapshots::for_snapshots(tx, None).await?,
            Scope::Within(scopes) => clusters::with_token_hash_within(tx, scopes, now).await?,
            Scope::Fleet | Scope::Cluster(_) => {
                clusters::with_token_hash(tx, names.as_deref(), now).await?
            }
        };
        let clusters: Vec<ClusterInput> = rows
            .into_iter()
            .map(|(row, token_hash)| ClusterInput { row, token_hash })
            .collect();
        if let Scope::Within(_) = scope {
            // What is read per cluster below is read for these only.
            names = Some(clusters.iter().map(|c| c.row.name.clone()).collect());
        }
        if let Scope::Cluster(name) = scope
            && clusters.is_empty()
        {
            return Err(Error::not_found("cluster", name));
        }
        let gates = gates::all(tx)
            .await?
            .into_iter()
            .map(|g| {
                Ok(GateInput {
                    gate: stored_gate(&g.manifest)?,
                    version: g.version,
                    manifest: g.manifest,
                    feeds: Vec::new(),
                    within: g.writer_scope.map(|w| w.0),
                })
            })
            .collect::<Result<Vec<GateInput>>>()?;
        let mut gates = gates;
        let mut feed_rows = Vec::new();
        if gates
            .iter()
            .any(|g| !super::super::calendars::feeds::feed_windows(&g.gate).is_empty())
        {
            let rows = db::calendar_feeds::for_gates(tx, None).await?;
            for g in &mut gates {
                let mine: Vec<_> = rows
                    .iter()
                    .filter(|r| r.gate == g.name())
                    .cloned()
                    .collect();
                g.feeds = super::super::calendars::feeds::feed_occurrences(&mine);
            }
            feed_rows = rows;
        }
        let gate_names: Vec<String> = gates.iter().map(|g| g.name().to_string()).collect();
        let mut by_gate: HashMap<String, Vec<OverrideRecord>> = HashMap::new();
        for row in overrides::live_for_gates(tx, &gate_names, now).await? {
            by_gate.entry(row.gate.clone()).or_default().push(row);
        }
        let reported = match scope {
            Scope::Fleet | Scope::Within(_) => Reported {
                feed_briefs: (feed_rows.iter())
                    .map(|r| {
                        let key = (r.gate.clone(), r.window_name.clone());
                        (key, brief(r, now))
                    })
                    .collect(),
                ..read_fleet_reported(tx, names.as_deref()).await?
            },
            Scope::Clusters(_) | Scope::AllClusters => Reported::default(),
            Scope::Cluster(name) => Reported {
                objects: db::status::for_cluster(tx, name).await?,
                held_object_list: held_objects::for_cluster(tx, name).await?,
                local_gates: db::reports::local_gates(tx, Some(name))
                    .await?
                    .into_iter()
                    .collect(),
                report_problems: db::reports::problems(tx, name).await?,
                ..Reported::default()
            },
        };
        let rollout_gates: Vec<String> = gates
            .iter()
            .filter(|g| g.gate.spec.rollout.is_some())
            .map(|g| g.name().to_string())
            .collect();
        let (releases, waiting, ended_closes, rollout_failures) = if rollout_gates.is_empty() {
            Default::default()
        } else {
            let mut ended: HashMap<String, Vec<EndedClose>> = HashMap::new();
            for row in overrides::ended_closes(tx, &rollout_gates, now).await? {
                ended.entry(row.gate.clone()).or_default().push(row);
            }
            let ended_freezes = db::freezes::ended(tx, now).await?;
            for gate in &rollout_gates {
                ended.entry(gate.clone()).or_default().extend(
                    super::super::freezes::scope::as_ended_closes(&ended_freezes, gate),
                );
            }
            let releases = db::rollouts::releases(tx, names.as_deref())
                .await?
                .into_iter()
                .map(|r| ((r.gate.clone(), r.cluster.clone()), r))
                .collect();
            (
                releases,
                db::rollouts::waiting(tx, names.as_deref()).await?,
                ended,
                db::rollouts::failures(tx, names.as_deref()).await?,
            )
        };
        let rollouts = match scope {
            Scope::Fleet | Scope::Within(_) => db::rollouts::summaries(tx).await?,
            Scope::Clusters(_) | Scope::AllClusters | Scope::Cluster(_) => Vec::new(),
        };
        let freezes = db::freezes::live(tx, now).await?;
        let mut inputs = Self {
            at: now,
            revision,
            clusters,
            gates,
            overrides: by_gate,
            reported,
            releases,
            waiting,
            rollout_failures,
            rollouts,
            ended_closes,
            pairs: None,
            freezes,
        };
        inputs.drop_fenced_releases();
        Ok(inputs)
    }

    /// Forgets the releases a freeze ended since they were made (their opening is before
    /// the cluster's opening fence): until the driver's next step stages the reopening,
    /// no view shows them and no snapshot carries them — so even a spoke that predates
    /// `GateRule.opening_fence` stays closed.
    pub(super) fn drop_fenced_releases(&mut self) {
        if self.ended_closes.is_empty() {
            return;
        }
        let rows: HashMap<&str, &Cluster> = self
            .clusters
            .iter()
            .map(|c| (c.row.name.as_str(), &c.row))
            .collect();
        let fenced: Vec<(String, String)> = self
            .releases
            .iter()
            .filter(|((gate, cluster), r)| {
                let fence = rows
                    .get(cluster.as_str())
                    .and_then(|c| self.opening_fence(gate, c));
                fence.is_some_and(|f| r.opening_at < f)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for k in fenced {
            self.releases.remove(&k);
        }
    }

    /// The opening fence of `gate` on `cluster`: the latest end of a closing override of
    /// the gate that applies to the cluster and has ended (docs/rollouts.md).
    pub(crate) fn opening_fence(&self, gate: &str, cluster: &Cluster) -> Option<DateTime<Utc>> {
        opening_fence(self.ended_closes.get(gate)?, Some(cluster))
    }

    /// Keeps only what a scoped reader sees: its clusters, its gates, their
    /// overrides, reports and rollouts (every view is a projection of the
    /// inputs, so every read surface shows less the same way).
    pub fn restrict(&mut self, scope: ReadScope) {
        self.clusters
            .retain(|c| scope.cluster(&c.row.name, &c.row.labels));
        self.gates
            .retain(|g| scope.gate(g.name(), &g.gate.metadata.labels));
        let gates: HashSet<String> = self.gates.iter().map(|g| g.name().to_string()).collect();
        let clusters: HashSet<String> = self.clusters.iter().map(|c| c.row.name.clone()).collect();
        let pair = |(g, c): &(String, String)| gates.contains(g) && clusters.contains(c);
        self.overrides.retain(|g, _| gates.contains(g));
        self.ended_closes.retain(|g, _| gates.contains(g));
        self.rollouts.retain(|r| gates.contains(&r.gate));
        self.releases.retain(|k, _| pair(k));
        self.waiting.retain(|k, _| pair(k));
        self.rollout_failures.retain(|k, _| pair(k));
        let r = &mut self.reported;
        r.counts.retain(|c, _| clusters.contains(c));
        r.held_digests.retain(|c, _| clusters.contains(c));
        r.local_gates.retain(|c, _| clusters.contains(c));
        r.problem_briefs.retain(|c, _| clusters.contains(c));
        r.feed_briefs.retain(|(g, _), _| gates.contains(g));
        r.held_by_gate.retain(|k, _| pair(k));
        r.held_objects_by_gate.retain(|k, _| pair(k));
        r.would_suspend_by_gate.retain(|k, _| pair(k));
        r.would_hold_objects_by_gate.retain(|k, _| pair(k));
        let visible: Vec<&Cluster> = self.clusters.iter().map(|c| &c.row).collect();
        super::super::freezes::scope::keep_visible(&mut self.freezes, &visible);
        self.pairs = (!scope.is_single()).then_some(scope);
    }

    /// Whether the reader sees `gate`'s state on `cluster` (after
    /// [`FleetInputs::restrict`], every gate and cluster left is its own; with
    /// grants of different scopes, only pairs one grant covers).
    pub fn sees(&self, gate: &GateInput, cluster: &Cluster) -> bool {
        self.pairs.as_ref().is_none_or(|s| {
            s.pair(
                GateRef {
                    name: gate.name(),
                    labels: &gate.gate.metadata.labels,
                },
                ClusterRef {
                    name: &cluster.name,
                    labels: &cluster.labels,
                },
            )
        })
    }

    /// Every live override, oldest first per gate.
    pub fn live_overrides(&self) -> impl Iterator<Item = &OverrideRecord> {
        self.gates
            .iter()
            .filter_map(|g| self.overrides.get(g.name()))
            .flatten()
    }

    /// The live overrides of `gate` that apply to `cluster`, oldest first, and the freezes
    /// covering the cluster (which apply to every gate).
    pub fn applying(&self, gate: &GateInput, cluster: &Cluster) -> Vec<Override> {
        let rows = self
            .overrides
            .get(gate.name())
            .map_or(&[][..], Vec::as_slice);
        applying(&gate.gate, cluster, rows, &self.freezes)
    }

    /// The live overrides of `gate` over its whole scope (no cluster scope) and the fleet
    /// freezes over the whole fleet: what decides when a rollout of it starts.
    pub fn applying_gate_wide(&self, gate: &GateInput) -> Vec<Override> {
        let rows = self
            .overrides
            .get(gate.name())
            .map_or(&[][..], Vec::as_slice);
        let mut out: Vec<Override> = rows
            .iter()
            .filter(|r| r.clusters.is_none())
            .map(to_policy)
            .collect();
        out.extend(
            self.freezes
                .iter()
                .filter(|f| f.clusters.is_none())
                .map(super::super::freezes::scope::to_policy),
        );
        out
    }

    /// The live overrides of `gate` itself that apply to `cluster`, oldest first.
    pub fn applying_own(&self, gate: &GateInput, cluster: &Cluster) -> Vec<Override> {
        self.overrides
            .get(gate.name())
            .map_or_else(Vec::new, |rows| own_applying(&gate.gate, cluster, rows))
    }

    /// The live freezes covering `cluster`, as overrides of the reserved gate.
    pub fn freezes_on(&self, cluster: &Cluster) -> Vec<Override> {
        super::super::freezes::scope::covering(&self.freezes, cluster)
    }

    /// The live freezes made at the hub covering `cluster`: what its snapshot carries (a
    /// freeze made in the cluster lives there, never sent back).
    pub fn freezes_sent_to(&self, cluster: &Cluster) -> Vec<Override> {
        super::super::freezes::scope::covering(
            self.freezes.iter().filter(|f| f.requested_in.is_none()),
            cluster,
        )
    }
}
