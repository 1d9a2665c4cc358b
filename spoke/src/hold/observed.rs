//! What the spoke keeps of one object a Kustomization applied: identity, owner
//! labels, labels (for `spec.objects.selector`), resourceVersion and the hold
//! marks. Built from metadata only (PartialObjectMeta) and compact, because a
//! spoke may watch thousands of Deployments: every string is an `Arc<str>`
//! (a copy for a pass or a report is a reference count, never an allocation),
//! and what repeats across objects — namespaces, owners, label sets, the marks
//! of one closing — is interned once per watch ([`Interner`]). The owner labels
//! are kept apart in `owner`; a label map is built only to match a selector.

use std::{collections::BTreeMap, fmt, sync::Arc};

use fleetgate_policy::GroupKind;
use kube::core::ObjectMeta;

use super::marks::{
    HELD_AT, HELD_AT_REVISION, HELD_BY, OWNER_NAME, OWNER_NAMESPACE, RECONCILE, SSA,
};
use crate::cluster::intern::Interned;
use crate::suspend::annotations::parse_suspended_by;

/// Identifies an applied object: group/kind, namespace, name.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeldKey {
    /// Shared by every object of the kind (one watch per kind).
    pub kind: Arc<GroupKind>,
    pub namespace: Arc<str>,
    pub name: Arc<str>,
}

impl fmt::Display for HeldKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind, self.namespace, self.name)
    }
}

/// fleetgate's hold on an object, read back from its markers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct HeldMark {
    pub gates: Arc<[String]>,
    pub since: Option<Arc<str>>,
    pub revision: Option<Arc<str>>,
}

/// An object's labels without the owner labels, sorted by key.
pub type Labels = Arc<[(Arc<str>, Arc<str>)]>;

/// One watched object (of a kind enabled with `--held-kinds`).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct AppliedObject {
    pub key: HeldKey,
    /// The Kustomization that applied it (owner labels): (namespace, name).
    pub owner: Option<(Arc<str>, Arc<str>)>,
    /// The object's labels without the two owner labels, sorted by key.
    pub labels: Labels,
    pub resource_version: Option<Arc<str>>,
    /// kustomize-controller skips it: `reconcile: disabled` or `ssa: Ignore`,
    /// label or annotation, value case-insensitive (fluxcd/pkg `AnyInMetadata`).
    pub skipped_by_flux: bool,
    /// The `reconcile: disabled` *annotation* (what fleetgate sets) is present.
    pub disabled_annotation: bool,
    /// fleetgate's marker; `None` with `skipped_by_flux` means a person's hold.
    pub mark: Option<Arc<HeldMark>>,
}

fn is(value: Option<&String>, want: &str) -> bool {
    value.is_some_and(|v| v.eq_ignore_ascii_case(want))
}

/// One copy of each value that repeats across watched objects. Entries no
/// object uses any more are dropped by [`Interner::sweep`].
#[derive(Default)]
pub struct Interner {
    strings: Interned<str>,
    labels: Interned<[(Arc<str>, Arc<str>)]>,
    marks: Interned<HeldMark>,
}

impl Interner {
    pub fn str(&mut self, s: &str) -> Arc<str> {
        self.strings.get(s)
    }

    fn labels(&mut self, labels: &[(Arc<str>, Arc<str>)]) -> Labels {
        self.labels.get(labels)
    }

    fn mark(&mut self, mark: HeldMark) -> Arc<HeldMark> {
        self.marks.take(mark)
    }

    /// Forgets values no object holds any more (only the interner's own
    /// reference left), e.g. the marks of a closing long released.
    pub fn sweep(&mut self) {
        self.strings.sweep();
        self.labels.sweep();
        self.marks.sweep();
    }

    /// Entries held, to decide when to sweep.
    pub fn len(&self) -> usize {
        self.strings.len() + self.labels.len() + self.marks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AppliedObject {
    /// From a patch or read result, not shared with the watch's values.
    pub fn from_meta(kind: &Arc<GroupKind>, meta: &ObjectMeta) -> Self {
        Self::from_meta_in(kind, meta, &mut Interner::default())
    }

    /// From a watch event, sharing repeated values through `interner`.
    pub fn from_meta_in(kind: &Arc<GroupKind>, meta: &ObjectMeta, interner: &mut Interner) -> Self {
        let empty = BTreeMap::new();
        let labels = meta.labels.as_ref().unwrap_or(&empty);
        let annotations = meta.annotations.as_ref().unwrap_or(&empty);
        let opt_out = |m: &BTreeMap<String, String>| {
            is(m.get(RECONCILE), "disabled") || is(m.get(SSA), "ignore")
        };
        let owner = match (labels.get(OWNER_NAMESPACE), labels.get(OWNER_NAME)) {
            (Some(ns), Some(name)) => Some((interner.str(ns), interner.str(name))),
            _ => None,
        };
        let own_labels: Vec<(Arc<str>, Arc<str>)> = labels
            .iter()
            .filter(|(k, _)| *k != OWNER_NAME && *k != OWNER_NAMESPACE)
            .map(|(k, v)| (interner.str(k), interner.str(v)))
            .collect();
        AppliedObject {
            key: HeldKey {
                kind: kind.clone(),
                namespace: interner.str(meta.namespace.as_deref().unwrap_or_default()),
                name: Arc::from(meta.name.as_deref().unwrap_or_default()),
            },
            owner,
            skipped_by_flux: opt_out(labels) || opt_out(annotations),
            disabled_annotation: is(annotations.get(RECONCILE), "disabled"),
            mark: annotations.get(HELD_BY).map(|g| {
                let mark = HeldMark {
                    gates: parse_suspended_by(g).into(),
                    since: annotations.get(HELD_AT).map(|s| interner.str(s)),
                    revision: annotations.get(HELD_AT_REVISION).map(|s| interner.str(s)),
                };
                interner.mark(mark)
            }),
            resource_version: meta.resource_version.as_deref().map(Arc::from),
            labels: interner.labels(&own_labels),
        }
    }

    /// All its labels as a map (the owner labels put back), for a selector.
    pub fn label_map(&self) -> BTreeMap<String, String> {
        let mut map: BTreeMap<String, String> = self
            .labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        if let Some((ns, name)) = &self.owner {
            map.insert(OWNER_NAMESPACE.to_string(), ns.to_string());
            map.insert(OWNER_NAME.to_string(), name.to_string());
        }
        map
    }

    /// Held by a person: Flux skips it and fleetgate did not mark it.
    pub fn held_by_person(&self) -> bool {
        self.skipped_by_flux && self.mark.is_none()
    }

    /// Its Flux inventory id (`<namespace>_<name>_<group>_<kind>`).
    pub fn inventory_id(&self) -> String {
        let k = &self.key;
        format!(
            "{}_{}_{}_{}",
            k.namespace, k.name, k.kind.group, k.kind.kind
        )
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
        assert_eq!(&*a.labels, [("app".into(), "web".into())]);
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
