//! The desired gate state for this cluster as received from the hub: a plain,
//! serializable `Snapshot` (what is persisted), and its compiled form, which
//! evaluates every gate at an instant with the shared policy crate.

use chrono::{DateTime, Utc};
use fleetgate_policy::{
    Calendars, CompiledGate, Evaluation, FeedOccurrences, GateState, Mode, Override,
    parse_gate_json,
};
use fleetgate_proto::{time::from_timestamp, v1 as pb};
use serde::{Deserialize, Serialize};

use crate::hub::proto_time::required_time;
pub use crate::hub::waves::{Release, WAITING_FOR_WAVE, Waiting};
use crate::{
    error::{Error, Result},
    suspend::plan::GateView,
};

/// Name of the gate the spoke invents for `--enforce-without-snapshot=closed`.
pub const NO_SNAPSHOT_GATE: &str = "fleetgate-no-snapshot";

/// One cluster's desired gate state at one hub revision.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub revision: u64,
    pub cluster: String,
    pub gates: Vec<GateRule>,
    #[serde(default)]
    pub overrides: Vec<Override>,
    #[serde(default)]
    pub hub_time: Option<DateTime<Utc>>,
    /// The hub lets Gate objects made in the cluster be enforced beside its
    /// gates (`--local-gates enforce`); false from hubs that predate it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub local_gates_enforced: bool,
    /// With a hub: the last valid version of each Gate object made in the
    /// cluster that this spoke enforces beside the hub's gates (kept across a
    /// restart in the persisted snapshot, like a standalone spoke's gates).
    /// Not from the hub: the spoke fills it in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub local_gates: Vec<GateRule>,
}

/// One gate's manifest as sent by the hub.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateRule {
    pub name: String,
    pub version: u64,
    /// The Gate manifest (apiVersion fleetgate.io/v1, kind Gate).
    pub manifest: serde_json::Value,
    /// For a gate with `spec.rollout`: the hub released this cluster's wave for
    /// the open period that began at `opening_at`. Absent: not released.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release: Option<Release>,
    /// For a gate with `spec.rollout`: the wave the hub's current rollout placed
    /// this cluster in, not released yet. Shown only; never opens anything.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
    /// For a gate with `spec.rollout`: the latest end of a closing override of
    /// this gate on this cluster that the hub no longer sends (it ended). The
    /// open period never began before it, so a release from before a freeze
    /// opens nothing after it. Absent from hubs that predate it (they never
    /// fence; newer hubs also drop releases older than the fence).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_fence: Option<DateTime<Utc>>,
    /// The occurrences of each `calendar.url` window as the hub expanded its
    /// last good copy of the feed (persisted, so the windows open and close
    /// on time while the hub is away). Absent for a window never fetched.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub calendars: Vec<FeedOccurrences>,
}

/// Whether the hub's `snapshot` has counted the end of the ended freeze `ended` made in the
/// cluster: a rollout gate's opening fence not before that freeze's start (the hub recorded
/// its end, by its own clock). Until then the ended freeze stays among the local overrides
/// (`Context::local_overrides_now`), so the open period of a rollout gate begins at its end
/// and a release from before it opens nothing: the cluster waits for its wave, also while
/// cut off from the hub. Afterwards the hub's fence alone decides (no clock skew between
/// the two ends).
pub fn counted_by(snapshot: &Snapshot, ended: &Override) -> bool {
    snapshot
        .gates
        .iter()
        .any(|r| r.opening_fence.is_some_and(|f| f >= ended.starts_at))
}

