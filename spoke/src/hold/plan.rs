//! The pure planner of object-level holds (`mode: holdObjects`): from the gate
//! states, the observed Kustomizations and the applied objects, decide which
//! objects to mark, relabel or release, which Kustomizations to ask for a
//! reconcile, and what to report. No I/O, no clock.
//!
//! Safety rules (property-tested in `tests/hold_properties.rs`):
//! - an object Flux already skips without fleetgate's marker is a person's
//!   hold: never marked, relabelled or released;
//! - a release removes only what fleetgate set and asks the owning
//!   Kustomization to reconcile, so the held changes roll out at once;
//! - an object is marked exactly while a closed holdObjects gate selects it;
//! - a closed warn gate marks nothing; it is reported as would-hold on exactly
//!   the objects it would mark if enforced (`tests/hold_properties.rs`).

use std::{
    collections::{BTreeMap, BTreeSet, HashMap},
    sync::Arc,
};

use fleetgate_policy::{FluxKind, Mode};

use super::{
    inventory::{Entry, Inventories},
    observed::{AppliedObject, HeldKey},
};
use crate::{
    cluster::observed::{ObjectKey, ObservedObject},
    suspend::plan::GateView,
};

pub use super::steps::{HeldReport, HoldAction, HoldPlan, HoldStep, per_owner, reconcile_requests};

/// A Kustomization as an owner of held objects.
struct Owner<'a> {
    ks: &'a ObservedObject,
    /// Shared by every report entry it owns.
    key: Arc<ObjectKey>,
}

/// Plans holds against fixed gate states; built once per pass, then single
/// objects can be re-planned after a 409 re-read.
pub struct HoldPlanner<'a> {
    gates: Vec<&'a GateView>,
    /// Some gate selects objects by label: objects' label maps are needed.
    by_label: bool,
    /// Kustomizations by (namespace, name).
    owners: HashMap<(&'a str, &'a str), Owner<'a>>,
    /// The inventories of the Kustomizations a holdObjects gate targets.
    inventories: Inventories<'a>,
    /// Every Kustomization, in key order.
    kustomizations: Vec<&'a ObservedObject>,
    /// Every Kustomization's inventory (id → index in `kustomizations`),
    /// indexed on first need in a pass: an object no targeted one lists may
    /// still be listed by another (a mark to release after its gate was
    /// deleted: that owner is asked to reconcile). Owned keys: a borrowed
    /// index in a cell would tie the planner to one lifetime.
    all_listed: std::sync::OnceLock<HashMap<String, usize>>,
    /// The empty gate list, shared.
    none: Arc<[String]>,
    /// The previous pass's report (sorted by key): where a warn gate already
    /// would hold an object, the revision it would have held it at.
    previous: &'a [HeldReport],
}

impl<'a> HoldPlanner<'a> {
    pub fn new(gates: &'a [GateView], objects: &'a [ObservedObject]) -> Self {
        let gates: Vec<&GateView> = gates
            .iter()
            .filter(|g| g.mode == Mode::HoldObjects)
            .collect();
        let owners: HashMap<(&str, &str), Owner> = objects
            .iter()
            .filter(|o| o.key.kind == FluxKind::Kustomization)
            .map(|ks| {
                let key = Arc::new(ks.key.clone());
                (
                    (ks.key.namespace.as_str(), ks.key.name.as_str()),
                    Owner { ks, key },
                )
            })
            .collect();
        let targeted = |ks: &ObservedObject| {
            !ks.ignored
                && gates.iter().any(|g| {
                    g.targets.matches(
                        FluxKind::Kustomization,
                        &ks.key.namespace,
                        &ks.key.name,
                        &ks.labels,
                    )
                })
        };
        let mut kustomizations: Vec<&ObservedObject> = objects
            .iter()
            .filter(|o| o.key.kind == FluxKind::Kustomization)
            .collect();
        kustomizations.sort_by(|a, b| a.key.cmp(&b.key));
        let listing: Vec<&ObservedObject> = kustomizations
            .iter()
            .copied()
            .filter(|o| targeted(o))
            .collect();
        HoldPlanner {
            by_label: gates
                .iter()
                .any(|g| g.objects.as_ref().is_some_and(|o| o.selector.is_some())),
            gates,
            owners,
            inventories: Inventories::new(listing),
            kustomizations,
            all_listed: std::sync::OnceLock::new(),
            none: Arc::from(Vec::new()),
            previous: &[],
        }
    }

