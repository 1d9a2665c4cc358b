//! What kustomize-controller does with a revision's manifests: server-side apply of every
//! object (field manager `kustomize-controller`, ownership forced), owner labels,
//! `status.inventory`, pruning of objects a revision removed, and the per-object opt-outs.
//! Modelled on fluxcd/kustomize-controller `internal/controller/kustomization_controller.go`
//! (`apply()`: ExclusionSelector `reconcile: disabled` / `ssa: Ignore`, IfNotPresentSelector
//! `ssa: IfNotPresent`; `deleteObjects()`: owner-label inclusions, `prune`/`reconcile`/`ssa`
//! exclusions) and fluxcd/pkg `ssa/manager_apply.go` (`shouldSkipApply`: desired *or* live copy),
//! `ssa/utils/meta.go` (`AnyInMetadata`: label or annotation, value case-insensitive),
//! `ssa/manager_delete.go` (`Delete`). Skips and prune exclusions never make Ready false.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::cluster::{Cluster, SourceKey};
use crate::crd::{ResourceType, split_api_version};
use crate::ops::{self, Sub, WriteOpts};

/// kustomize-controller's field manager (its `--controller-name`).
pub const MANAGER: &str = "kustomize-controller";
pub const NAME_LABEL: &str = "kustomize.toolkit.fluxcd.io/name";
pub const NAMESPACE_LABEL: &str = "kustomize.toolkit.fluxcd.io/namespace";