impl Snapshot {
    /// Converts the hub's message; malformed content is an `InvalidSnapshot`.
    pub fn from_proto(msg: pb::Snapshot) -> Result<Self> {
        let mut gates = Vec::with_capacity(msg.gates.len());
        for (i, g) in msg.gates.into_iter().enumerate() {
            let manifest = serde_json::from_str(&g.manifest_json).map_err(|e| {
                Error::InvalidSnapshot(format!("gates[{i}] ({}).manifestJson: {e}", g.name))
            })?;
            let release = match g.release {
                None => None,
                Some(r) => Some(Release {
                    opening_at: required_time(
                        r.opening_at.as_ref(),
                        &format!("gates[{i}] ({}).release.openingAt", g.name),
                    )?,
                    rollout_id: r.rollout_id,
                    wave: r.wave,
                }),
            };
            let opening_fence = match g.opening_fence.as_ref() {
                None => None,
                Some(ts) => Some(required_time(
                    Some(ts),
                    &format!("gates[{i}] ({}).openingFence", g.name),
                )?),
            };
            let calendars = super::calendars::from_proto(&g.name, i, g.calendars)?;
            gates.push(GateRule {
                calendars,
                name: g.name,
                version: g.version,
                manifest,
                release,
                waiting: g.waiting.map(|w| Waiting {
                    rollout_id: w.rollout_id,
                    wave: w.wave,
                    wave_name: w.wave_name,
                }),
                opening_fence,
            });
        }
        let mut overrides = Vec::with_capacity(msg.overrides.len());
        for (i, o) in msg.overrides.into_iter().enumerate() {
            let path = format!("overrides[{i}]");
            let state: GateState = o
                .state
                .parse()
                .map_err(|e| Error::InvalidSnapshot(format!("{path}.state: {e}")))?;
            overrides.push(Override {
                starts_at: required_time(o.starts_at.as_ref(), &format!("{path}.startsAt"))?,
                created_at: required_time(o.created_at.as_ref(), &format!("{path}.createdAt"))?,
                expires_at: match o.expires_at.as_ref() {
                    None => None,
                    Some(ts) => Some(required_time(Some(ts), &format!("{path}.expiresAt"))?),
                },
                id: o.id,
                gate: o.gate,
                state,
                actor: o.actor,
                reason: o.reason,
            });
        }
        Ok(Snapshot {
            revision: msg.revision,
            cluster: msg.cluster,
            gates,
            overrides,
            hub_time: msg.hub_time.as_ref().and_then(from_timestamp),
            local_gates_enforced: msg.local_gates_enforced,
            local_gates: Vec::new(),
        })
    }
}

/// A snapshot whose gates are parsed and compiled, ready to evaluate: the
/// hub's gates, then (when the hub enforces them) the local gates whose names
/// no hub gate takes (the hub's wins).
#[derive(Debug)]
pub struct CompiledSnapshot {
    pub snapshot: Snapshot,
    gates: Vec<CompiledGate>,
    /// `gates[..hub_gates]` are `snapshot.gates`; the rest are local gates.
    hub_gates: usize,
}

/// Every gate's state at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluated {
    pub gates: Vec<GateView>,
    /// The earliest instant any gate changes state: re-plan then.
    pub next_transition: Option<DateTime<Utc>>,
    /// The freeze in force, as written on the objects it holds (`fleetgate.io/freeze-reason`).
    pub freeze_reason: Option<String>,
}

impl Evaluated {
    /// The planner for these gate states over `objects`, naming the freeze in force.
    pub fn planner<'a>(
        &'a self,
        objects: &[crate::cluster::observed::ObservedObject],
    ) -> crate::suspend::plan::Planner<'a> {
        crate::suspend::plan::Planner::new(&self.gates, objects)
            .with_freeze(self.freeze_reason.as_deref())
    }
}

impl CompiledSnapshot {
    /// Parses and compiles every gate. One bad gate rejects the whole snapshot:
    /// enforcing a partial set could resume objects a dropped gate should hold.
    pub fn compile(snapshot: Snapshot) -> Result<Self> {
        let mut gates = Vec::with_capacity(snapshot.gates.len());
        let now = Utc::now();
        for (i, rule) in snapshot.gates.iter().enumerate() {
            let gate = parse_gate_json(rule.manifest.clone())
                .and_then(|g| {
                    g.compile_with(&Calendars::at(now).with_feeds(rule.calendars.clone()))
                })
                .map_err(|e| Error::InvalidSnapshot(format!("gates[{i}] ({}): {e}", rule.name)))?;
            gates.push(gate);
        }
        let hub_gates = gates.len();
        if snapshot.local_gates_enforced {
            for (i, rule) in snapshot.local_gates.iter().enumerate() {
                if snapshot.gates.iter().any(|g| g.name == rule.name) {
                    continue;
                }
                let gate = parse_gate_json(rule.manifest.clone())
                    .and_then(|g| g.compile())
                    .map_err(|e| {
                        Error::InvalidSnapshot(format!("localGates[{i}] ({}): {e}", rule.name))
                    })?;
                gates.push(gate);
            }
        }
        Ok(CompiledSnapshot {
            snapshot,
            gates,
            hub_gates,
        })
    }

