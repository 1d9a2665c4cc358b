//! What the spokes of the read clusters reported, as the fleet's views use it: per
//! cluster and per gate counts, held-object digests, the Gate objects made in each
//! cluster and report problems. [`read_fleet_reported`] reads the fleet-wide part.

use std::collections::{BTreeMap, HashMap};

use sqlx::PgConnection;

use fleetgate_api_types::status::ObjectCounts;

use super::briefs::{FeedBrief, ReportProblemBrief};
use crate::Result;
use crate::db::held_objects::HeldObjectStatus;
use crate::db::reports::LocalGate;
use crate::db::status::ObjectStatus;
use crate::db::{self, held_objects};

/// What the spokes of the read clusters reported.
#[derive(Debug, Clone, Default)]
pub struct Reported {
    /// Object and held-object counts per cluster (clusters that reported
    /// neither absent).
    pub counts: HashMap<String, ObjectCounts>,
    /// Held objects per (cluster, governing gate).
    pub held_by_gate: HashMap<(String, String), i64>,
    /// Objects a closed warn gate would suspend, per (cluster, gate).
    pub would_suspend_by_gate: HashMap<(String, String), i64>,
    /// Every reported object ([`Scope::Cluster`](super::Scope::Cluster) only), by kind, namespace, name.
    pub objects: Vec<ObjectStatus>,
    /// Per cluster with reported held objects, a digest that changes whenever
    /// its held set does (which objects, by which gates).
    pub held_digests: HashMap<String, String>,
    /// Objects held by fleetgate per (cluster, gate of its mark).
    pub held_objects_by_gate: HashMap<(String, String), i64>,
    /// Objects inside Kustomizations a closed warn gate would hold, per (cluster, gate).
    pub would_hold_objects_by_gate: HashMap<(String, String), i64>,
    /// Every reported held object ([`Scope::Cluster`](super::Scope::Cluster) only), held ones first.
    pub held_object_list: Vec<HeldObjectStatus>,
    /// Gate objects made in each cluster, by name, as its spoke reported
    /// them (clusters without any absent).
    pub local_gates: HashMap<String, Vec<LocalGate>>,
    /// What went wrong with the cluster's latest reports ([`Scope::Cluster`](super::Scope::Cluster) only).
    pub report_problems: db::reports::ReportProblems,
    /// Per cluster whose latest report had problems ([`Scope::Fleet`](super::Scope::Fleet) only).
    pub problem_briefs: HashMap<String, ReportProblemBrief>,
    /// Each `calendar.url` window's feed by (gate, window) ([`Scope::Fleet`](super::Scope::Fleet)
    /// only).
    pub feed_briefs: BTreeMap<(String, String), FeedBrief>,
}

impl Reported {
    /// `cluster`'s local gates (none when it reported none).
    pub fn local_gates_of(&self, cluster: &str) -> &[LocalGate] {
        self.local_gates.get(cluster).map_or(&[], Vec::as_slice)
    }
}
/// The reported-object counts of every cluster, or of those `names` (one [`ObjectCounts`]
/// per cluster, held objects included) and per gate, for fleet-wide views.
pub(super) async fn read_fleet_reported(
    tx: &mut PgConnection,
    names: Option<&[String]>,
) -> Result<Reported> {
    let mut counts: HashMap<String, ObjectCounts> = db::status::counts_by_cluster_of(tx, names)
        .await?
        .into_iter()
        .map(|c| {
            let counts = ObjectCounts {
                governed: c.governed,
                held: c.held,
                suspended: c.suspended,
                would_suspend: c.would_suspend,
                would_hold: c.would_hold,
                ..ObjectCounts::default()
            };
            (c.cluster, counts)
        })
        .collect();
    let mut held_digests = HashMap::new();
    for h in held_objects::counts_by_cluster_of(tx, names).await? {
        let c = counts.entry(h.cluster.clone()).or_default();
        c.held_objects = h.held;
        c.held_objects_by_person = h.by_person;
        c.held_objects_waiting = h.waiting;
        c.held_objects_not_permitted = h.not_permitted;
        c.would_hold_objects = h.would_hold;
        c.would_hold_objects_waiting = h.would_hold_waiting;
        held_digests.insert(h.cluster, h.digest);
    }
    let by_gate = |rows: Vec<(String, String, i64)>| {
        rows.into_iter()
            .map(|(cluster, gate, n)| ((cluster, gate), n))
            .collect()
    };
    Ok(Reported {
        counts,
        held_by_gate: by_gate(db::status::held_by_gate_of(tx, names).await?),
        would_suspend_by_gate: by_gate(db::status::would_suspend_by_gate_of(tx, names).await?),
        held_digests,
        held_objects_by_gate: by_gate(held_objects::held_by_gate_of(tx, names).await?),
        would_hold_objects_by_gate: by_gate(held_objects::would_hold_by_gate_of(tx, names).await?),
        local_gates: match names {
            None => db::reports::local_gates(tx, None).await?,
            Some(names) => db::reports::local_gates_of(tx, names).await?,
        }
        .into_iter()
        .collect(),
        problem_briefs: db::reports::problem_briefs_of(tx, names)
            .await?
            .into_iter()
            .map(|(cluster, total, write_error)| {
                let total = u32::try_from(total).unwrap_or(0);
                (cluster, ReportProblemBrief { total, write_error })
            })
            .collect(),
        ..Reported::default()
    })
}
