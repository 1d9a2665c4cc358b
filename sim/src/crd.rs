//! The resource types the simulated API server serves: the built-in kinds controllers
//! need plus one type per served version of every accepted CustomResourceDefinition (the
//! real Flux CRDs embedded unmodified from `sim/crds/` and fleetgate's Gate CRD from
//! `deploy/spoke` are seeded as CRD objects at start, see `apiextensions`). A [`Registry`]
//! answers "which type is `/apis/{group}/{version}/{plural}`" and feeds discovery.

use std::sync::Arc;

use serde_json::Value;

use crate::apiextensions::crd_object;

/// The upstream Flux CRD manifests, loaded unmodified (see `sim/crds/README.md`).
pub(crate) const FLUX_CRDS: &[&str] = &[
    include_str!("../crds/kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
    include_str!("../crds/helm.toolkit.fluxcd.io_helmreleases.yaml"),
    include_str!("../crds/source.toolkit.fluxcd.io_gitrepositories.yaml"),
    include_str!("../crds/source.toolkit.fluxcd.io_ocirepositories.yaml"),
    include_str!("../crds/source.toolkit.fluxcd.io_helmrepositories.yaml"),
    include_str!("../crds/source.toolkit.fluxcd.io_buckets.yaml"),
    include_str!("../crds/source.toolkit.fluxcd.io_helmcharts.yaml"),
    include_str!("../crds/image.toolkit.fluxcd.io_imageupdateautomations.yaml"),
];

/// fleetgate's Gate CRD, the very file `deploy/spoke` installs, so what kubectl shows
/// against the simulator is what it shows in a real cluster.
pub(crate) const FLEETGATE_CRDS: &[&str] =
    &[include_str!("../../deploy/spoke/gates.fleetgate.io.yaml")];

/// One `additionalPrinterColumns` entry of a CRD version.
#[derive(Debug, Clone)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub description: String,
    pub priority: i64,
}

/// A served resource (one group/version/plural).
#[derive(Debug, Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub status_subresource: bool,
    /// `openAPIV3Schema` of a custom resource; `None` for built-in kinds (no pruning).
    pub schema: Option<Value>,
    pub printer_columns: Vec<PrinterColumn>,
    /// Custom resources get `metadata.generation`, need a resourceVersion on update, and
    /// accept only JSON/merge/apply patches (strategic merge needs Go structs).
    pub custom: bool,
    /// A create-only review resource (SelfSubjectAccessReview): nothing is stored.
    pub review: bool,
    /// The CRD this type is served from (`None` for built-in kinds).
    pub origin: Option<Arc<CrdOrigin>>,
}

/// Which CRD object (and which state of it) a custom resource type was built from: a
/// registry rebuild reuses the types of CRDs whose origin is unchanged, so the schemas of
/// the seeded CRDs stay shared by every simulated cluster.
#[derive(Debug, Clone, PartialEq)]
pub struct CrdOrigin {
    /// `plural.group`, the CRD's name.
    pub name: String,
    pub uid: String,
    pub generation: i64,
    /// `status.acceptedNames`: what the type is served as.
    pub accepted_names: Value,
    /// The CRD is being deleted: no creates (customresource_handler.go, serveResource).
    pub terminating: bool,
}

impl ResourceType {
    /// `apiVersion` of objects of this type (`v1` for the core group).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `plural.group` (or just `plural` for the core group), as in API error messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.plural.clone()
        } else {
            format!("{}.{}", self.plural, self.group)
        }
    }

    /// `Kind.group` (or `Kind`), as in `... is invalid` messages.
    pub fn group_kind(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// Storage key: group/version/plural.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.group, self.version, self.plural)
    }

    pub fn is_flux(&self) -> bool {
        self.group.ends_with(".toolkit.fluxcd.io")
    }
}

/// Whether `rt` is the CustomResourceDefinition kind itself.
pub fn is_crd(rt: &ResourceType) -> bool {
    rt.group == crd_object::GROUP && rt.kind == crd_object::KIND
}

