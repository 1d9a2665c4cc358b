//! What the spoke sees of one Flux object: identity, labels, suspend state,
//! fleetgate's mark, the sources it consumes and its revisions. Extracted from
//! the API server's JSON once, so the planner stays pure and fast.

use std::{collections::BTreeMap, fmt, str::FromStr, sync::Arc};

use fleetgate_policy::FluxKind;
use kube::api::DynamicObject;
use serde_json::Value;

use crate::annotations::{IGNORE, PINNED, SUSPENDED_BY, parse_suspended_by};
use crate::hold::marks::{OWNER_NAME, OWNER_NAMESPACE, RECONCILE, SSA};
use crate::readiness::Readiness;

/// Identifies one Flux object in the cluster. Orders by kind (appliers first),
/// namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    pub kind: FluxKind,
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(kind: FluxKind, namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ObjectKey {
            kind,
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

/// One observed Flux object.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedObject {
    pub key: ObjectKey,
    pub labels: BTreeMap<String, String>,
    pub resource_version: Option<String>,
    /// `spec.suspend` as observed.
    pub suspended: bool,
    /// fleetgate's mark (`fleetgate.io/suspended-by`); `Some` means the suspend is ours.
    pub suspended_by: Option<Vec<String>>,
    /// The sources this object consumes (Kustomization, HelmRelease only), most
    /// specific first: for a HelmRelease the HelmChart Flux generates for it comes
    /// before the repository it is built from.
    pub source_refs: Vec<ObjectKey>,
    /// The revision last applied (see `last_applied`).
    pub last_applied_revision: Option<String>,
    /// `status.artifact.revision` (sources only).
    pub artifact_revision: Option<String>,
    /// Annotated `fleetgate.io/ignore: "true"`: never governed.
    pub ignored: bool,
    /// Whether a parent Kustomization applies this object (Flux's bootstrap
    /// layout), and the marks that keep the parent from reverting a suspend.
    pub nesting: Nesting,
    /// Flux's view of its health (Ready, Stalled, generations), reported to the hub.
    pub readiness: Readiness,
    /// Kustomization: `status.inventory.entries[].id`, one per line, as Flux
    /// lists them (`None`: no inventory reported). One allocation, shared by
    /// every copy; `hold::inventory` reads it.
    pub inventory: Option<Arc<str>>,
}

/// A Flux object applied by a parent Kustomization: the parent's server-side
/// apply would revert `spec.suspend` if its manifest declares the field.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Nesting {
    /// The applying Kustomization (owner labels): (namespace, name).
    pub parent: Option<(String, String)>,
    /// managedFields: a server-side apply manager (kustomize-controller applying
    /// the parent's manifest) owns fields of `spec`, so its next apply re-sets
    /// them; a manifest declaring `suspend: false` would revert a suspend.
    /// (Once fleetgate patched `spec.suspend` it owns that field itself until
    /// the parent applies again, so the field alone is no stable signal.)
    pub applied_by_parent: bool,
    /// fleetgate set `reconcile: disabled` on it (marker `fleetgate.io/pinned`).
    pub pinned: bool,
    /// `reconcile: disabled` / `ssa: Ignore` without fleetgate's marker: a
    /// person's; left alone.
    pub disabled_by_person: bool,
}

impl ObservedObject {
    /// Extracts the fields the planner needs from a dynamic object.
    pub fn from_dynamic(kind: FluxKind, obj: &DynamicObject) -> Self {
        let meta = &obj.metadata;
        let namespace = meta.namespace.clone().unwrap_or_default();
        let name = meta.name.clone().unwrap_or_default();
        let suspended_by = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(SUSPENDED_BY))
            .map(|v| parse_suspended_by(v));
        let ignored = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(IGNORE))
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
        let data = &obj.data;
        ObservedObject {
            source_refs: source_refs(kind, &namespace, &name, data),
            key: ObjectKey {
                kind,
                namespace,
                name,
            },
            labels: meta.labels.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone(),
            suspended: data
                .pointer("/spec/suspend")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            suspended_by,
            last_applied_revision: last_applied(kind, data),
            artifact_revision: str_at(data, "/status/artifact/revision"),
            ignored,
            nesting: nesting(obj),
            readiness: Readiness::from_object(data, meta.generation),
            inventory: inventory(kind, data),
        }
    }

    /// True when a person suspended it: suspended without fleetgate's mark.
    pub fn suspended_by_human(&self) -> bool {
        self.suspended && self.suspended_by.is_none()
    }
}

