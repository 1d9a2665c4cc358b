//! Which Kustomization an applied object belongs to. kustomize-controller
//! records what it applied in `status.inventory.entries[].id`
//! (`<namespace>_<name>_<group>_<kind>`, fluxcd/cli-utils `ObjMetadata.String()`;
//! kustomize-controller `internal/inventory`), and prunes only from that list; the
//! owner labels (`kustomize.toolkit.fluxcd.io/name|namespace`) are what it sets
//! on each object but a person can remove or copy them.
//!
//! The rule: **the inventory decides**; the owner labels only where the
//! labelled Kustomization reports no inventory at all (not reconciled by a
//! v1 controller yet).
//! - An object listed in a Kustomization's inventory belongs to it, with or
//!   without owner labels (a held object whose labels were removed stays held
//!   and is released; the spoke reads such objects by name, see `strays`).
//! - An object labelled for a Kustomization whose inventory does not list it
//!   belongs to none: kustomize-controller does not apply it (it left the
//!   source with `prune: false`, or the labels were copied), so a mark would
//!   hold nothing. A mark fleetgate set on it is released.

use std::collections::HashMap;

use fleetgate_policy::FluxKind;

use super::observed::AppliedObject;
use crate::cluster::observed::ObservedObject;

/// An inventory entry's parts: namespace, name, group, kind.
pub type Entry<'a> = (&'a str, &'a str, &'a str, &'a str);

/// Splits an inventory id. Names and namespaces hold no `_` (DNS names), a
/// group or kind neither: split from both ends.
pub fn parse_id(id: &str) -> Option<Entry<'_>> {
    let (ns, rest) = id.split_once('_')?;
    let (rest, kind) = rest.rsplit_once('_')?;
    let (name, group) = rest.rsplit_once('_')?;
    (!name.is_empty() && !kind.is_empty()).then_some((ns, name, group, kind))
}

/// The inventories of some Kustomizations, indexed by entry.
#[derive(Default)]
pub struct Inventories<'a> {
    /// Entry → the listing Kustomization (namespace, name); the first in key
    /// order wins where two list the same object (Flux reports that conflict).
    listed: HashMap<Entry<'a>, (&'a str, &'a str)>,
}

impl<'a> Inventories<'a> {
    /// Indexes the inventories of `kustomizations`.
    pub fn new(kustomizations: impl IntoIterator<Item = &'a ObservedObject>) -> Self {
        let mut listed = HashMap::new();
        for ks in kustomizations {
            if ks.key.kind != FluxKind::Kustomization {
                continue;
            }
            let owner = (ks.key.namespace.as_str(), ks.key.name.as_str());
            for id in ks.inventory.as_deref().unwrap_or_default().lines() {
                if let Some(entry) = parse_id(id) {
                    listed.entry(entry).or_insert(owner);
                }
            }
        }
        Inventories { listed }
    }

    /// The Kustomization whose inventory lists `obj`, if one of these does.
    pub fn listing(&self, obj: &AppliedObject) -> Option<(&'a str, &'a str)> {
        let k = &obj.key;
        let entry = (&*k.namespace, &*k.name, &*k.kind.group, &*k.kind.kind);
        self.listed.get(&entry).copied()
    }

    /// Every listed entry with its Kustomization.
    pub fn entries(&self) -> impl Iterator<Item = (&Entry<'a>, &(&'a str, &'a str))> {
        self.listed.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_split_from_both_ends() {
        assert_eq!(
            parse_id("web_nginx_apps_Deployment"),
            Some(("web", "nginx", "apps", "Deployment"))
        );
        assert_eq!(
            parse_id("web_nginx-config__ConfigMap"),
            Some(("web", "nginx-config", "", "ConfigMap"))
        );
        assert_eq!(
            parse_id("_web__Namespace"),
            Some(("", "web", "", "Namespace"))
        );
        assert_eq!(parse_id("nonsense"), None);
    }
}
