//! The pure core of the spoke: from the gates' states at one instant and the
//! observed Flux objects, decide per object what to patch and what to report.
//! No I/O, no clock; `enforce` applies the steps, `report` sends the entries.

use std::{
    collections::{BTreeSet, HashMap},
    sync::Arc,
};

use fleetgate_policy::{FluxKind, HeldObjects, Mode, Targets};

use crate::cluster::observed::{ObjectKey, ObservedObject};
use crate::cluster::readiness::Readiness;

/// One gate as the planner sees it at one instant.
#[derive(Clone, Debug, PartialEq)]
pub struct GateView {
    pub name: String,
    pub mode: Mode,
    pub targets: Targets,
    /// `spec.objects` of a holdObjects gate.
    pub objects: Option<HeldObjects>,
    pub open: bool,
    /// Why it is open or closed (for events and logs).
    pub reason: String,
    /// `spec.enforcement: warn`: while closed it holds nothing; the planner reports what it
    /// would hold instead.
    pub warn: bool,
}

impl GateView {
    /// Closed and enforced: it holds what it governs.
    pub fn holds(&self) -> bool {
        !self.open && !self.warn
    }

    /// Closed in warn mode: it would hold what it governs.
    pub fn would_hold(&self) -> bool {
        !self.open && self.warn
    }
}

impl GateView {
    /// The built-in gate a freeze closes ([`fleetgate_policy::FREEZE_GATE`]): it suspends
    /// every Kustomization and HelmRelease that no suspend or freezeSources gate covers
    /// (those are held by their own gates, which the freeze closes too).
    pub fn freeze(reason: String) -> Self {
        GateView {
            name: fleetgate_policy::FREEZE_GATE.to_owned(),
            mode: Mode::Suspend,
            targets: Targets {
                kinds: vec![FluxKind::Kustomization, FluxKind::HelmRelease],
                ..Targets::default()
            },
            objects: None,
            open: false,
            reason,
            warn: false,
        }
    }

    fn is_freeze(&self) -> bool {
        self.name == fleetgate_policy::FREEZE_GATE
    }
}

/// What to do to one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Set `spec.suspend: true` and mark it as fleetgate's, held by these gates.
    Suspend { gates: Vec<String> },
    /// Already suspended by fleetgate; the set of holding gates changed.
    Relabel { gates: Vec<String> },
    /// fleetgate suspended it and nothing holds it any more: resume and request
    /// a reconcile. `gates` are the ones that had held it (from the mark).
    Resume { gates: Vec<String> },
    /// Not suspended but still marked (a person resumed it after the gates
    /// opened): remove the stale mark.
    ClearMark,
}

/// An action for one object, bound to the resourceVersion it was planned from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    pub key: ObjectKey,
    pub resource_version: Option<String>,
    pub action: Action,
    /// `Some(true)`: also pin the object against its parent Kustomization
    /// (`reconcile: disabled` + `fleetgate.io/pinned`); `Some(false)`: remove
    /// fleetgate's pin; `None`: leave that annotation alone.
    pub pin: Option<bool>,
    /// `fleetgate.io/freeze-reason` after a `Suspend` or `Relabel` (`None` removes it);
    /// `Resume` and `ClearMark` always remove it.
    pub freeze_reason: Option<String>,
}

/// What the spoke reports for one governed object (as observed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectReport {
    pub key: ObjectKey,
    pub suspended: bool,
    /// Gates named in fleetgate's mark (empty unless fleetgate suspended it).
    pub suspended_by: Vec<String>,
    /// Every gate governing it, directly or through the sources it consumes.
    pub gates: Vec<String>,
    /// Shared with the observed object (and every object at that revision).
    pub last_applied_revision: Option<Arc<str>>,
    pub newest_source_revision: Option<Arc<str>>,
    /// A newer source revision waits behind a closed gate.
    pub held: bool,
    /// Closed warn gates that would suspend it if they were enforced (empty for an object a
    /// person suspended: an enforced gate would leave it alone too).
    pub would_suspend_by: Vec<String>,
    /// A newer source revision would wait behind a closed warn gate.
    pub would_hold: bool,
    pub suspended_by_human: bool,
    /// Annotated `fleetgate.io/ignore: "true"`: `gates` target it, but it is not governed.
    pub ignored: bool,
    /// A parent Kustomization applies it; fleetgate pinned its suspend with
    /// `reconcile: disabled` so the parent cannot revert it (as observed).
    pub pinned: bool,
    /// A parent Kustomization server-side applies its spec (managedFields):
    /// without the pin, a manifest declaring `suspend: false` resumes it.
    pub applied_by_parent: bool,
    /// Flux's view of its health (as observed).
    pub readiness: Readiness,
}

