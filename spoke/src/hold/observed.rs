//! What the spoke keeps of one object a Kustomization applied: identity, owner
//! labels, labels (for `spec.objects.selector`), resourceVersion and the hold
//! marks. Built from metadata only (PartialObjectMeta), so watching thousands
//! of Deployments costs a few hundred bytes each: the group/kind is shared by
//! every object of a kind, the labels are a flat list without the owner labels
//! (kept apart in `owner`), and a label map is built only to match a selector.

use std::{collections::BTreeMap, fmt, sync::Arc};

use fleetgate_policy::GroupKind;
use kube::core::ObjectMeta;

use super::marks::{
    HELD_AT, HELD_AT_REVISION, HELD_BY, OWNER_NAME, OWNER_NAMESPACE, RECONCILE, SSA,
};
use crate::annotations::parse_suspended_by;

/// Identifies an applied object: group/kind, namespace, name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeldKey {
    /// Shared by every object of the kind (one watch per kind).
    pub kind: Arc<GroupKind>,
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
    /// The object's labels without the two owner labels, sorted by key.
    pub labels: Vec<(String, String)>,
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
    pub fn from_meta(kind: &Arc<GroupKind>, meta: &ObjectMeta) -> Self {
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
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
            skipped_by_flux: opt_out(labels) || opt_out(annotations),
            disabled_annotation: is(annotations.get(RECONCILE), "disabled"),
            mark: annotations.get(HELD_BY).map(|g| HeldMark {
                gates: parse_suspended_by(g),
                since: annotations.get(HELD_AT).cloned(),
                revision: annotations.get(HELD_AT_REVISION).cloned(),
            }),
            resource_version: meta.resource_version.clone(),
            labels: labels
                .iter()
                .filter(|(k, _)| *k != OWNER_NAME && *k != OWNER_NAMESPACE)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        }
    }

    /// All its labels as a map (the owner labels put back), for a selector.
    pub fn label_map(&self) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = self.labels.iter().cloned().collect();
        if let Some((ns, name)) = &self.owner {
            map.insert(OWNER_NAMESPACE.to_string(), ns.clone());
            map.insert(OWNER_NAME.to_string(), name.clone());
        }
        map
    }

    /// Held by a person: Flux skips it and fleetgate did not mark it.
    pub fn held_by_person(&self) -> bool {
        self.skipped_by_flux && self.mark.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_labels_are_kept_once_and_put_back_for_selectors() {
        let meta = ObjectMeta {
            name: Some("web".into()),
            namespace: Some("nginx".into()),
            labels: Some(BTreeMap::from([
                (OWNER_NAME.to_string(), "apps".to_string()),
                (OWNER_NAMESPACE.to_string(), "flux-system".to_string()),
                ("app".to_string(), "web".to_string()),
            ])),
            ..ObjectMeta::default()
        };
        let kind = Arc::new(GroupKind::new("apps", "Deployment"));
        let a = AppliedObject::from_meta(&kind, &meta);
        assert_eq!(a.owner, Some(("flux-system".into(), "apps".into())));
        assert_eq!(a.labels, [("app".to_string(), "web".to_string())]);
        let map = a.label_map();
        assert_eq!(map.len(), 3);
        assert_eq!(map[OWNER_NAME], "apps");
        assert_eq!(map["app"], "web");
        assert!(
            Arc::ptr_eq(&a.key.kind, &kind),
            "the kind is shared, not copied"
        );
    }
}