/// `apply()`'s ExclusionSelector: objects never applied (nor pruned).
const APPLY_EXCLUSIONS: &[(&str, &str)] = &[
    ("kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
    ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
];
/// `apply()`'s IfNotPresentSelector: created once, never updated.
const IF_NOT_PRESENT: &[(&str, &str)] = &[("kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent")];
/// `deleteObjects()`' exclusions: objects never pruned.
const PRUNE_EXCLUSIONS: &[(&str, &str)] = &[
    ("kustomize.toolkit.fluxcd.io/prune", "disabled"),
    ("kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
    ("kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
];

pub use crate::cluster::Bundle;

/// What one apply did, for the Kustomization's status.
#[derive(Debug, Default)]
pub struct Applied {
    /// `status.inventory.entries` (`<namespace>_<name>_<group>_<kind>` + version), sorted.
    pub inventory: Vec<Value>,
    /// Objects left alone because of an opt-out (reported, never an error).
    pub skipped: usize,
}

/// fluxcd/pkg `AnyInMetadata`: a label or annotation with one of the pairs, value compared
/// case-insensitively.
pub fn any_in_metadata(obj: &Value, pairs: &[(&str, &str)]) -> bool {
    let m = &obj["metadata"];
    pairs.iter().any(|(k, v)| {
        ["labels", "annotations"].iter().any(|field| {
            m[field][k]
                .as_str()
                .is_some_and(|s| !s.is_empty() && s.eq_ignore_ascii_case(v))
        })
    })
}

/// `./apps/nginx/` and `apps/nginx` name the same directory; `./` and `` the root.
pub fn normalize_path(p: &str) -> String {
    p.trim_start_matches("./")
        .trim_start_matches('/')
        .trim_end_matches('/')
        .to_string()
}

fn s<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// The inventory id of an object (fluxcd/cli-utils `ObjMetadata.String()`).
fn inventory_id(ns: &str, name: &str, group: &str, kind: &str) -> String {
    format!("{ns}_{name}_{group}_{kind}")
}

fn parse_id(id: &str) -> Option<(String, String, String, String)> {
    // Names and namespaces hold no '_'; a group or kind neither: split from both ends.
    let mut parts = id.splitn(2, '_');
    let ns = parts.next()?.to_string();
    let rest = parts.next()?;
    let (rest, kind) = rest.rsplit_once('_')?;
    let (name, group) = rest.rsplit_once('_')?;
    Some((ns, name.to_string(), group.to_string(), kind.to_string()))
}

fn resource_type(cluster: &Cluster, group: &str, kind: &str) -> Option<Arc<ResourceType>> {
    cluster
        .registry()
        .types()
        .iter()
        .find(|t| t.group == group && t.kind == kind && !t.review)
        .cloned()
}

/// Applies the bundle's objects under the Kustomization's `spec.path` and prunes what the
/// previous inventory had and this one lacks (with `spec.prune`). `Err` is the Ready=False
/// message (nothing is half-reported: the inventory is only replaced on success).
pub fn apply(cluster: &Cluster, ks: &Value, bundle: &Bundle) -> Result<Applied, String> {
    let ks_name = s(ks, "/metadata/name");
    let ks_ns = s(ks, "/metadata/namespace");
    let path = normalize_path(s(ks, "/spec/path"));
    let Some(objects) = bundle.get(&path) else {
        return Err(format!("kustomization path not found: {path:?}"));
    };
    let target_ns = ks["spec"]["targetNamespace"]
        .as_str()
        .filter(|n| !n.is_empty());
    // The object with its type, namespace and owner labels set.
    let resolve = |obj: &Value| -> Result<(Arc<ResourceType>, Value), String> {
        let (group, _) = split_api_version(s(obj, "/apiVersion"));
        let kind = s(obj, "/kind");
        let rt = cluster
            .registry()
            .by_kind(s(obj, "/apiVersion"), kind)
            .or_else(|| resource_type(cluster, group, kind))
            .ok_or_else(|| {
                format!(
                    "{kind}/{} dry-run failed: no matches for kind \"{kind}\" in version \"{}\"",
                    s(obj, "/metadata/name"),
                    s(obj, "/apiVersion")
                )
            })?;
        let mut obj = obj.clone();
        if rt.namespaced {
            let ns = target_ns
                .or_else(|| {
                    obj["metadata"]["namespace"]
                        .as_str()
                        .filter(|n| !n.is_empty())
                })
                .unwrap_or(ks_ns)
                .to_string();
            obj["metadata"]["namespace"] = json!(ns);
        }
        // SetOwnerLabels: how kustomize-controller (and fleetgate's spoke) find what it applied.
        obj["metadata"]["labels"][NAME_LABEL] = json!(ks_name);
        obj["metadata"]["labels"][NAMESPACE_LABEL] = json!(ks_ns);
        Ok((rt, obj))
    };
    // ApplyAllStaged (fluxcd/pkg ssa/manager_apply.go): CRDs and namespaces first, then
    // the rest, whose kinds may be the CRDs just applied (established at once here, where
    // Flux waits for them).
    let first_stage = |o: &Value| matches!(s(o, "/kind"), "Namespace" | "CustomResourceDefinition");
    let mut applied = Applied::default();
    let mut ids = BTreeSet::new();
    for stage in [true, false] {
        let desired = objects
            .iter()
            .filter(|o| first_stage(o) == stage)
            .map(&resolve)
            .collect::<Result<Vec<_>, String>>()?;
        apply_stage(cluster, &desired, &mut applied, &mut ids)?;
    }
    applied
        .inventory
        .sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));

    if ks["spec"]["prune"] == Value::Bool(true) {
        prune(cluster, ks, &ids);
    }
    Ok(applied)
}

/// Applies one stage's objects, recording them in the inventory (`ids`).
fn apply_stage(
    cluster: &Cluster,
    desired: &[(Arc<ResourceType>, Value)],
    applied: &mut Applied,
    ids: &mut BTreeSet<String>,
) -> Result<(), String> {
    let opts = WriteOpts {
        manager: MANAGER.into(),
        ..WriteOpts::default()
    };
    for (rt, obj) in desired {
        let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
        let name = s(obj, "/metadata/name");
        let id = inventory_id(ns, name, &rt.group, &rt.kind);
        if ids.insert(id.clone()) {
            applied.inventory.push(json!({"id": id, "v": rt.version}));
        }
        let live = cluster.store.with(|st| st.get(&rt.key(), ns, name));
        // shouldSkipApply: the desired or the live copy opts out; IfNotPresent only once live.
        let skip = any_in_metadata(obj, APPLY_EXCLUSIONS)
            || live
                .as_ref()
                .is_some_and(|l| any_in_metadata(l, APPLY_EXCLUSIONS))
            || (live.is_some() && any_in_metadata(obj, IF_NOT_PRESENT));
        if skip {
            applied.skipped += 1;
            continue;
        }
        let body = serde_json::to_vec(obj).map_err(|e| e.to_string())?;
        let ns_opt = rt.namespaced.then_some(ns);
        // kustomize-controller applies with client.ForceOwnership: fields another manager
        // changed (kubectl edit, a suspend patch) are taken back, which is drift correction.
        crate::apply::apply(cluster, rt, ns_opt, name, Sub::Main, &body, &opts, true)
            .map_err(|e| format!("{}/{name} apply failed: {}", rt.kind, e.status().message))?;
    }
    Ok(())
}

/// Deletes what the previous inventory listed and the new one does not, unless it opted out
/// or is no longer labelled as this Kustomization's (`deleteObjects` inclusions).
fn prune(cluster: &Cluster, ks: &Value, keep: &BTreeSet<String>) {
    let ks_name = s(ks, "/metadata/name");
    let ks_ns = s(ks, "/metadata/namespace");
    let old = ks["status"]["inventory"]["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for entry in old {
        let Some(id) = entry["id"].as_str() else {
            continue;
        };
        if keep.contains(id) {
            continue;
        }
        let Some((ns, name, group, kind)) = parse_id(id) else {
            continue;
        };
        let Some(rt) = resource_type(cluster, &group, &kind) else {
            continue;
        };
        let Some(live) = cluster.store.with(|st| st.get(&rt.key(), &ns, &name)) else {
            continue;
        };
        let owned = live["metadata"]["labels"][NAME_LABEL] == ks_name
            && live["metadata"]["labels"][NAMESPACE_LABEL] == ks_ns;
        if !owned || any_in_metadata(&live, PRUNE_EXCLUSIONS) {
            continue;
        }
        if let Err(e) = ops::delete(cluster, &rt, &ns, &name, None, false) {
            tracing::warn!(cluster = %cluster.name, %id, error = %e, "prune failed");
        }
    }
}

/// The bundle pushed with `revision` of `source`, if manifests were pushed with it.
pub fn bundle(cluster: &Cluster, source: &SourceKey, revision: &str) -> Option<Arc<Bundle>> {
    cluster.bundle(source, revision)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opt_outs_match_labels_or_annotations_case_insensitively() {
        let ann = json!({"metadata": {"annotations": {"kustomize.toolkit.fluxcd.io/reconcile": "Disabled"}}});
        let label = json!({"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/ssa": "ignore"}}});
        let other =
            json!({"metadata": {"labels": {"kustomize.toolkit.fluxcd.io/reconcile": "enabled"}}});
        assert!(any_in_metadata(&ann, APPLY_EXCLUSIONS));
        assert!(any_in_metadata(&label, APPLY_EXCLUSIONS));
        assert!(!any_in_metadata(&other, APPLY_EXCLUSIONS));
        assert!(!any_in_metadata(&json!({}), APPLY_EXCLUSIONS));
    }

    #[test]
    fn inventory_ids_round_trip() {
        let id = inventory_id("apps", "web", "apps", "Deployment");
        assert_eq!(id, "apps_web_apps_Deployment");
        assert_eq!(
            parse_id("apps_web__ConfigMap"),
            Some(("apps".into(), "web".into(), "".into(), "ConfigMap".into()))
        );
        assert_eq!(
            parse_id("_apps__Namespace"),
            Some(("".into(), "apps".into(), "".into(), "Namespace".into()))
        );
        assert_eq!(normalize_path("./apps/nginx/"), "apps/nginx");
        assert_eq!(normalize_path("./"), "");
    }
}