    /// Whether `name` is one of the hub's gates (not a local one).
    pub fn is_hub_gate(&self, name: &str) -> bool {
        self.gates[..self.hub_gates]
            .iter()
            .any(|g| g.name() == name)
    }

    /// Whether `name` is a local gate enforced beside the hub's.
    pub fn is_local_gate(&self, name: &str) -> bool {
        self.gates[self.hub_gates..]
            .iter()
            .any(|g| g.name() == name)
    }

    /// What `--enforce-without-snapshot=closed` enforces: one closed gate over
    /// every Kustomization and HelmRelease.
    pub fn all_closed() -> Result<Self> {
        let manifest = serde_json::json!({
            "apiVersion": "fleetgate.io/v1",
            "kind": "Gate",
            "metadata": { "name": NO_SNAPSHOT_GATE },
            "spec": {
                "description": "no snapshot received yet; --enforce-without-snapshot=closed",
                "clusters": { "selector": {} },
                "targets": { "kinds": ["Kustomization", "HelmRelease"] },
                "default": "closed",
            }
        });
        Self::compile(Snapshot {
            revision: 0,
            cluster: String::new(),
            gates: vec![GateRule {
                name: NO_SNAPSHOT_GATE.into(),
                version: 0,
                manifest,
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: vec![],
            }],
            overrides: vec![],
            hub_time: None,
            local_gates_enforced: false,
            local_gates: vec![],
        })
    }

    /// What `--enforce-without-snapshot=open` enforces: no gates at all, so
    /// everything fleetgate suspended earlier is resumed.
    pub fn all_open() -> Self {
        CompiledSnapshot {
            snapshot: Snapshot {
                revision: 0,
                cluster: String::new(),
                gates: vec![],
                overrides: vec![],
                hub_time: None,
                local_gates_enforced: false,
                local_gates: vec![],
            },
            gates: vec![],
            hub_gates: 0,
        }
    }

    pub fn revision(&self) -> u64 {
        self.snapshot.revision
    }

    /// Evaluates every gate at `now` with the snapshot's overrides.
    pub fn evaluate(&self, now: DateTime<Utc>) -> Evaluated {
        self.evaluate_with(now, &[])
    }

    /// The overrides of `gate`: the snapshot's and `local` ones (requests made
    /// in the cluster); the newest active one wins.
    pub fn overrides_of(&self, gate: &str, local: &[Override]) -> Vec<Override> {
        self.snapshot
            .overrides
            .iter()
            .chain(local)
            .filter(|o| o.applies_to_gate(gate))
            .cloned()
            .collect()
    }

    /// One gate's compiled form, by name.
    pub fn gate(&self, name: &str) -> Option<&CompiledGate> {
        self.gates.iter().find(|g| g.name() == name)
    }

    /// One gate's state at `now`, with the snapshot's and `local` overrides.
    pub fn evaluate_gate(
        &self,
        name: &str,
        now: DateTime<Utc>,
        local: &[Override],
    ) -> Option<Evaluation> {
        let i = self.gates.iter().position(|g| g.name() == name)?;
        Some(self.evaluate_at(i, now, &self.overrides_of(name, local)))
    }

    /// Gate `i`'s state at `now`. A gate with `spec.rollout` opens only with
    /// the hub's release of this cluster for the open period it is in (the
    /// release's `opening_at` not before the period's start, computed by the
    /// same policy code as the hub's): a spoke cut off from the hub, or holding
    /// a release from an earlier opening, stays closed. Closing never waits.
    fn evaluate_at(&self, i: usize, now: DateTime<Utc>, overrides: &[Override]) -> Evaluation {
        let gate = &self.gates[i];
        let eval = gate.evaluate(now, overrides);
        if gate.gate().spec.rollout.is_none() || !eval.state.is_open() {
            return eval;
        }
        // Only the hub releases waves: a local gate with `spec.rollout` stays
        // closed (fail-safe), like a standalone one.
        let rule = (i < self.hub_gates)
            .then(|| self.snapshot.gates.get(i))
            .flatten();
        crate::hub::waves::hold(
            rule.and_then(|r| r.release.as_ref()),
            rule.and_then(|r| r.waiting.as_ref()),
            eval,
            gate.open_since_fenced(now, overrides, rule.and_then(|r| r.opening_fence)),
        )
    }

