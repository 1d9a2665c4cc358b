//! What the spoke sees of one Flux object: identity, labels, suspend state,
//! fleetgate's mark, the sources it consumes and its revisions. Extracted
//! once from the parsed object ([`FluxObject`]), so the planner stays pure
//! and fast. What repeats across objects (label sets, revisions, Ready
//! conditions) is shared through a watch's [`Shared`] values: a copy for a
//! pass or a report entry costs reference counts, not allocations.

use std::{collections::BTreeMap, fmt, str::FromStr, sync::Arc};

use fleetgate_policy::FluxKind;
use kube::api::DynamicObject;

use crate::cluster::flux_object::{FluxObject, Reference};
use crate::cluster::intern::Interned;
use crate::cluster::readiness::{self, Readiness, Ready};
use crate::hold::marks::{OWNER_NAME, OWNER_NAMESPACE, RECONCILE, SSA};
use crate::suspend::annotations::{
    FREEZE_REASON, IGNORE, PINNED, SUSPENDED_BY, parse_suspended_by,
};

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

/// The values a watch shares between its objects (see [`Interned`]).
#[derive(Debug, Default)]
pub struct Shared {
    strings: Interned<str>,
    labels: Interned<BTreeMap<String, String>>,
    ready: Interned<Ready>,
}

impl Shared {
    /// Drops values no object holds any more.
    pub fn sweep(&mut self) {
        self.strings.sweep();
        self.labels.sweep();
        self.ready.sweep();
    }

    /// Values held, to decide when to sweep.
    pub fn len(&self) -> usize {
        self.strings.len() + self.labels.len() + self.ready.len()
    }

    /// True when it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn text(&mut self, s: Option<&str>) -> Option<Arc<str>> {
        s.filter(|s| !s.is_empty()).map(|s| self.strings.get(s))
    }
}

/// One observed Flux object.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedObject {
    pub key: ObjectKey,
    /// Shared by the objects with the same labels.
    pub labels: Arc<BTreeMap<String, String>>,
    pub resource_version: Option<String>,
    /// `spec.suspend` as observed.
    pub suspended: bool,
    /// fleetgate's mark (`fleetgate.io/suspended-by`); `Some` means the suspend is ours.
    pub suspended_by: Option<Vec<String>>,
    /// `fleetgate.io/freeze-reason` as observed: the freeze holding it (set with the mark).
    pub freeze_reason: Option<Arc<str>>,
    /// The sources this object consumes (Kustomization, HelmRelease only), most
    /// specific first: for a HelmRelease the HelmChart Flux generates for it comes
    /// before the repository it is built from.
    pub source_refs: Vec<ObjectKey>,
    /// The revision last applied (see `last_applied`).
    pub last_applied_revision: Option<Arc<str>>,
    /// `status.artifact.revision` (sources only).
    pub artifact_revision: Option<Arc<str>>,
    /// Annotated `fleetgate.io/ignore: "true"`: never governed.
    pub ignored: bool,
    /// Whether a parent Kustomization applies this object (Flux's bootstrap
    /// layout), and the marks that keep the parent from reverting a suspend.
    pub nesting: Nesting,
    /// Flux's view of its health (Ready, Stalled, generations), reported to the hub.
    pub readiness: Readiness,
    /// Kustomization: `status.inventory.entries[].id`, one per line, as Flux
    /// lists them (`None`: no inventory reported). One allocation, shared by
    /// every copy; `hold::inventory` reads it. Other kinds: `None`.
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
    /// Extracts the fields the planner needs from a parsed object, sharing
    /// repeated values through `shared` (a watch's).
    pub fn from_flux(kind: FluxKind, obj: FluxObject, shared: &mut Shared) -> Self {
        let nesting = nesting(&obj);
        let source_refs = source_refs(kind, &obj);
        let readiness = Readiness {
            ready: readiness::Ready::of(&obj).map(|r| shared.ready.take(r)),
            stalled: readiness::stalled(&obj),
            generation: obj.metadata.generation.unwrap_or(0),
            observed_generation: obj.status.observed_generation.unwrap_or(0),
            last_attempted_revision: shared.text(obj.status.last_attempted_revision.as_deref()),
        };
        let last_applied_revision = shared.text(last_applied(kind, &obj));
        let artifact_revision = shared.text(
            obj.status
                .artifact
                .as_ref()
                .and_then(|a| a.revision.as_deref()),
        );
        // Unique per Kustomization: not shared, so a replaced one is freed at once.
        let inventory = match kind {
            FluxKind::Kustomization => obj.status.inventory.as_deref().map(Arc::from),
            _ => None,
        };
        let meta = obj.metadata;
        let annotations = meta.annotations.unwrap_or_default();
        ObservedObject {
            key: ObjectKey {
                kind,
                namespace: meta.namespace.unwrap_or_default(),
                name: meta.name.unwrap_or_default(),
            },
            labels: shared.labels.take(meta.labels.unwrap_or_default()),
            resource_version: meta.resource_version,
            suspended: obj.spec.suspend.unwrap_or(false),
            suspended_by: annotations.get(SUSPENDED_BY).map(|v| parse_suspended_by(v)),
            // Shared: while a freeze holds, every object carries the same value.
            freeze_reason: annotations
                .get(FREEZE_REASON)
                .map(|v| shared.strings.get(v)),
            source_refs,
            last_applied_revision,
            artifact_revision,
            ignored: annotations
                .get(IGNORE)
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("true")),
            nesting,
            readiness,
            inventory,
        }
    }

    /// The same from an object parsed whole (patch results of other
    /// clients, tests); nothing shared.
    pub fn from_dynamic(kind: FluxKind, obj: &DynamicObject) -> Self {
        Self::from_flux(kind, FluxObject::from_dynamic(obj), &mut Shared::default())
    }

    /// True when a person suspended it: suspended without fleetgate's mark.
    pub fn suspended_by_human(&self) -> bool {
        self.suspended && self.suspended_by.is_none()
    }
}