/// All served types.
#[derive(Debug, Clone)]
pub struct Registry {
    types: Vec<Arc<ResourceType>>,
}

impl Registry {
    /// The built-in kinds plus the types of the served `crds` (CRD objects as stored).
    /// Types of a CRD whose [`CrdOrigin`] is unchanged since `previous` are reused.
    pub fn build(crds: &[Arc<Value>], previous: Option<&Registry>) -> Registry {
        let mut types: Vec<Arc<ResourceType>> = match previous {
            Some(p) => p
                .types
                .iter()
                .filter(|t| t.origin.is_none())
                .cloned()
                .collect(),
            None => builtin_types().into_iter().map(Arc::new).collect(),
        };
        for crd in crds {
            let Some(origin) = served_origin(crd) else {
                continue;
            };
            let reused: Vec<Arc<ResourceType>> = previous
                .into_iter()
                .flat_map(|p| p.types.iter())
                .filter(|t| t.origin.as_deref() == Some(&origin))
                .cloned()
                .collect();
            if reused.is_empty() {
                let origin = Arc::new(origin);
                types.extend(parse_crd(crd, &origin).into_iter().map(Arc::new));
            } else {
                types.extend(reused);
            }
        }
        Registry { types }
    }

    pub fn types(&self) -> &[Arc<ResourceType>] {
        &self.types
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.plural == plural)
            .cloned()
    }

    /// Finds the type for an object's `apiVersion` + `kind`.
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let (group, version) = split_api_version(api_version);
        self.types
            .iter()
            .find(|t| t.group == group && t.version == version && t.kind == kind)
            .cloned()
    }

    /// Groups in discovery order with their versions.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for t in &self.types {
            match out.iter_mut().find(|(g, _)| *g == t.group) {
                Some((_, versions)) if !versions.contains(&t.version) => {
                    versions.push(t.version.clone())
                }
                Some(_) => {}
                None => out.push((t.group.clone(), vec![t.version.clone()])),
            }
        }
        out
    }
}

fn condition_true(crd: &Value, type_: &str) -> bool {
    crd["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == type_ && c["status"] == "True")
}

/// The origin of a CRD's types if it is served: a CRD is served once its names are
/// accepted or it is established (customresource_handler.go, ServeHTTP: "There is a small
/// chance that a CRD is being served because NamesAccepted condition is true ...").
fn served_origin(crd: &Value) -> Option<CrdOrigin> {
    if !(condition_true(crd, "NamesAccepted") || condition_true(crd, "Established")) {
        return None;
    }
    let meta = &crd["metadata"];
    Some(CrdOrigin {
        name: meta["name"].as_str().unwrap_or_default().to_string(),
        uid: meta["uid"].as_str().unwrap_or_default().to_string(),
        generation: meta["generation"].as_i64().unwrap_or(0),
        accepted_names: crd["status"]["acceptedNames"].clone(),
        terminating: condition_true(crd, "Terminating"),
    })
}

/// Splits `group/version` (core: `v1` → `("", "v1")`).
pub fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// One type per served version of `crd`, named by its accepted names (discovery and the
/// handler serve `status.acceptedNames`, naming_controller.go).
fn parse_crd(crd: &Value, origin: &Arc<CrdOrigin>) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let names = &crd["status"]["acceptedNames"];
    let str_of = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let list_of = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out = Vec::new();
    for version in spec["versions"].as_array().into_iter().flatten() {
        if version["served"] != Value::Bool(true) {
            continue;
        }
        let printer_columns = version["additionalPrinterColumns"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| PrinterColumn {
                name: str_of(&c["name"]),
                type_: str_of(&c["type"]),
                json_path: str_of(&c["jsonPath"]),
                description: str_of(&c["description"]),
                priority: c["priority"].as_i64().unwrap_or(0),
            })
            .collect();
        out.push(ResourceType {
            group: str_of(&spec["group"]),
            version: str_of(&version["name"]),
            kind: str_of(&names["kind"]),
            list_kind: str_of(&names["listKind"]),
            plural: str_of(&names["plural"]),
            singular: str_of(&names["singular"]),
            short_names: list_of(&names["shortNames"]),
            categories: list_of(&names["categories"]),
            namespaced: spec["scope"] == "Namespaced",
            status_subresource: version["subresources"].get("status").is_some(),
            schema: version["schema"].get("openAPIV3Schema").cloned(),
            printer_columns,
            custom: true,
            review: false,
            origin: Some(origin.clone()),
        });
    }
    out
}