    /// Evaluates every gate at `now` with the snapshot's overrides and `local`
    /// ones (requests made in the cluster).
    pub fn evaluate_with(&self, now: DateTime<Utc>, local: &[Override]) -> Evaluated {
        let mut views = Vec::with_capacity(self.gates.len());
        let mut next: Option<DateTime<Utc>> = None;
        for (i, gate) in self.gates.iter().enumerate() {
            let overrides = self.overrides_of(gate.name(), local);
            let eval = self.evaluate_at(i, now, &overrides);
            if let Some(t) = eval.next_transition {
                next = Some(next.map_or(t, |n| n.min(t)));
            }
            let spec = &gate.gate().spec;
            views.push(GateView {
                name: gate.name().to_owned(),
                mode: spec.mode,
                targets: spec.targets.clone(),
                objects: spec.objects.clone(),
                open: eval.state.is_open(),
                reason: eval.reason,
                warn: spec.enforcement.is_warn(),
            });
        }
        // A freeze (the hub's or one made in the cluster) also holds every Kustomization and
        // HelmRelease no gate covers, through the built-in gate; its edges wake the loop even
        // on a cluster without gates.
        let freezes: Vec<&Override> = self
            .snapshot
            .overrides
            .iter()
            .chain(local)
            .filter(|o| o.is_freeze())
            .collect();
        for t in freezes
            .iter()
            .flat_map(|o| [Some(o.starts_at), o.expires_at])
            .flatten()
            .filter(|t| *t > now)
        {
            next = Some(next.map_or(t, |n| n.min(t)));
        }
        let freeze = fleetgate_policy::active_freeze(freezes, now);
        if let Some(f) = freeze {
            views.push(GateView::freeze(f.freeze_reason_utc(now)));
        }
        Evaluated {
            gates: views,
            next_transition: next,
            freeze_reason: freeze.map(crate::gates::freeze::annotation),
        }
    }