fn nesting(obj: &FluxObject) -> Nesting {
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
    Nesting {
        parent,
        // managedFields, read while parsing (`flux_object::applies_spec`).
        applied_by_parent: obj.applied_by_parent,
        pinned,
        disabled_by_person: !pinned && (opted_out(labels) || opted_out(annotations)),
    }
}

/// Kustomization: `status.lastAppliedRevision`. HelmRelease v2 has none: the
/// deployed chart version is the newest `status.history` entry Helm did not
/// record as `failed` (a failed upgrade is stored above the deployed release).
/// Both fall back to `lastAttemptedRevision` while there is no history at all.
pub fn last_applied(kind: FluxKind, obj: &FluxObject) -> Option<&str> {
    fn nonempty(s: &Option<String>) -> Option<&str> {
        s.as_deref().filter(|s| !s.is_empty())
    }
    let status = &obj.status;
    if kind == FluxKind::HelmRelease
        && let Some(h) = status.history.as_deref().filter(|h| !h.is_empty())
    {
        return h
            .iter()
            .find(|e| e.status.as_deref() != Some("failed"))
            .and_then(|e| nonempty(&e.chart_version));
    }
    let applied = match kind {
        FluxKind::HelmRelease => None,
        _ => nonempty(&status.last_applied_revision),
    };
    applied.or_else(|| nonempty(&status.last_attempted_revision))
}

/// A `{kind, name, namespace?}` reference; the namespace defaults to the
/// referrer's. Kinds fleetgate does not know (e.g. ExternalArtifact) are skipped.
fn reference(r: &Reference, default_ns: &str) -> Option<ObjectKey> {
    let kind = FluxKind::from_str(&r.kind).ok()?;
    let namespace = r
        .namespace
        .as_deref()
        .filter(|s| !s.is_empty())
        .unwrap_or(default_ns);
    Some(ObjectKey::new(kind, namespace, r.name.as_str()))
}

