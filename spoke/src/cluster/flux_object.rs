//! A Flux object as the spoke reads it from the API server: only the fields it
//! plans on, deserialized straight from the response. No `serde_json::Value`
//! tree of `spec` and `status`, no `metadata.managedFields` list (only the one
//! bit the nested-layout protection needs, computed while parsing), and only
//! the annotations fleetgate and Flux's opt-outs use. Every watch event and
//! list page of a thousand Flux objects goes through here, so what is not
//! kept is never allocated.

use std::{borrow::Cow, collections::BTreeMap, fmt};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::{ApiResource, DynamicObject, DynamicResourceScope, Resource};
use serde::{
    Deserialize, Deserializer,
    de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor},
};
use serde_json::Value;

use crate::hold::marks::SSA;
use crate::suspend::annotations::{FREEZE_REASON, IGNORE, PINNED, RECONCILE, SUSPENDED_BY};

/// The annotations the spoke reads on Flux objects; others are skipped.
const KEPT_ANNOTATIONS: [&str; 6] = [SUSPENDED_BY, IGNORE, PINNED, RECONCILE, SSA, FREEZE_REASON];

/// A watched Flux object (any kind; the `ApiResource` says which).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(from = "Raw")]
pub struct FluxObject {
    /// `metadata` with name, namespace, uid, resourceVersion, generation,
    /// labels and the kept annotations only.
    pub metadata: ObjectMeta,
    /// managedFields: a server-side apply manager (kustomize-controller
    /// applying a parent's manifest) owns fields of `spec`.
    pub applied_by_parent: bool,
    pub spec: Spec,
    pub status: Status,
}

/// What is parsed; `metadata` is split into the two fields above.
#[derive(Deserialize)]
struct Raw {
    #[serde(default)]
    metadata: Meta,
    #[serde(default)]
    spec: Spec,
    #[serde(default)]
    status: Status,
}

impl From<Raw> for FluxObject {
    fn from(raw: Raw) -> Self {
        let applied_by_parent = raw.metadata.managed_fields;
        FluxObject {
            metadata: raw.metadata.into_meta(),
            applied_by_parent,
            spec: raw.spec,
            status: raw.status,
        }
    }
}

/// `spec` fields the planner reads. Shapes differ between kinds (a
/// HelmChart's `spec.chart` is a string, a HelmRelease's an object), so
/// each is read leniently: a value of another shape is absent.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Spec {
    #[serde(deserialize_with = "lenient")]
    pub suspend: Option<bool>,
    #[serde(deserialize_with = "lenient")]
    pub source_ref: Option<Reference>,
    #[serde(deserialize_with = "lenient")]
    pub chart_ref: Option<Reference>,
    #[serde(deserialize_with = "lenient")]
    pub chart: Option<Chart>,
}

/// `{kind, name, namespace?}`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Reference {
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub namespace: Option<String>,
}

/// HelmRelease `spec.chart`.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Chart {
    #[serde(default)]
    pub spec: ChartSpec,
}

/// HelmRelease `spec.chart.spec`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChartSpec {
    #[serde(default)]
    pub source_ref: Option<Reference>,
}

/// `status` fields the spoke reads and reports.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Status {
    #[serde(deserialize_with = "lenient")]
    pub conditions: Option<Vec<Condition>>,
    #[serde(deserialize_with = "lenient")]
    pub observed_generation: Option<i64>,
    #[serde(deserialize_with = "lenient")]
    pub last_applied_revision: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub last_attempted_revision: Option<String>,
    #[serde(deserialize_with = "lenient")]
    pub artifact: Option<Artifact>,
    /// HelmRelease v2 (Kustomizations have a `history` of another shape:
    /// their entries have neither field).
    #[serde(deserialize_with = "lenient")]
    pub history: Option<Vec<HistoryEntry>>,
    /// Kustomization: the ids only, one per line (see `observed::inventory`).
    #[serde(deserialize_with = "inventory")]
    pub inventory: Option<String>,
}

/// A `metav1.Condition` as far as the spoke reads it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: String,
    pub reason: String,
    pub message: String,
}

/// A source's `status.artifact`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Artifact {
    pub revision: Option<String>,
}

/// One HelmRelease `status.history` snapshot.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct HistoryEntry {
    pub chart_version: Option<String>,
    pub status: Option<String>,
}

impl FluxObject {
    /// The same fields from an object already parsed whole (tests, tools).
    pub fn from_dynamic(obj: &DynamicObject) -> Self {
        serde_json::to_value(obj)
            .ok()
            .and_then(|v| from_value(v).ok())
            .unwrap_or_default()
    }
}

