//! `HoldNotPermitted`: objects a holdObjects gate selects whose kind is not in
//! the spoke's `--held-kinds`. The spoke neither watches nor patches those
//! kinds (its RBAC grants exactly the listed ones), so a closed gate would
//! hold nothing of them while its state reads "closed" — the worst failure a
//! gate can have. They are found in the targeted Kustomizations' inventories
//! (`status.inventory`, kind, namespace and name of every applied object),
//! reported to the hub with `not_permitted` set beside the held objects, and
//! announced with a Warning Event `HoldNotPermitted` on the Kustomization
//! while a selecting gate is closed.
//!
//! A gate's label selector cannot be evaluated for a kind the spoke does not
//! watch: a gate selecting by labels *and* listing the kind counts the kind's
//! objects as selected; one selecting by labels without kinds counts none.

use std::{
    collections::{BTreeMap, BTreeSet, HashSet},
    sync::Arc,
};

use fleetgate_policy::{FluxKind, GroupKind, HeldObjects};
use k8s_openapi::api::core::v1::ObjectReference;

use super::{
    kinds::HeldKind,
    observed::HeldKey,
    plan::{HeldReport, HoldPlanner},
};
use crate::{cluster::observed::ObjectKey, context::Context, suspend::plan::GateView};

/// Whether `o` selects an object whose labels the spoke cannot see.
fn selects(o: &HeldObjects, group: &str, kind: &str, namespace: &str, name: &str) -> bool {
    if o.selector.is_some() && o.kinds.is_empty() {
        return false;
    }
    (o.kinds.is_empty() || o.kinds.iter().any(|k| k.group == group && k.kind == kind))
        && (o.namespaces.is_empty() || o.namespaces.iter().any(|n| n == namespace))
        && (o.names.is_empty() || o.names.iter().any(|n| n == name))
}