fn source_refs(kind: FluxKind, obj: &FluxObject) -> Vec<ObjectKey> {
    let namespace = obj.metadata.namespace.as_deref().unwrap_or_default();
    let name = obj.metadata.name.as_deref().unwrap_or_default();
    let spec = &obj.spec;
    let mut refs = Vec::new();
    match kind {
        FluxKind::Kustomization => {
            refs.extend(
                spec.source_ref
                    .as_ref()
                    .and_then(|r| reference(r, namespace)),
            );
        }
        FluxKind::HelmRelease => {
            refs.extend(
                spec.chart_ref
                    .as_ref()
                    .and_then(|r| reference(r, namespace)),
            );
            if let Some(src) = (spec.chart.as_ref())
                .and_then(|c| c.spec.source_ref.as_ref())
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
    use serde_json::{Value, json};

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

    #[test]
    fn managed_fields_become_one_bit_and_other_shapes_read_as_absent() {
        let child = |managed: Value| {
            let v = json!({
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
                "metadata": {"name": "apps", "namespace": "flux-system",
                    "labels": {OWNER_NAME: "flux-system", OWNER_NAMESPACE: "flux-system"},
                    "annotations": {
                        "kubectl.kubernetes.io/last-applied-configuration": "{\"big\": true}",
                        RECONCILE: "Disabled"},
                    "managedFields": managed},
                "spec": {"suspend": false, "sourceRef": {"kind": "GitRepository", "name": "flux-system"}},
            });
            let mut shared = Shared::default();
            let o = ObservedObject::from_flux(
                FluxKind::Kustomization,
                crate::cluster::flux_object::from_value(v.clone()).unwrap(),
                &mut shared,
            );
            // The DynamicObject path reads the same.
            assert_eq!(
                o,
                ObservedObject::from_dynamic(FluxKind::Kustomization, &dynamic(v))
            );
            o
        };
        let applied = child(json!([
            {"manager": "fleetgate-spoke", "operation": "Update", "fieldsV1": {"f:spec": {"f:suspend": {}}}},
            {"manager": "kustomize-controller", "operation": "Apply",
             "fieldsV1": {"f:metadata": {"f:labels": {}}, "f:spec": {"f:path": {}, "f:suspend": {}}}}
        ]));
        assert!(applied.nesting.applied_by_parent);
        assert_eq!(
            applied.nesting.parent,
            Some(("flux-system".into(), "flux-system".into()))
        );
        assert!(
            applied.nesting.disabled_by_person,
            "a person's opt-out, any case"
        );
        // Only Updates own spec (fleetgate's, kubectl edit's): no parent's apply.
        let updated = child(json!([
            {"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:spec": {"f:suspend": {}}}},
            {"manager": "kustomize-controller", "operation": "Apply", "fieldsV1": {"f:metadata": {}}}
        ]));
        assert!(!updated.nesting.applied_by_parent);
        assert!(!child(Value::Null).nesting.applied_by_parent);

        // A HelmChart's spec.chart is a string (a HelmRelease's an object):
        // read as absent, the object still parses.
        let chart = ObservedObject::from_dynamic(
            FluxKind::HelmChart,
            &dynamic(json!({
                "apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
                "metadata": {"name": "apps-web", "namespace": "flux-system"},
                "spec": {"chart": "web", "sourceRef": {"kind": "HelmRepository", "name": "charts"}},
                "status": {"artifact": {"revision": "1.2.3@sha256:abc"}}
            })),
        );
        assert_eq!(chart.artifact_revision.as_deref(), Some("1.2.3@sha256:abc"));
        assert!(chart.source_refs.is_empty());
    }

    #[test]
    fn repeated_values_are_shared_between_objects() {
        let mut shared = Shared::default();
        let ks = |name: &str, shared: &mut Shared| {
            ObservedObject::from_flux(
                FluxKind::Kustomization,
                crate::cluster::flux_object::from_value(json!({
                    "metadata": {"name": name, "namespace": "flux-system", "labels": {"tier": "apps"}},
                    "spec": {"sourceRef": {"kind": "GitRepository", "name": "repo"}},
                    "status": {"lastAppliedRevision": "main@sha1:aaa",
                        "inventory": {"entries": [{"id": "web_a_apps_Deployment", "v": "v1"},
                                                  {"id": "web_b__Service", "v": "v1"}]},
                        "conditions": [{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                                        "message": "Applied revision: main@sha1:aaa"}]}
                }))
                .unwrap(),
                shared,
            )
        };
        let (a, b) = (ks("a", &mut shared), ks("b", &mut shared));
        assert!(Arc::ptr_eq(&a.labels, &b.labels));
        let (ra, rb) = (
            a.readiness.ready.as_ref().unwrap(),
            b.readiness.ready.as_ref().unwrap(),
        );
        assert!(Arc::ptr_eq(ra, rb));
        assert_eq!(ra.message, "Applied revision: main@sha1:aaa");
        let (la, lb) = (
            a.last_applied_revision.as_ref().unwrap(),
            b.last_applied_revision.as_ref().unwrap(),
        );
        assert!(Arc::ptr_eq(la, lb));
        assert_eq!(
            a.inventory.as_deref(),
            Some("web_a_apps_Deployment\nweb_b__Service")
        );
        drop((a, b));
        shared.sweep();
        assert!(
            shared.is_empty(),
            "nothing is kept for objects that are gone"
        );
    }
}