    /// Modes in use, for logs.
    pub fn modes(&self) -> impl Iterator<Item = Mode> + '_ {
        self.gates.iter().map(|g| g.gate().spec.mode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fleetgate_proto::time::to_timestamp;

    fn manifest(name: &str, default: &str) -> String {
        serde_json::json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": name},
            "spec": {"clusters": {"names": ["c1"]}, "targets": {"kinds": ["Kustomization"]}, "default": default}
        })
        .to_string()
    }

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().to_utc()
    }

    #[test]
    fn proto_snapshot_converts_and_evaluates_with_overrides() {
        let now = at("2026-11-27T10:00:00Z");
        let msg = pb::Snapshot {
            revision: 7,
            cluster: "c1".into(),
            gates: vec![pb::GateRule {
                name: "g".into(),
                version: 1,
                manifest_json: manifest("g", "open"),
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: vec![],
            }],
            overrides: vec![pb::Override {
                id: "o1".into(),
                gate: "g".into(),
                state: "closed".into(),
                starts_at: Some(to_timestamp(at("2026-11-27T09:00:00Z"))),
                expires_at: Some(to_timestamp(at("2026-11-27T11:00:00Z"))),
                actor: "alice".into(),
                reason: "incident".into(),
                created_at: Some(to_timestamp(at("2026-11-27T09:00:00Z"))),
            }],
            hub_time: Some(to_timestamp(now)),
            local_gates_enforced: false,
        };
        let snap = Snapshot::from_proto(msg).unwrap();
        assert_eq!(snap.revision, 7);
        assert_eq!(snap.hub_time, Some(now));
        // The persisted form round-trips.
        let json = serde_json::to_string(&snap).unwrap();
        assert_eq!(serde_json::from_str::<Snapshot>(&json).unwrap(), snap);

        let compiled = CompiledSnapshot::compile(snap).unwrap();
        let eval = compiled.evaluate(now);
        assert_eq!(eval.gates.len(), 1);
        assert!(!eval.gates[0].open, "the override closes it");
        assert_eq!(eval.next_transition, Some(at("2026-11-27T11:00:00Z")));
        assert!(compiled.evaluate(at("2026-11-27T11:00:00Z")).gates[0].open);
    }

    #[test]
    fn bad_content_is_rejected_with_its_path() {
        let msg = pb::Snapshot {
            revision: 1,
            gates: vec![pb::GateRule {
                name: "g".into(),
                version: 1,
                manifest_json: "{".into(),
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: vec![],
            }],
            ..Default::default()
        };
        let err = Snapshot::from_proto(msg).unwrap_err().to_string();
        assert!(err.contains("gates[0] (g).manifestJson"), "{err}");

        let msg = pb::Snapshot {
            revision: 1,
            overrides: vec![pb::Override {
                state: "ajar".into(),
                ..Default::default()
            }],
            ..Default::default()
        };
        let err = Snapshot::from_proto(msg).unwrap_err().to_string();
        assert!(err.contains("overrides[0].state"), "{err}");

        let snap = Snapshot {
            revision: 1,
            cluster: "c1".into(),
            gates: vec![GateRule {
                name: "g".into(),
                version: 1,
                manifest: serde_json::json!({"kind": "Gate"}),
                release: None,
                waiting: None,
                opening_fence: None,
                calendars: vec![],
            }],
            overrides: vec![],
            hub_time: None,
            local_gates_enforced: false,
            local_gates: vec![],
        };
        let err = CompiledSnapshot::compile(snap).unwrap_err().to_string();
        assert!(err.contains("gates[0] (g)"), "{err}");
    }

    #[test]
    fn local_gates_compile_beside_the_hubs_only_when_enforced() {
        let now = at("2026-11-27T10:00:00Z");
        let rule = |name: &str, default: &str| GateRule {
            name: name.into(),
            version: 1,
            manifest: serde_json::from_str(&manifest(name, default)).unwrap(),
            release: None,
            waiting: None,
            opening_fence: None,
            calendars: vec![],
        };
        let mut snap = Snapshot {
            revision: 5,
            cluster: "c1".into(),
            gates: vec![rule("hub", "open"), rule("both", "open")],
            overrides: vec![],
            hub_time: None,
            local_gates_enforced: false,
            local_gates: vec![rule("git", "closed"), rule("both", "closed")],
        };
        let ignored = CompiledSnapshot::compile(snap.clone()).unwrap();
        assert_eq!(ignored.evaluate(now).gates.len(), 2);
        assert!(!ignored.is_local_gate("git"));

        snap.local_gates_enforced = true;
        let enforced = CompiledSnapshot::compile(snap.clone()).unwrap();
        let names: Vec<(String, bool)> = enforced
            .evaluate(now)
            .gates
            .into_iter()
            .map(|g| (g.name, g.open))
            .collect();
        // The hub's `both` wins over the local one of that name.
        assert_eq!(
            names,
            [
                ("hub".into(), true),
                ("both".into(), true),
                ("git".into(), false)
            ]
        );
        assert!(enforced.is_local_gate("git") && !enforced.is_local_gate("both"));
        assert!(enforced.is_hub_gate("both") && !enforced.is_hub_gate("git"));
        // Persisted with the snapshot, so a restart offline keeps them.
        let json = serde_json::to_string(&snap).unwrap();
        assert_eq!(serde_json::from_str::<Snapshot>(&json).unwrap(), snap);
    }

    #[test]
    fn without_snapshot_policies() {
        let closed = CompiledSnapshot::all_closed().unwrap().evaluate(Utc::now());
        assert_eq!(closed.gates.len(), 1);
        assert!(!closed.gates[0].open);
        assert_eq!(closed.gates[0].name, NO_SNAPSHOT_GATE);
        assert!(
            CompiledSnapshot::all_open()
                .evaluate(Utc::now())
                .gates
                .is_empty()
        );
    }
}
