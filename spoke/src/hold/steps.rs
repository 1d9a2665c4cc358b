//! What the hold planner decides, as data: the action for one object
//! ([`HoldStep`]), what the spoke reports for each selected or marked object
//! ([`HeldReport`]), the whole [`HoldPlan`], and what follows from it (the
//! Kustomizations to reconcile after a release, held counts per owner). The
//! planner that makes them is in `plan`.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use super::observed::HeldKey;
use crate::cluster::observed::ObjectKey;

/// What to do to one applied object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HoldAction {
    /// Set `reconcile: disabled` with fleetgate's marker for these gates,
    /// recording the owner's applied revision.
    Mark {
        gates: Vec<String>,
        revision: Option<String>,
    },
    /// Marked already; the set of holding gates changed.
    Relabel { gates: Vec<String> },
    /// No closed gate selects it any more: remove fleetgate's marks. `gates`
    /// are the ones that had held it.
    Release { gates: Vec<String> },
}

impl HoldAction {
    pub fn label(&self) -> &'static str {
        match self {
            HoldAction::Mark { .. } => "hold",
            HoldAction::Relabel { .. } => "relabel_hold",
            HoldAction::Release { .. } => "release",
        }
    }
}

/// An action for one object, bound to the resourceVersion it was planned from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoldStep {
    pub key: HeldKey,
    pub resource_version: Option<Arc<str>>,
    /// The owning Kustomization (events, reconcile requests).
    pub owner: Option<Arc<ObjectKey>>,
    pub action: HoldAction,
}

/// What the spoke reports for one object a holdObjects gate selects, that
/// still carries fleetgate's mark, or that a person marked (any watched kind,
/// any Kustomization). Shares its values with the watched object
/// and the other entries (reference counts): 5,000 held objects cost a few
/// dozen bytes each here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HeldReport {
    pub key: HeldKey,
    /// The owning Kustomization (its inventory lists the object, see `inventory`).
    pub owner: Option<Arc<ObjectKey>>,
    /// Every holdObjects gate selecting it, open or closed.
    pub gates: Arc<[String]>,
    /// Gates named in fleetgate's mark (as observed).
    pub held_by: Arc<[String]>,
    /// Flux skips it because a person marked it.
    pub held_by_person: bool,
    /// The owner's applied revision when fleetgate marked it.
    pub since_revision: Option<Arc<str>>,
    pub since: Option<Arc<str>>,
    /// The owner applied a newer revision since: changes to it may be waiting.
    pub newer_revision_applied: bool,
    /// A gate selects it but its kind is not in `--held-kinds`: it cannot be
    /// held here (`HoldNotPermitted`, see `not_permitted`).
    pub not_permitted: bool,
    /// Closed warn gates (`spec.enforcement: warn`) that would hold it if they
    /// were enforced: exactly the gates an enforced mark would name. Nothing
    /// is marked for them.
    pub would_hold_by: Arc<[String]>,
    /// The owner's applied revision when a warn gate first would hold it
    /// (what an enforced mark would have recorded; kept across passes, from
    /// the previous report, so it restarts with the spoke).
    pub would_hold_since_revision: Option<Arc<str>>,
    /// The owner applied a newer revision since: enforced, its changes to this
    /// object would wait.
    pub would_hold_newer_revision: bool,
}

/// The result of planning every applied object.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HoldPlan {
    pub steps: Vec<HoldStep>,
    /// One entry per selected or marked object, sorted by key.
    pub report: Vec<HeldReport>,
}

impl HoldPlan {
    /// Objects currently marked by fleetgate (as observed).
    pub fn held_count(&self) -> usize {
        self.report.iter().filter(|r| !r.held_by.is_empty()).count()
    }

    /// Objects reported as held by a person.
    pub fn held_by_person_count(&self) -> usize {
        self.report.iter().filter(|r| r.held_by_person).count()
    }

    /// Objects a gate selects that no gate can hold here (`--held-kinds`).
    pub fn not_permitted_count(&self) -> usize {
        self.report.iter().filter(|r| r.not_permitted).count()
    }

    /// Objects closed warn gates would hold if they were enforced.
    pub fn would_hold_count(&self) -> usize {
        self.report
            .iter()
            .filter(|r| !r.would_hold_by.is_empty())
            .count()
    }

    /// Of those, objects whose owner applied a newer revision since.
    pub fn would_hold_waiting_count(&self) -> usize {
        self.report
            .iter()
            .filter(|r| r.would_hold_newer_revision)
            .count()
    }
}

/// The Kustomizations to ask for a reconcile after `released` objects lost
/// their marks, each once, sorted.
pub fn reconcile_requests<'s>(released: impl IntoIterator<Item = &'s HoldStep>) -> Vec<ObjectKey> {
    let owners: BTreeSet<ObjectKey> = released
        .into_iter()
        .filter(|s| matches!(s.action, HoldAction::Release { .. }))
        .filter_map(|s| s.owner.as_deref().cloned())
        .collect();
    owners.into_iter().collect()
}

/// Held-object counts per owning Kustomization, for events and status.
pub fn per_owner(report: &[HeldReport]) -> BTreeMap<ObjectKey, usize> {
    let mut out = BTreeMap::new();
    for r in report.iter().filter(|r| !r.held_by.is_empty()) {
        if let Some(o) = &r.owner {
            *out.entry(ObjectKey::clone(o)).or_default() += 1;
        }
    }
    out
}