/// The result of planning every observed object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// One entry per governed object, sorted by key.
    pub report: Vec<ObjectReport>,
}

impl Plan {
    /// Number of governed objects currently suspended by fleetgate (as observed).
    pub fn suspended_count(&self) -> usize {
        self.report
            .iter()
            .filter(|r| r.suspended && !r.suspended_by.is_empty())
            .count()
    }

    /// Number of governed objects with a held change.
    pub fn held_count(&self) -> usize {
        self.report.iter().filter(|r| r.held).count()
    }

    /// Number of governed objects closed warn gates would suspend.
    pub fn would_suspend_count(&self) -> usize {
        self.report
            .iter()
            .filter(|r| !r.would_suspend_by.is_empty())
            .count()
    }

    /// Number of governed objects whose newer revision a closed warn gate would hold.
    pub fn would_hold_count(&self) -> usize {
        self.report.iter().filter(|r| r.would_hold).count()
    }
}

/// Kinds that consume sources; `freezeSources` suspends their sources instead.
fn is_consumer(kind: FluxKind) -> bool {
    matches!(kind, FluxKind::Kustomization | FluxKind::HelmRelease)
}

/// Plans objects against a fixed set of gate states. Built once per reconcile
/// pass over all observed objects (the source index needs all of them); single
/// objects can then be re-planned, e.g. after a 409 re-read.
pub struct Planner<'a> {
    gates: &'a [GateView],
    /// Sources frozen by `freezeSources` gates through the consumers targeted.
    frozen: HashMap<ObjectKey, BTreeSet<usize>>,
    /// Artifact revision of every observed source.
    artifacts: HashMap<ObjectKey, Arc<str>>,
    /// The freeze in force ([`crate::hub::snapshot::Evaluated::freeze_reason`]): written on
    /// every object fleetgate holds while it lasts.
    freeze: Option<&'a str>,
}

impl<'a> Planner<'a> {
    pub fn new(gates: &'a [GateView], objects: &[ObservedObject]) -> Self {
        let mut frozen: HashMap<ObjectKey, BTreeSet<usize>> = HashMap::new();
        let mut artifacts = HashMap::new();
        for obj in objects {
            if let Some(rev) = &obj.artifact_revision {
                artifacts.insert(obj.key.clone(), rev.clone());
            }
            // An ignored consumer freezes nothing: its sources stay as free as it is.
            if !is_consumer(obj.key.kind) || obj.ignored {
                continue;
            }
            for (i, gate) in gates.iter().enumerate() {
                if gate.mode == Mode::FreezeSources && targets(gate, obj) {
                    for source in &obj.source_refs {
                        frozen.entry(source.clone()).or_default().insert(i);
                    }
                }
            }
        }
        Planner {
            gates,
            frozen,
            artifacts,
            freeze: None,
        }
    }

    /// The freeze in force, named on every object fleetgate holds (`fleetgate.io/freeze-reason`).
    pub fn with_freeze(mut self, freeze: Option<&'a str>) -> Self {
        self.freeze = freeze;
        self
    }

    /// Plans every object: steps for those needing a change, reports for the governed.
    pub fn plan(&self, objects: &[ObservedObject]) -> Plan {
        let mut plan = Plan::default();
        for obj in objects {
            let (step, report) = self.plan_object(obj);
            plan.steps.extend(step);
            plan.report.extend(report);
        }
        plan.steps.sort_by(|a, b| a.key.cmp(&b.key));
        plan.report.sort_by(|a, b| a.key.cmp(&b.key));
        plan
    }