/// Parses a Flux object from JSON (the `applied_by_parent` bit included).
pub fn from_value(v: Value) -> serde_json::Result<FluxObject> {
    serde_json::from_value(v)
}

impl Resource for FluxObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A value of another shape than `T` reads as absent instead of failing the
/// whole object (and with it the kind's watch). Only small fields use it:
/// the value is buffered once.
fn lenient<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(serde_json::from_value(v).ok())
}

/// `status.inventory.entries[].id`, newline-separated, without buffering
/// the list (a Kustomization may list thousands of objects).
fn inventory<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    #[derive(Deserialize)]
    struct Inventory {
        #[serde(default)]
        entries: Option<Entries>,
    }
    struct Entries(String);
    impl<'de> Deserialize<'de> for Entries {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Entries;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a list of inventory entries")
                }
                fn visit_seq<A: serde::de::SeqAccess<'de>>(
                    self,
                    mut seq: A,
                ) -> Result<Entries, A::Error> {
                    #[derive(Deserialize)]
                    struct Entry<'a> {
                        #[serde(default, borrow)]
                        id: Option<Cow<'a, str>>,
                    }
                    let mut ids = String::new();
                    while let Some(e) = seq.next_element::<Entry>()? {
                        if let Some(id) = e.id {
                            if !ids.is_empty() {
                                ids.push('\n');
                            }
                            ids.push_str(&id);
                        }
                    }
                    Ok(Entries(ids))
                }
            }
            d.deserialize_seq(V)
        }
    }
    let inv: Option<Inventory> = Option::deserialize(d)?;
    Ok(inv.and_then(|i| i.entries).map(|e| e.0))
}

/// `metadata` without managedFields and the annotations nobody reads, plus
/// whether a server-side apply manager owns fields of `spec`.
#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    #[serde(deserialize_with = "kept_annotations")]
    annotations: Option<BTreeMap<String, String>>,
    #[serde(deserialize_with = "applies_spec")]
    managed_fields: bool,
}

impl Meta {
    fn into_meta(self) -> ObjectMeta {
        ObjectMeta {
            name: self.name,
            namespace: self.namespace,
            uid: self.uid,
            resource_version: self.resource_version,
            generation: self.generation,
            labels: self.labels,
            annotations: self.annotations,
            ..ObjectMeta::default()
        }
    }
}

/// A map key compared in place: one of a few known keys, or "other"
/// (nothing allocated for the keys that are skipped).
struct Key(&'static str);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E>(self, v: &str) -> Result<Key, E> {
                let known = KEPT_ANNOTATIONS.iter().chain(&["f:spec"]);
                Ok(Key(known.copied().find(|k| *k == v).unwrap_or("")))
            }
        }
        d.deserialize_str(V)
    }
}

fn kept_annotations<'de, D: Deserializer<'de>>(
    d: D,
) -> Result<Option<BTreeMap<String, String>>, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Option<BTreeMap<String, String>>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of annotations")
        }
        fn visit_none<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut kept = BTreeMap::new();
            while let Some(Key(key)) = map.next_key::<Key>()? {
                if KEPT_ANNOTATIONS.contains(&key) {
                    kept.insert(key.to_owned(), map.next_value::<String>()?);
                } else {
                    // e.g. kubectl's last-applied-configuration: a copy of
                    // the whole object, never read.
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(Some(kept))
        }
    }
    d.deserialize_option(V)
}

/// managedFields: does a server-side apply manager (kustomize-controller
/// applying a parent's manifest) own fields of `spec`? fleetgate's own
/// patches are Updates. Reads each entry's operation and the top-level keys
/// of `fieldsV1`, skipping the field trees.
fn applies_spec<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Entry {
        #[serde(default)]
        operation: Option<String>,
        #[serde(default)]
        fields_v1: OwnsSpec,
    }
    #[derive(Default)]
    struct OwnsSpec(bool);
    impl<'de> Deserialize<'de> for OwnsSpec {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = OwnsSpec;
                fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                    f.write_str("a fieldsV1 map")
                }
                fn visit_unit<E>(self) -> Result<OwnsSpec, E> {
                    Ok(OwnsSpec(false))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<OwnsSpec, A::Error> {
                    let mut spec = false;
                    while let Some(Key(key)) = map.next_key::<Key>()? {
                        spec |= key == "f:spec";
                        map.next_value::<IgnoredAny>()?;
                    }
                    Ok(OwnsSpec(spec))
                }
            }
            d.deserialize_any(V)
        }
    }
    let entries: Option<Vec<Entry>> = Option::deserialize(d)?;
    Ok(entries
        .into_iter()
        .flatten()
        .any(|e| e.operation.as_deref() == Some("Apply") && e.fields_v1.0))
}