fn builtin(
    group: &str,
    kind: &str,
    plural: &str,
    short_names: &[&str],
    namespaced: bool,
    status_subresource: bool,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        list_kind: format!("{kind}List"),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        short_names: short_names.iter().map(|s| s.to_string()).collect(),
        categories: Vec::new(),
        namespaced,
        status_subresource,
        schema: None,
        printer_columns: Vec::new(),
        custom: false,
        review: false,
        origin: None,
    }
}

/// The built-in kinds a spoke (and kubectl) needs, all schemaless here.
fn builtin_types() -> Vec<ResourceType> {
    let rbac = "rbac.authorization.k8s.io";
    vec![
        builtin("", "Namespace", "namespaces", &["ns"], false, true),
        builtin("", "ConfigMap", "configmaps", &["cm"], true, false),
        builtin("", "Secret", "secrets", &[], true, false),
        // What Kustomizations apply in tests and the demo (the nginx example of issue 22).
        builtin("", "Service", "services", &["svc"], true, true),
        builtin("apps", "Deployment", "deployments", &["deploy"], true, true),
        builtin("apps", "StatefulSet", "statefulsets", &["sts"], true, true),
        builtin("apps", "DaemonSet", "daemonsets", &["ds"], true, true),
        builtin("", "Event", "events", &["ev"], true, false),
        builtin(
            "",
            "ServiceAccount",
            "serviceaccounts",
            &["sa"],
            true,
            false,
        ),
        builtin("events.k8s.io", "Event", "events", &["ev"], true, false),
        ResourceType {
            categories: vec!["api-extensions".into()],
            ..builtin(
                crd_object::GROUP,
                "CustomResourceDefinition",
                "customresourcedefinitions",
                &["crd", "crds"],
                false,
                true,
            )
        },
        builtin("coordination.k8s.io", "Lease", "leases", &[], true, false),
        builtin(rbac, "ClusterRole", "clusterroles", &[], false, false),
        builtin(
            rbac,
            "ClusterRoleBinding",
            "clusterrolebindings",
            &[],
            false,
            false,
        ),
        builtin(rbac, "Role", "roles", &[], true, false),
        builtin(rbac, "RoleBinding", "rolebindings", &[], true, false),
        ResourceType {
            review: true,
            ..builtin(
                "authorization.k8s.io",
                "SelfSubjectAccessReview",
                "selfsubjectaccessreviews",
                &[],
                false,
                false,
            )
        },
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loads_all_flux_crds_with_short_names() {
        let r = Registry::standard().unwrap();
        let ks = r
            .lookup("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
            .unwrap();
        assert_eq!(ks.short_names, vec!["ks"]);
        assert!(ks.status_subresource && ks.namespaced && ks.schema.is_some());
        let hr = r
            .by_kind("helm.toolkit.fluxcd.io/v2", "HelmRelease")
            .unwrap();
        assert_eq!(hr.short_names, vec!["hr"]);
        assert_eq!(r.types().iter().filter(|t| t.is_flux()).count(), 8);
        let gates = r.lookup("fleetgate.io", "v1", "gates").unwrap();
        assert!(gates.status_subresource && !gates.namespaced && gates.custom);
        assert_eq!(gates.printer_columns[0].name, "Open");
        assert_eq!(
            r.by_kind("v1", "ConfigMap").unwrap().group_resource(),
            "configmaps"
        );
    }
}