/// Every inventory entry of a targeted Kustomization that a holdObjects gate
/// selects but whose kind is not `permitted`, as report entries (sorted).
pub fn find(planner: &HoldPlanner<'_>, permitted: &[HeldKind]) -> Vec<HeldReport> {
    if !planner.has_gates() {
        return Vec::new();
    }
    let permitted: HashSet<GroupKind> = permitted.iter().map(HeldKind::group_kind).collect();
    let mut kinds: BTreeMap<(&str, &str), Arc<GroupKind>> = BTreeMap::new();
    let mut out = Vec::new();
    for (&(namespace, name, group, kind), ks, owner) in planner.targeted_entries() {
        if permitted.contains(&GroupKind::new(group, kind)) {
            continue;
        }
        let gates: Vec<String> = planner
            .gates()
            .iter()
            .filter(|g| {
                g.targets.matches(
                    FluxKind::Kustomization,
                    &ks.key.namespace,
                    &ks.key.name,
                    &ks.labels,
                ) && g
                    .objects
                    .as_ref()
                    .is_some_and(|o| selects(o, group, kind, namespace, name))
            })
            .map(|g| g.name.clone())
            .collect();
        if gates.is_empty() {
            continue;
        }
        let kind = kinds
            .entry((group, kind))
            .or_insert_with(|| Arc::new(GroupKind::new(group, kind)))
            .clone();
        out.push(HeldReport {
            key: HeldKey {
                kind,
                namespace: namespace.into(),
                name: name.into(),
            },
            owner: Some(owner.clone()),
            gates: gates.into(),
            held_by: Arc::from(Vec::new()),
            held_by_person: false,
            since_revision: None,
            since: None,
            newer_revision_applied: false,
            not_permitted: true,
            // Enforced it would hold nothing either: the kind may not be held.
            would_hold_by: Arc::from(Vec::new()),
            would_hold_since_revision: None,
            would_hold_newer_revision: false,
        });
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

/// The Warning Event texts per Kustomization: objects no gate can hold here
/// while a gate selecting them is closed.
pub fn warnings(
    report: &[HeldReport],
    gates: &[GateView],
    permitted: &[HeldKind],
) -> BTreeMap<ObjectKey, String> {
    let closed: BTreeSet<&str> = gates
        .iter()
        // A warn gate holds nothing, so it warns of nothing it cannot hold.
        .filter(|g| g.holds())
        .map(|g| g.name.as_str())
        .collect();
    let mut per_owner: BTreeMap<ObjectKey, (BTreeSet<String>, BTreeSet<&str>, usize)> =
        BTreeMap::new();
    for r in report.iter().filter(|r| r.not_permitted) {
        let Some(owner) = &r.owner else { continue };
        let holding: Vec<&str> = r
            .gates
            .iter()
            .map(String::as_str)
            .filter(|g| closed.contains(g))
            .collect();
        if holding.is_empty() {
            continue;
        }
        let e = per_owner.entry(ObjectKey::clone(owner)).or_default();
        e.0.insert(r.key.kind.to_string());
        e.1.extend(holding);
        e.2 += 1;
    }
    let enabled = if permitted.is_empty() {
        "none".to_owned()
    } else {
        permitted
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    per_owner
        .into_iter()
        .map(|(owner, (kinds, gates, n))| {
            let kinds: Vec<String> = kinds.into_iter().collect();
            let gates: Vec<String> = gates.into_iter().map(|g| format!("'{g}'")).collect();
            let note = format!(
                "closed gate(s) {} select {n} object(s) of kind {} that this spoke may not hold \
                 (--held-kinds: {enabled}): they are NOT held and roll out; add the kinds to \
                 --held-kinds and to the spoke's RBAC (deploy/spoke component hold-objects)",
                gates.join(", "),
                kinds.join(", ")
            );
            (owner, note)
        })
        .collect()
}

/// The Warning Events already published, so a pass publishes only changes.
#[derive(Default)]
pub struct Warned(BTreeMap<ObjectKey, String>);

impl Warned {
    /// Publishes a Warning `HoldNotPermitted` Event on each Kustomization
    /// whose text is new or changed.
    pub async fn publish(&mut self, ctx: &Context, now: BTreeMap<ObjectKey, String>) {
        for (owner, note) in &now {
            if self.0.get(owner) == Some(note) {
                continue;
            }
            tracing::warn!(kustomization = %owner, "{note}");
            let kind = FluxKind::Kustomization;
            let reference = ObjectReference {
                api_version: Some(kind.api_version()),
                kind: Some(kind.as_str().into()),
                name: Some(owner.name.clone()),
                namespace: Some(owner.namespace.clone()),
                ..ObjectReference::default()
            };
            if let Err(e) = ctx
                .recorder
                .publish_typed(true, "HoldNotPermitted", "Hold", note.clone(), &reference)
                .await
            {
                let e = crate::error::Error::from(e);
                ctx.metrics.error(&e);
                tracing::warn!(error = %e, "could not publish event");
            }
        }
        self.0 = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::observed::ObservedObject;
    use fleetgate_policy::{Mode, Targets};

    fn gate(name: &str, open: bool, objects: HeldObjects) -> GateView {
        GateView {
            name: name.into(),
            mode: Mode::HoldObjects,
            targets: Targets {
                names: vec!["apps".into()],
                ..Targets::default()
            },
            objects: Some(objects),
            open,
            reason: String::new(),
            warn: false,
        }
    }

    fn apps() -> ObservedObject {
        ObservedObject {
            key: ObjectKey::new(FluxKind::Kustomization, "flux-system", "apps"),
            labels: Default::default(),
            resource_version: Some("1".into()),
            suspended: false,
            suspended_by: None,
            freeze_reason: None,
            source_refs: vec![],
            last_applied_revision: Some("r1".into()),
            artifact_revision: None,
            ignored: false,
            nesting: Default::default(),
            readiness: Default::default(),
            inventory: Some(
                "nginx_nginx_apps_Deployment\nnginx_nginx-config__ConfigMap\nnginx_nginx__Service"
                    .into(),
            ),
        }
    }

    fn deployments() -> HeldObjects {
        HeldObjects {
            kinds: vec![GroupKind::new("apps", "Deployment")],
            ..HeldObjects::default()
        }
    }

    #[test]
    fn a_selected_kind_outside_held_kinds_is_reported_and_warned_while_closed() {
        let kss = [apps()];
        let gates = [gate("nginx-window", false, deployments())];
        let planner = HoldPlanner::new(&gates, &kss);
        // The default: no kinds enabled.
        let found = find(&planner, &[]);
        assert_eq!(found.len(), 1);
        let r = &found[0];
        assert!(r.not_permitted && r.held_by.is_empty() && !r.held_by_person);
        assert_eq!(r.key.to_string(), "Deployment.apps nginx/nginx");
        assert_eq!(&*r.gates, ["nginx-window".to_string()]);
        let w = warnings(&found, &gates, &[]);
        let note = &w[&ObjectKey::new(FluxKind::Kustomization, "flux-system", "apps")];
        assert!(note.contains("'nginx-window'") && note.contains("Deployment.apps"));
        assert!(note.contains("--held-kinds: none"), "{note}");
        // Open: still reported, no warning.
        let open = [gate("nginx-window", true, deployments())];
        assert!(warnings(&found, &open, &[]).is_empty());
        // Enabled: nothing to say.
        let enabled: HeldKind = "apps/v1/Deployment".parse().unwrap();
        assert!(find(&planner, &[enabled]).is_empty());
    }

    #[test]
    fn everything_selects_every_unwatched_kind_a_label_selector_none() {
        let kss = [apps()];
        let all = [gate("all", false, HeldObjects::default())];
        let svc: HeldKind = "v1/Service".parse().unwrap();
        let found = find(&HoldPlanner::new(&all, &kss), &[svc]);
        let names: Vec<String> = found.iter().map(|r| r.key.to_string()).collect();
        assert_eq!(
            names,
            [
                "ConfigMap nginx/nginx-config",
                "Deployment.apps nginx/nginx"
            ]
        );
        let by_label = [gate(
            "labelled",
            false,
            HeldObjects {
                selector: Some(Default::default()),
                ..HeldObjects::default()
            },
        )];
        assert!(find(&HoldPlanner::new(&by_label, &kss), &[]).is_empty());
        // A gate that targets nothing here says nothing.
        let mut elsewhere = gate("elsewhere", false, deployments());
        elsewhere.targets.names = vec!["other".into()];
        assert!(find(&HoldPlanner::new(&[elsewhere], &kss), &[]).is_empty());
    }
}