    /// Plans one object.
    pub fn plan_object(&self, obj: &ObservedObject) -> (Option<Step>, Option<ObjectReport>) {
        // Gates that act on this object itself: suspend-mode gates targeting it,
        // freezeSources gates targeting it when it is not a consumer (a source or an
        // ImageUpdateAutomation has nothing else to freeze), and freezeSources
        // gates freezing it as the source of a targeted consumer.
        let mut holding: BTreeSet<usize> = self.frozen.get(&obj.key).cloned().unwrap_or_default();
        // Gates reaching a consumer only through its sources.
        let mut via_sources: BTreeSet<usize> = BTreeSet::new();
        for (i, gate) in self.gates.iter().enumerate() {
            // holdObjects gates act on the objects inside (see `hold::plan`),
            // never on the Kustomization itself.
            if gate.mode == Mode::HoldObjects || !self.targets(gate, obj) {
                continue;
            }
            if gate.mode == Mode::FreezeSources && is_consumer(obj.key.kind) {
                via_sources.insert(i);
            } else {
                holding.insert(i);
            }
        }
        // Ignored: nothing holds it, so a suspend of fleetgate's own is released and a
        // person's stays, exactly as when every gate opens.
        let closed: Vec<String> = if obj.ignored {
            Vec::new()
        } else {
            self.names(holding.iter().copied().filter(|&i| self.gates[i].holds()))
        };
        // What closed warn gates would do if enforced: suspend it, unless a person did
        // (fleetgate never touches a person's suspend).
        let would: Vec<String> = if obj.ignored || obj.suspended_by_human() {
            Vec::new()
        } else {
            self.names(
                holding
                    .iter()
                    .copied()
                    .filter(|&i| self.gates[i].would_hold()),
            )
        };

        // While a freeze is in force it closes every gate, so whatever fleetgate holds is
        // held by the freeze: name it on the object. A person's suspend is never touched.
        let freeze_reason = if closed.is_empty() { None } else { self.freeze };
        let freeze_differs = obj.freeze_reason.as_deref() != freeze_reason;
        let action = match (&obj.suspended_by, obj.suspended, closed.is_empty()) {
            // A person's suspend: never touched, whatever the gates say.
            (None, true, _) => None,
            (None, false, true) => None,
            (_, false, false) => Some(Action::Suspend {
                gates: closed.clone(),
            }),
            (Some(marked), true, false) if *marked != closed || freeze_differs => {
                Some(Action::Relabel {
                    gates: closed.clone(),
                })
            }
            (Some(_), true, false) => None,
            (Some(marked), true, true) => Some(Action::Resume {
                gates: marked.clone(),
            }),
            (Some(_), false, true) => Some(Action::ClearMark),
        };
        // Nested layout: a parent Kustomization applying this object would
        // revert spec.suspend at its next apply (flux2#3462). While fleetgate
        // holds it suspended it also carries kustomize-controller's opt-out,
        // so the parent skips it; a person's opt-out is left as it is.
        let n = &obj.nesting;
        let ours_after = match &action {
            Some(Action::Suspend { .. } | Action::Relabel { .. }) => true,
            Some(Action::Resume { .. } | Action::ClearMark) => false,
            None => obj.suspended && obj.suspended_by.is_some(),
        };
        let want_pin = ours_after && n.parent.is_some() && !n.disabled_by_person;
        let pin = match (want_pin, n.pinned) {
            (true, false) => Some(true),
            (false, true) => Some(false),
            _ => None,
        };
        let action = match (action, pin) {
            (None, Some(_)) if ours_after => Some(Action::Relabel {
                gates: obj.suspended_by.clone().unwrap_or_default(),
            }),
            (None, Some(_)) => Some(Action::ClearMark),
            (action, _) => action,
        };
        let step = action.map(|action| Step {
            key: obj.key.clone(),
            resource_version: obj.resource_version.clone(),
            action,
            pin,
            freeze_reason: freeze_reason.map(str::to_owned),
        });

        let mut gates: BTreeSet<usize> = holding.clone();
        gates.extend(via_sources.iter().copied());
        if gates.is_empty() {
            return (step, None);
        }
        let (last_applied, newest) = self.revisions(obj);
        // Held: fleetgate suspended this object and its source has moved on. A
        // consumer behind a frozen source is not held by that: it still applies
        // whatever its source has; what the frozen source has not fetched is not
        // visible in the cluster.
        let held = !closed.is_empty()
            && obj.suspended
            && obj.suspended_by.is_some()
            && newest.is_some()
            && newest != last_applied
            && !obj.key.kind.is_source();
        // Would hold: a warn gate would suspend it and its source has moved on (so
        // enforced it would keep the older revision applied).
        let would_hold = !would.is_empty()
            && newest.is_some()
            && newest != last_applied
            && !obj.key.kind.is_source();
        let report = ObjectReport {
            key: obj.key.clone(),
            suspended: obj.suspended,
            suspended_by: obj.suspended_by.clone().unwrap_or_default(),
            gates: self.names(gates.into_iter()),
            last_applied_revision: last_applied,
            newest_source_revision: newest,
            held,
            would_suspend_by: would,
            would_hold,
            suspended_by_human: obj.suspended_by_human(),
            ignored: obj.ignored,
            pinned: n.pinned,
            applied_by_parent: n.applied_by_parent,
            readiness: obj.readiness.clone(),
        };
        (step, Some(report))
    }