    /// Remembers the previous pass's report (sorted by key), so an object a
    /// warn gate keeps would-holding keeps the revision it would be held at.
    pub fn remembering(mut self, previous: &'a [HeldReport]) -> Self {
        self.previous = previous;
        self
    }

    /// The revision the previous report says a warn gate would hold `key` at.
    fn would_hold_since(&self, key: &HeldKey) -> Option<Arc<str>> {
        let i = self.previous.binary_search_by(|r| r.key.cmp(key)).ok()?;
        let r = &self.previous[i];
        if r.would_hold_by.is_empty() {
            return None;
        }
        r.would_hold_since_revision.clone()
    }

    /// The owning Kustomization of `obj`: the one whose inventory lists it,
    /// or, where none does, the one its owner labels name if that one
    /// reports no inventory (`inventory`'s rule).
    fn owner(&self, obj: &'a AppliedObject) -> Option<&Owner<'a>> {
        let listed = self.inventories.listing(obj).or_else(|| {
            // Needed only where the answer matters: a mark (release, report)
            // or labels naming a targeted Kustomization without inventory.
            let labelled_without = obj.owner.as_ref().is_some_and(|(ns, name)| {
                self.owners
                    .get(&(&**ns, &**name))
                    .is_some_and(|o| o.ks.inventory.is_none())
            });
            if obj.mark.is_none() && !obj.held_by_person() && !labelled_without {
                return None;
            }
            let all = self.all_listed.get_or_init(|| {
                let mut all = HashMap::new();
                for (i, ks) in self.kustomizations.iter().enumerate() {
                    for id in ks.inventory.as_deref().unwrap_or_default().lines() {
                        all.entry(id.to_owned()).or_insert(i);
                    }
                }
                all
            });
            let ks = self.kustomizations[*all.get(&obj.inventory_id())?];
            Some((ks.key.namespace.as_str(), ks.key.name.as_str()))
        });
        let key = match listed {
            Some(owner) => owner,
            None => {
                let (ns, name) = obj.owner.as_ref()?;
                let labelled = self.owners.get(&(&**ns, &**name))?;
                if labelled.ks.inventory.is_some() {
                    return None;
                }
                (&**ns, &**name)
            }
        };
        self.owners.get(&key)
    }

    /// Inventory entries of targeted Kustomizations whose objects the spoke
    /// does not watch (no owner labels): `is_watched` says which are known.
    pub fn unwatched_entries(
        &self,
        mut is_watched: impl FnMut(&Entry<'_>) -> bool,
    ) -> Vec<Entry<'a>> {
        let mut out: Vec<Entry<'a>> = self
            .inventories
            .entries()
            .filter(|(e, _)| !is_watched(e))
            .map(|(e, _)| *e)
            .collect();
        out.sort_unstable();
        out
    }

    /// Whether any holdObjects gate exists (else only releases can be due).
    pub fn has_gates(&self) -> bool {
        !self.gates.is_empty()
    }

    /// The holdObjects gates.
    pub(super) fn gates(&self) -> &[&'a GateView] {
        &self.gates
    }

    /// Every inventory entry of a Kustomization a holdObjects gate targets,
    /// with that Kustomization (not ignored) and its shared key.
    pub(super) fn targeted_entries(
        &self,
    ) -> impl Iterator<Item = (&Entry<'a>, &'a ObservedObject, &Arc<ObjectKey>)> {
        self.inventories.entries().filter_map(|(e, owner)| {
            let o = self.owners.get(owner)?;
            (!o.ks.ignored).then_some((e, o.ks, &o.key))
        })
    }

    pub fn plan(&self, applied: &'a [AppliedObject]) -> HoldPlan {
        let mut plan = HoldPlan::default();
        let mut lists = Vec::new();
        for obj in applied {
            let (step, report) = self.plan_object_with(obj, &mut lists);
            plan.steps.extend(step);
            plan.report.extend(report);
        }
        plan.steps.sort_by(|a, b| a.key.cmp(&b.key));
        plan.report.sort_by(|a, b| a.key.cmp(&b.key));
        // The report is kept until the next pass: no spare capacity.
        plan.report.shrink_to_fit();
        plan
    }

    /// Plans one object (after a 409 re-read).
    pub fn plan_object(&self, obj: &'a AppliedObject) -> (Option<HoldStep>, Option<HeldReport>) {
        self.plan_object_with(obj, &mut Vec::new())
    }

    /// `lists`: the gate lists reported so far, shared between entries.
    fn plan_object_with(
        &self,
        obj: &'a AppliedObject,
        lists: &mut Vec<Arc<[String]>>,
    ) -> (Option<HoldStep>, Option<HeldReport>) {
        let owner = self.owner(obj);
        let labels = if self.by_label {
            obj.label_map()
        } else {
            BTreeMap::new()
        };
        let mut selecting: BTreeSet<&str> = BTreeSet::new();
        let mut closed: BTreeSet<&str> = BTreeSet::new();
        let mut would: BTreeSet<&str> = BTreeSet::new();
        // A Kustomization annotated fleetgate.io/ignore holds none of its objects.
        if let Some(ks) = owner.map(|o| o.ks).filter(|k| !k.ignored) {
            for g in &self.gates {
                let targeted = g.targets.matches(
                    FluxKind::Kustomization,
                    &ks.key.namespace,
                    &ks.key.name,
                    &ks.labels,
                );
                let selected = g.objects.as_ref().is_some_and(|o| {
                    o.matches(
                        &obj.key.kind.group,
                        &obj.key.kind.kind,
                        &obj.key.namespace,
                        &obj.key.name,
                        &labels,
                    )
                });
                if targeted && selected {
                    selecting.insert(&g.name);
                    // A warn gate holds nothing (it is reported as would-hold).
                    if g.holds() {
                        closed.insert(&g.name);
                    } else if g.would_hold() {
                        would.insert(&g.name);
                    }
                }
            }
        }
        let closed: Vec<String> = closed.into_iter().map(str::to_owned).collect();
        let applied_revision = owner.and_then(|o| o.ks.last_applied_revision.clone());
        let action = match &obj.mark {
            // A person's hold: never touched.
            None if obj.skipped_by_flux => None,
            None if closed.is_empty() => None,
            None => Some(HoldAction::Mark {
                gates: closed.clone(),
                revision: applied_revision.as_deref().map(str::to_owned),
            }),
            Some(m) if closed.is_empty() => Some(HoldAction::Release {
                gates: m.gates.to_vec(),
            }),
            // Our marker without the annotation (someone removed it): mark again,
            // keeping the revision the hold started at.
            Some(m) if !obj.disabled_annotation => Some(HoldAction::Mark {
                gates: closed.clone(),
                revision: m
                    .revision
                    .as_deref()
                    .map(str::to_owned)
                    .or_else(|| applied_revision.as_deref().map(str::to_owned)),
            }),
            Some(m) if *m.gates != closed[..] => Some(HoldAction::Relabel {
                gates: closed.clone(),
            }),
            Some(_) => None,
        };
        let owner_key = owner.map(|o| o.key.clone());
        let step = action.map(|action| HoldStep {
            key: obj.key.clone(),
            resource_version: obj.resource_version.clone(),
            owner: owner_key.clone(),
            action,
        });
        // A person's mark is reported wherever it is, selected or not: a
        // platform team wants to see every object Flux skips by hand.
        if selecting.is_empty() && obj.mark.is_none() && !obj.held_by_person() {
            return (step, None);
        }
        let since_revision = obj.mark.as_ref().and_then(|m| m.revision.clone());
        // An enforced gate would leave a person's mark alone, and mark the
        // rest: the same objects, by the same rule, as `closed` above.
        if obj.held_by_person() {
            would.clear();
        }
        let would_hold_since_revision = if would.is_empty() {
            None
        } else {
            self.would_hold_since(&obj.key)
                .or_else(|| applied_revision.clone())
        };
        let would_hold_newer_revision = applied_revision
            .as_deref()
            .is_some_and(|a| would_hold_since_revision.as_deref().is_some_and(|s| s != a));
        let gates = shared(lists, &selecting);
        let would_hold_by = if would.is_empty() {
            self.none.clone()
        } else {
            shared(lists, &would)
        };
        let report = HeldReport {
            key: obj.key.clone(),
            owner: owner_key,
            gates,
            held_by: obj
                .mark
                .as_ref()
                .map_or_else(|| self.none.clone(), |m| m.gates.clone()),
            held_by_person: obj.held_by_person(),
            newer_revision_applied: obj.mark.is_some()
                && applied_revision
                    .as_deref()
                    .is_some_and(|a| since_revision.as_deref().is_some_and(|s| s != a)),
            since_revision,
            since: obj.mark.as_ref().and_then(|m| m.since.clone()),
            not_permitted: false,
            would_hold_by,
            would_hold_since_revision,
            would_hold_newer_revision,
        };
        (step, Some(report))
    }
}

/// `names` as a gate list shared with the equal lists reported so far.
fn shared(lists: &mut Vec<Arc<[String]>>, names: &BTreeSet<&str>) -> Arc<[String]> {
    match lists
        .iter()
        .find(|l| l.iter().map(String::as_str).eq(names.iter().copied()))
    {
        Some(l) => l.clone(),
        None => {
            let l: Arc<[String]> = names.iter().map(|g| g.to_string()).collect();
            lists.push(l.clone());
            l
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hold::observed::{HeldKey, HeldMark};
    use fleetgate_policy::{GroupKind, HeldObjects, Targets};

    fn gate(open: bool) -> GateView {
        GateView {
            name: "window".into(),
            mode: Mode::HoldObjects,
            targets: Targets {
                names: vec!["apps".into()],
                ..Targets::default()
            },
            objects: Some(HeldObjects {
                kinds: vec![GroupKind::new("apps", "Deployment")],
                ..HeldObjects::default()
            }),
            open,
            reason: String::new(),
            warn: false,
        }
    }

    fn ks(rev: &str) -> ObservedObject {
        ObservedObject {
            key: ObjectKey::new(FluxKind::Kustomization, "flux-system", "apps"),
            labels: Default::default(),
            resource_version: Some("1".into()),
            suspended: false,
            suspended_by: None,
            freeze_reason: None,
            source_refs: vec![],
            last_applied_revision: Some(rev.into()),
            artifact_revision: None,
            ignored: false,
            nesting: Default::default(),
            readiness: Default::default(),
            inventory: None,
        }
    }

    fn applied(group: &str, kind: &str, name: &str) -> AppliedObject {
        AppliedObject {
            key: HeldKey {
                kind: GroupKind::new(group, kind).into(),
                namespace: "nginx".into(),
                name: name.into(),
            },
            owner: Some(("flux-system".into(), "apps".into())),
            resource_version: Some("7".into()),
            ..AppliedObject::default()
        }
    }

    fn marked(mut o: AppliedObject, rev: &str) -> AppliedObject {
        o.skipped_by_flux = true;
        o.disabled_annotation = true;
        o.mark = Some(Arc::new(HeldMark {
            gates: vec!["window".into()].into(),
            since: None,
            revision: Some(rev.into()),
        }));
        o
    }

    #[test]
    fn closed_marks_the_selected_kind_only() {
        let gates = [gate(false)];
        let kss = [ks("r1")];
        let p = HoldPlanner::new(&gates, &kss).plan(&[
            applied("apps", "Deployment", "nginx"),
            applied("", "ConfigMap", "nginx-config"),
        ]);
        assert_eq!(p.steps.len(), 1);
        assert_eq!(
            p.steps[0].action,
            HoldAction::Mark {
                gates: vec!["window".into()],
                revision: Some("r1".into())
            }
        );
        assert_eq!(p.steps[0].resource_version.as_deref(), Some("7"));
        assert_eq!(p.report.len(), 1, "the ConfigMap is not selected");
    }

    #[test]
    fn open_releases_ours_and_requests_a_reconcile_of_the_owner() {
        let gates = [gate(true)];
        let kss = [ks("r2")];
        let p = HoldPlanner::new(&gates, &kss)
            .plan(&[marked(applied("apps", "Deployment", "nginx"), "r1")]);
        assert_eq!(
            p.steps[0].action,
            HoldAction::Release {
                gates: vec!["window".into()]
            }
        );
        assert_eq!(
            reconcile_requests(&p.steps),
            vec![ObjectKey::new(
                FluxKind::Kustomization,
                "flux-system",
                "apps"
            )]
        );
        assert!(p.report[0].newer_revision_applied);
    }

    #[test]
    fn a_persons_mark_is_never_touched() {
        let mut person = applied("apps", "Deployment", "nginx");
        person.skipped_by_flux = true;
        person.disabled_annotation = true;
        for open in [false, true] {
            let gates = [gate(open)];
            let kss = [ks("r1")];
            let p = HoldPlanner::new(&gates, &kss).plan(std::slice::from_ref(&person));
            assert!(p.steps.is_empty());
            assert!(p.report[0].held_by_person);
            assert_eq!(p.held_by_person_count(), 1);
        }
    }

    #[test]
    fn a_persons_mark_is_reported_without_any_gate_selecting_it() {
        let mut person = applied("", "Service", "legacy");
        person.skipped_by_flux = true;
        person.disabled_annotation = true;
        let plain = applied("", "ConfigMap", "plain");
        let kss = [ks("r1")];
        for gates in [vec![], vec![gate(false)]] {
            let p = HoldPlanner::new(&gates, &kss).plan(&[person.clone(), plain.clone()]);
            assert!(p.steps.is_empty(), "never touched");
            assert_eq!(p.report.len(), 1, "the unmarked ConfigMap is not reported");
            assert!(p.report[0].held_by_person);
            assert!(p.report[0].gates.is_empty(), "no gate selects it");
            assert_eq!(
                p.report[0].owner.as_deref(),
                Some(&ObjectKey::new(
                    FluxKind::Kustomization,
                    "flux-system",
                    "apps"
                ))
            );
            assert_eq!(p.held_by_person_count(), 1);
        }
    }

    #[test]
    fn marker_without_annotation_is_marked_again_keeping_its_revision() {
        let mut o = marked(applied("apps", "Deployment", "nginx"), "r1");
        o.disabled_annotation = false;
        o.skipped_by_flux = false;
        let gates = [gate(false)];
        let kss = [ks("r2")];
        let p = HoldPlanner::new(&gates, &kss).plan(&[o]);
        assert_eq!(
            p.steps[0].action,
            HoldAction::Mark {
                gates: vec!["window".into()],
                revision: Some("r1".into())
            }
        );
    }

    #[test]
    fn gate_removed_or_owner_gone_releases() {
        let o = marked(applied("apps", "Deployment", "nginx"), "r1");
        let p = HoldPlanner::new(&[], &[]).plan(std::slice::from_ref(&o));
        assert!(matches!(p.steps[0].action, HoldAction::Release { .. }));
        assert_eq!(p.report.len(), 1, "still reported while marked");
    }

    #[test]
    fn the_inventory_decides_ownership_labels_only_without_one() {
        let gates = [gate(false)];
        let mut apps = ks("r1");
        apps.inventory =
            Some("nginx_unlabelled_apps_Deployment\nnginx_nginx_apps_Deployment".into());
        let kss = [apps];
        let mut unlabelled = applied("apps", "Deployment", "unlabelled");
        unlabelled.owner = None;
        let copied = applied("apps", "Deployment", "copied");
        let p = HoldPlanner::new(&gates, &kss).plan(&[
            unlabelled,
            copied.clone(),
            marked(applied("apps", "Deployment", "nginx"), "r1"),
        ]);
        let marked_now: Vec<&str> = p.steps.iter().map(|s| &*s.key.name).collect();
        assert_eq!(marked_now, ["unlabelled"], "listed without labels: held");
        assert!(p.report.iter().all(|r| &*r.key.name != "copied"));
        assert_eq!(p.held_count(), 1, "nginx stays held");
        let planner = HoldPlanner::new(&gates, &kss);
        assert_eq!(
            planner.unwatched_entries(|e| e.1 == "nginx"),
            [("nginx", "unlabelled", "apps", "Deployment")]
        );
        // Without an inventory the owner labels decide.
        let kss = [ks("r1")];
        let p = HoldPlanner::new(&gates, &kss).plan(std::slice::from_ref(&copied));
        assert_eq!(p.steps.len(), 1);
    }
}