fn nesting(obj: &DynamicObject) -> Nesting {
    let meta = &obj.metadata;
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    let is = |m: &BTreeMap<String, String>, k: &str, v: &str| {
        m.get(k).is_some_and(|x| x.eq_ignore_ascii_case(v))
    };
    let opted_out =
        |m: &BTreeMap<String, String>| is(m, RECONCILE, "disabled") || is(m, SSA, "ignore");
    let pinned = annotations.contains_key(PINNED);
    let parent = match (labels.get(OWNER_NAMESPACE), labels.get(OWNER_NAME)) {
        (Some(ns), Some(name)) => Some((ns.clone(), name.clone())),
        _ => None,
    };
    // A manager applying spec (server-side apply): kustomize-controller
    // applying the parent's manifest. fleetgate's own patches are Updates.
    let applied_by_parent = meta.managed_fields.iter().flatten().any(|f| {
        f.operation.as_deref() == Some("Apply")
            && f.fields_v1
                .as_ref()
                .and_then(|v| v.0.get("f:spec"))
                .is_some()
    });
    Nesting {
        parent,
        applied_by_parent,
        pinned,
        disabled_by_person: !pinned && (opted_out(labels) || opted_out(annotations)),
    }
}

/// A Kustomization's inventory ids, newline-separated (ids hold no newline).
fn inventory(kind: FluxKind, data: &Value) -> Option<Arc<str>> {
    if kind != FluxKind::Kustomization {
        return None;
    }
    let entries = data.pointer("/status/inventory/entries")?.as_array()?;
    let mut ids = String::new();
    for id in entries.iter().filter_map(|e| e.get("id")?.as_str()) {
        if !ids.is_empty() {
            ids.push('\n');
        }
        ids.push_str(id);
    }
    Some(Arc::from(ids))
}

/// Kustomization: `status.lastAppliedRevision`. HelmRelease v2 has none: the
/// deployed chart version is the newest `status.history` entry Helm did not
/// record as `failed` (a failed upgrade is stored above the deployed release).
/// Both fall back to `lastAttemptedRevision` while there is no history at all.
fn last_applied(kind: FluxKind, data: &Value) -> Option<String> {
    let applied = match kind {
        FluxKind::HelmRelease => {
            let history = data.pointer("/status/history").and_then(Value::as_array);
            match history {
                Some(h) if !h.is_empty() => {
                    return h
                        .iter()
                        .find(|e| e.get("status").and_then(Value::as_str) != Some("failed"))
                        .and_then(|e| str_at(e, "/chartVersion"));
                }
                _ => None,
            }
        }
        _ => str_at(data, "/status/lastAppliedRevision"),
    };
    applied.or_else(|| str_at(data, "/status/lastAttemptedRevision"))
}