    /// The gates that hold `obj` back when closed, open or not: those that would suspend it
    /// and those freezing the sources it applies from. Empty for an ignored object unless
    /// another targeted consumer freezes a source it shares.
    pub fn gates_holding(&self, obj: &ObservedObject) -> Vec<String> {
        let mut idx: BTreeSet<usize> = BTreeSet::new();
        if !obj.ignored {
            idx.extend(self.frozen.get(&obj.key).into_iter().flatten().copied());
            idx.extend((0..self.gates.len()).filter(|&i| self.targets(&self.gates[i], obj)));
        }
        for source in &obj.source_refs {
            idx.extend(self.frozen.get(source).into_iter().flatten().copied());
        }
        self.names(idx.into_iter())
    }

    /// (last applied, newest available) revisions. A source's own artifact is
    /// both: what lies upstream of it is not visible in the cluster.
    fn revisions(&self, obj: &ObservedObject) -> (Option<Arc<str>>, Option<Arc<str>>) {
        if obj.key.kind.is_source() {
            return (obj.artifact_revision.clone(), obj.artifact_revision.clone());
        }
        let newest = obj
            .source_refs
            .iter()
            .find_map(|s| self.artifacts.get(s))
            .cloned();
        (obj.last_applied_revision.clone(), newest)
    }

    /// Whether `gate` targets `obj`; the freeze gate only what no enforced suspend or
    /// freezeSources gate targets.
    fn targets(&self, gate: &GateView, obj: &ObservedObject) -> bool {
        if !targets(gate, obj) {
            return false;
        }
        !gate.is_freeze()
            || !self.gates.iter().any(|g| {
                // A warn gate holds nothing: what only it covers the freeze holds.
                !g.is_freeze() && !g.warn && g.mode != Mode::HoldObjects && targets(g, obj)
            })
    }

    fn names(&self, idx: impl Iterator<Item = usize>) -> Vec<String> {
        let mut names: Vec<String> = idx.map(|i| self.gates[i].name.clone()).collect();
        names.sort();
        names.dedup();
        names
    }
}

fn targets(gate: &GateView, obj: &ObservedObject) -> bool {
    gate.targets
        .matches(obj.key.kind, &obj.key.namespace, &obj.key.name, &obj.labels)
}

/// Convenience: plan every object against the gate states.
pub fn plan(gates: &[GateView], objects: &[ObservedObject]) -> Plan {
    Planner::new(gates, objects).plan(objects)
}

#[cfg(test)]
mod tests;
