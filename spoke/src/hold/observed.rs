//! What the spoke keeps of one object a Kustomization applied: identity, owner
//! labels, labels (for `spec.objects.selector`), resourceVersion and the hold
//! marks. Built from metadata only (PartialObjectMeta), so watching thousands
//! of Deployments costs a few hundred bytes each.

use std::{collections::BTreeMap, fmt};

use fleetgate_policy::GroupKind;
use kube::core::ObjectMeta;

use super::marks::{
    HELD_AT, HELD_AT_REVISION, HELD_BY, OWNER_NAME, OWNER_NAMESPACE, RECONCILE, SSA,
};
use crate::annotations::parse_suspended_by;

/// Identifies an applied object: group/kind, namespace, name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeldKey {
    pub kind: GroupKind,
    pub namespace: String,
    pub name: String,
}

impl fmt::Display for HeldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// fleetgate's hold on an object, read back from its markers.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct HeldMark {
    pub gates: Vec<String>,
    pub since: Option<String>,
    pub revision: Option<String>,
}

/// One watched object (of a kind enabled with `--held-kinds`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppliedObject {
    pub key: HeldKey,
    /// The Kustomization that applied it (owner labels): (namespace, name).
    pub owner: Option<(String, String)>,
    pub labels: BTreeMap<String, String>,
    pub resource_version: Option<String>,
    /// kustomize-controller skips it: `reconcile: disabled` or `ssa: Ignore`,
    /// label or annotation, value case-insensitive (fluxcd/pkg `AnyInMetadata`).
    pub skipped_by_flux: bool,
    /// The `reconcile: disabled` *annotation* (what fleetgate sets) is present.
    pub disabled_annotation: bool,
    /// fleetgate's marker; `None` with `skipped_by_flux` means a person's hold.
    pub mark: Option<HeldMark>,
}

fn is(value: Option<&String>, want: &str) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case(want))
}

impl AppliedObject {
    pub fn from_meta(kind: &GroupKind, meta: &ObjectMeta) -> Self {
        let labels = meta.labels.clone().unwrap_or_default();
        let empty = BTreeMap::new();
        let annotations = meta.annotations.as_ref().unwrap_or(&empty);
        let opt_out = |m: &BTreeMap<String, String>| {
            is(m.get(RECONCILE), "disabled") || is(m.get(SSA), "ignore")
        };
        let owner = match (labels.get(OWNER_NAMESPACE), labels.get(OWNER_NAME)) {
            (Some(ns), Some(name)) => Some((ns.clone(), name.clone())),
            _ => None,
        };
        AppliedObject {
            key: HeldKey {
                kind: kind.clone(),
                namespace: meta.namespace.clone().unwrap_or_default(),
                name: meta.name.clone().unwrap_or_default(),
            },
            owner,
            skipped_by_flux: opt_out(&labels) || opt_out(annotations),
            disabled_annotation: is(annotations.get(RECONCILE), "disabled"),
            mark: annotations.get(HELD_BY).map(|g| HeldMark {
                gates: parse_suspended_by(g),
                since: annotations.get(HELD_AT).cloned(),
                revision: annotations.get(HELD_AT_REVISION).cloned(),
            }),
            resource_version: meta.resource_version.clone(),
            labels,
        }
    }

    /// Held by a person: Flux skips it and fleetgate did not mark it.
    pub fn held_by_person(&self) -> bool {
        self.skipped_by_flux && self.mark.is_none()
    }
}