fn str_at(data: &Value, pointer: &str) -> Option<String> {
    data.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

/// A `{kind, name, namespace?}` reference; the namespace defaults to the
/// referrer's. Kinds fleetgate does not know (e.g. ExternalArtifact) are skipped.
fn reference(r: &Value, default_ns: &str) -> Option<ObjectKey> {
    let kind = FluxKind::from_str(r.get("kind")?.as_str()?).ok()?;
    let name = r.get("name")?.as_str()?;
    let namespace = r
        .get("namespace")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or(default_ns);
    Some(ObjectKey::new(kind, namespace, name))
}

fn source_refs(kind: FluxKind, namespace: &str, name: &str, data: &Value) -> Vec<ObjectKey> {
    let mut refs = Vec::new();
    match kind {
        FluxKind::Kustomization => {
            refs.extend(
                data.pointer("/spec/sourceRef")
                    .and_then(|r| reference(r, namespace)),
            );
        }
        FluxKind::HelmRelease => {
            refs.extend(
                data.pointer("/spec/chartRef")
                    .and_then(|r| reference(r, namespace)),
            );
            if let Some(src) = data
                .pointer("/spec/chart/spec/sourceRef")
                .and_then(|r| reference(r, namespace))
            {
                // helm-controller names the chart it generates "<namespace>-<name>",
                // in the namespace of the chart's source.
                refs.push(ObjectKey::new(
                    FluxKind::HelmChart,
                    src.namespace.clone(),
                    format!("{namespace}-{name}"),
                ));
                refs.push(src);
            }
        }
        _ => {}
    }
    refs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn dynamic(v: Value) -> DynamicObject {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn kustomization_fields_are_extracted() {
        let o = ObservedObject::from_dynamic(
            FluxKind::Kustomization,
            &dynamic(json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": "apps", "namespace": "flux-system", "resourceVersion": "12",
                             "labels": {"tier": "prod"},
                             "annotations": {"fleetgate.io/suspended-by": "b,a"}},
                "spec": {"suspend": true, "sourceRef": {"kind": "GitRepository", "name": "repo"}},
                "status": {"lastAppliedRevision": "main@sha1:aaa"}
            })),
        );
        assert_eq!(
            o.key,
            ObjectKey::new(FluxKind::Kustomization, "flux-system", "apps")
        );
        assert!(o.suspended);
        assert_eq!(o.suspended_by, Some(vec!["a".to_string(), "b".to_string()]));
        assert!(!o.suspended_by_human());
        assert_eq!(
            o.source_refs,
            vec![ObjectKey::new(
                FluxKind::GitRepository,
                "flux-system",
                "repo"
            )]
        );
        assert_eq!(o.last_applied_revision.as_deref(), Some("main@sha1:aaa"));
        assert_eq!(o.resource_version.as_deref(), Some("12"));
        assert_eq!(o.labels.get("tier").map(String::as_str), Some("prod"));
    }

    #[test]
    fn helmrelease_refs_include_generated_chart_and_chart_ref() {
        let o = ObservedObject::from_dynamic(
            FluxKind::HelmRelease,
            &dynamic(json!({
                "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": {"name": "web", "namespace": "apps"},
                "spec": {"chart": {"spec": {"chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts", "namespace": "flux-system"}}}},
            })),
        );
        assert!(!o.suspended);
        assert_eq!(
            o.source_refs,
            vec![
                ObjectKey::new(FluxKind::HelmChart, "flux-system", "apps-web"),
                ObjectKey::new(FluxKind::HelmRepository, "flux-system", "charts"),
            ]
        );
        let o = ObservedObject::from_dynamic(
            FluxKind::HelmRelease,
            &dynamic(json!({
                "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": {"name": "web", "namespace": "apps"},
                "spec": {"chartRef": {"kind": "OCIRepository", "name": "web-chart"}},
                "status": {"lastAttemptedRevision": "1.2.4", "history": [{"chartVersion": "1.2.3"}]}
            })),
        );
        assert_eq!(
            o.source_refs,
            vec![ObjectKey::new(FluxKind::OCIRepository, "apps", "web-chart")]
        );
        assert_eq!(o.last_applied_revision.as_deref(), Some("1.2.3"));
        // A failed upgrade sits above the deployed release; it was not applied.
        let o = ObservedObject::from_dynamic(
            FluxKind::HelmRelease,
            &dynamic(json!({
                "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
                "metadata": {"name": "web", "namespace": "apps", "generation": 2},
                "spec": {"chartRef": {"kind": "OCIRepository", "name": "web-chart"}},
                "status": {"lastAttemptedRevision": "1.2.4", "observedGeneration": 2,
                    "history": [{"chartVersion": "1.2.4", "status": "failed"},
                                {"chartVersion": "1.2.3", "status": "deployed"}],
                    "conditions": [{"type": "Ready", "status": "False", "reason": "UpgradeFailed", "message": "boom"}]}
            })),
        );
        assert_eq!(o.last_applied_revision.as_deref(), Some("1.2.3"));
        assert_eq!(
            o.readiness.last_attempted_revision.as_deref(),
            Some("1.2.4")
        );
        assert_eq!(
            o.readiness.ready.as_ref().map(|r| r.reason.as_str()),
            Some("UpgradeFailed")
        );
        assert_eq!(
            (o.readiness.generation, o.readiness.observed_generation),
            (2, 2)
        );
    }

    #[test]
    fn human_suspend_and_unknown_ref_kinds() {
        let o = ObservedObject::from_dynamic(
            FluxKind::Kustomization,
            &dynamic(json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": "k", "namespace": "n"},
                "spec": {"suspend": true, "sourceRef": {"kind": "ExternalArtifact", "name": "x"}},
            })),
        );
        assert!(o.suspended_by_human());
        assert!(o.source_refs.is_empty());
        let g = ObservedObject::from_dynamic(
            FluxKind::GitRepository,
            &dynamic(json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
                "metadata": {"name": "r", "namespace": "n"},
                "status": {"artifact": {"revision": "main@sha1:bbb"}}
            })),
        );
        assert_eq!(g.artifact_revision.as_deref(), Some("main@sha1:bbb"));
        assert!(!g.suspended);
    }
}
