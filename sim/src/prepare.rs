//! Building the object to store from a write's request body: `apiVersion`/`kind` and
//! namespace checks, server-owned metadata, status-subresource rules, schema pruning,
//! defaulting and validation, `fieldValidation` for unknown fields, generation and
//! managedFields (apiextensions-apiserver pkg/registry/customresource/strategy.go).
//! Also the comparisons that make a write a no-op or bump `metadata.generation`.

use serde_json::{Map, Value, json};

use crate::apiextensions::strategy;
use crate::crd::{ResourceType, is_crd};
use crate::error::{Error, Result};
use crate::managed::{self, Writer};
use crate::meta::validate_metadata;
use crate::schema;
use crate::write_opts::{FieldValidation, Sub, Track, WriteOpts, scope_of};

const META_FIELDS: &[&str] = &[
    "name",
    "generateName",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

pub(crate) fn timestamp() -> String {
    managed::now()
}

/// Checks `apiVersion`/`kind` of a request body against the endpoint.
pub fn check_type_meta(rt: &ResourceType, obj: &Value) -> Result<()> {
    if !obj.is_object() {
        return Err(Error::bad_request("the request body is not a JSON object"));
    }
    let av = obj["apiVersion"].as_str().unwrap_or_default();
    let kind = obj["kind"].as_str().unwrap_or_default();
    if (!av.is_empty() && av != rt.api_version()) || (!kind.is_empty() && kind != rt.kind) {
        return Err(Error::bad_request(format!(
            "the API version in the data ({av}) does not match the expected API version ({})",
            rt.api_version()
        )));
    }
    Ok(())
}

fn normalize_metadata(obj: &mut Value) {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    if let Some(m) = obj["metadata"].as_object_mut() {
        m.retain(|k, v| META_FIELDS.contains(&k.as_str()) && !v.is_null());
    }
}

/// Secret `stringData` is write-only: merged into `data` (base64) by the registry.
fn merge_string_data(secret: &mut Value) {
    use base64::Engine;
    let Some(string_data) = secret.as_object_mut().and_then(|m| m.remove("stringData")) else {
        return;
    };
    for (k, v) in string_data.as_object().into_iter().flatten() {
        let text = v.as_str().unwrap_or_default();
        secret["data"][k.as_str()] = json!(base64::engine::general_purpose::STANDARD.encode(text));
    }
}

/// True when the maps `a` and `b` are equal apart from the keys in `skip` (a non-object
/// counts as an empty map). Compared in place: cloning whole objects to compare them was
/// a large share of every write.
fn equal_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    let empty = Map::new();
    let (a, b) = (
        a.as_object().unwrap_or(&empty),
        b.as_object().unwrap_or(&empty),
    );
    let kept = |m: &Map<String, Value>| m.keys().filter(|k| !skip.contains(&k.as_str())).count();
    kept(a) == kept(b)
        && a.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .all(|(k, v)| b.get(k) == Some(v))
}

/// Everything but metadata and status differs: what `metadata.generation` tracks.
fn spec_changed(old: &Value, new: &Value) -> bool {
    !equal_except(old, new, &["metadata", "status"])
}

/// The objects are the same but for fields that change on every write
/// (`resourceVersion`, managedFields times): the write is a no-op.
pub(crate) fn same_content(a: &Value, b: &Value) -> bool {
    if !equal_except(a, b, &["metadata"]) {
        return false;
    }
    let (ma, mb) = (&a["metadata"], &b["metadata"]);
    if !(ma.is_object() && mb.is_object()) {
        return ma == mb;
    }
    if !equal_except(ma, mb, &["resourceVersion", "managedFields"]) {
        return false;
    }
    match (&ma["managedFields"], &mb["managedFields"]) {
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len()
                && x.iter().zip(y).all(|(ex, ey)| match (ex, ey) {
                    (Value::Object(_), Value::Object(_)) => equal_except(ex, ey, &["time"]),
                    _ => ex == ey,
                })
        }
        (x, y) => x == y,
    }
}

/// Builds the object to store from a request body: server-owned metadata, status rules,
/// schema pruning/defaulting/validation, generation, managedFields.
pub fn prepare(
    rt: &ResourceType,
    old: Option<&Value>,
    mut new: Value,
    sub: Sub,
    opts: &WriteOpts,
    track: Track<'_>,
) -> Result<(Value, Vec<String>)> {
    check_type_meta(rt, &new)?;
    new["apiVersion"] = json!(rt.api_version());
    new["kind"] = json!(rt.kind);
    normalize_metadata(&mut new);
    if rt.kind == "Secret" && rt.group.is_empty() {
        merge_string_data(&mut new);
    }
    match old {
        Some(old) => {
            if rt.status_subresource && sub == Sub::Status {
                // Status writes change only status (statusStrategy.PrepareForUpdate).
                let status = new.get("status").cloned();
                new = old.clone();
                match status {
                    Some(s) => new["status"] = s,
                    None => {
                        new.as_object_mut().map(|m| m.remove("status"));
                    }
                }
            } else if rt.status_subresource {
                // Main-resource writes ignore status.
                match old.get("status") {
                    Some(s) => new["status"] = s.clone(),
                    None => {
                        new.as_object_mut().map(|m| m.remove("status"));
                    }
                }
            }
            for f in [
                "name",
                "namespace",
                "uid",
                "creationTimestamp",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ] {
                match old["metadata"].get(f) {
                    Some(v) => new["metadata"][f] = v.clone(),
                    None => {
                        new["metadata"].as_object_mut().map(|m| m.remove(f));
                    }
                }
            }
        }
        None => {
            let meta = &mut new["metadata"];
            meta["uid"] = json!(uuid::Uuid::new_v4().to_string());
            meta["creationTimestamp"] = json!(timestamp());
            if let Some(m) = meta.as_object_mut() {
                for f in [
                    "generation",
                    "deletionTimestamp",
                    "deletionGracePeriodSeconds",
                ] {
                    m.remove(f);
                }
            }
            if rt.custom {
                meta["generation"] = json!(1);
            }
            if rt.status_subresource {
                new.as_object_mut().map(|m| m.remove("status"));
            }
            if rt.kind == "Namespace" && rt.group.is_empty() {
                // The namespace registry's PrepareForCreate: Active, with the
                // `kubernetes` finalizer.
                new["status"] = json!({"phase": "Active"});
                new["spec"] = json!({"finalizers": ["kubernetes"]});
            }
        }
    }
    let name = new["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let mut meta_errors = validate_metadata(&new);
    if !rt.custom && sub == Sub::Main {
        meta_errors.extend(crate::builtin::validate(rt, old, &new));
    }
    if !meta_errors.is_empty() {
        return Err(Error::invalid(&rt.group, &rt.kind, &name, meta_errors));
    }
    let mut warnings = Vec::new();
    if let Some(schema) = &rt.schema {
        let report = schema::admit(schema, &mut new);
        unknown_fields(rt, &report.unknown, opts.validation, &mut warnings)?;
        if !report.errors.is_empty() {
            return Err(Error::invalid(&rt.group, &rt.kind, &name, report.errors));
        }
    }
    if let (true, Some(old)) = (rt.custom, old)
        && spec_changed(old, &new)
    {
        let g = old["metadata"]["generation"].as_i64().unwrap_or(0);
        new["metadata"]["generation"] = json!(g + 1);
    }
    if is_crd(rt) {
        strategy::prepare(old, &mut new, sub)?;
    }
    let sub_name = if sub == Sub::Status { "status" } else { "" };
    match track {
        Track::Update => {
            let api_version = rt.api_version();
            let w = Writer {
                manager: &opts.manager,
                subresource: sub_name,
                scope: scope_of(rt, sub),
                api_version: &api_version,
            };
            managed::record_update(old, &mut new, &w);
        }
        Track::Precomputed(entries) => managed::write(&mut new, entries),
    }
    Ok((new, warnings))
}

/// Handles pruned unknown fields per `fieldValidation`: Strict fails with the decoder's
/// message, Warn adds `Warning` headers, Ignore drops them silently.
pub fn unknown_fields(
    rt: &ResourceType,
    unknown: &[String],
    validation: FieldValidation,
    warnings: &mut Vec<String>,
) -> Result<()> {
    if unknown.is_empty() {
        return Ok(());
    }
    match validation {
        FieldValidation::Strict => {
            let list = unknown
                .iter()
                .map(|f| format!("unknown field \"{f}\""))
                .collect::<Vec<_>>()
                .join(", ");
            Err(Error::bad_request(format!(
                "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {list}",
                kind = rt.kind,
                v = rt.version
            )))
        }
        FieldValidation::Warn => {
            warnings.extend(unknown.iter().map(|f| format!("unknown field \"{f}\"")));
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}

/// Fills `metadata.namespace` from the URL and checks it matches.
pub fn bind_namespace(rt: &ResourceType, obj: &mut Value, ns: Option<&str>) -> Result<()> {
    if !obj["metadata"].is_object() {
        obj["metadata"] = json!({});
    }
    match (rt.namespaced, ns) {
        (true, Some(ns)) => match obj["metadata"]["namespace"].as_str() {
            Some(body_ns) if !body_ns.is_empty() && body_ns != ns => Err(Error::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            _ => {
                obj["metadata"]["namespace"] = json!(ns);
                Ok(())
            }
        },
        (true, None) => Err(Error::bad_request(
            "the server could not find the requested resource",
        )),
        (false, _) => {
            obj["metadata"]
                .as_object_mut()
                .map(|m| m.remove("namespace"));
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_op_and_generation_checks_ignore_volatile_fields() {
        let a = json!({"kind": "K", "metadata": {"name": "x", "resourceVersion": "1",
            "managedFields": [{"manager": "m", "time": "t1", "fieldsV1": {}}]},
            "spec": {"suspend": false}, "status": {"s": 1}});
        let mut b = a.clone();
        b["metadata"]["resourceVersion"] = json!("2");
        b["metadata"]["managedFields"][0]["time"] = json!("t2");
        b["status"]["s"] = json!(2);
        assert!(!spec_changed(&a, &b), "status and metadata are not spec");
        assert!(!same_content(&a, &b), "status differs");
        b["status"]["s"] = json!(1);
        assert!(
            same_content(&a, &b),
            "only rv and managedFields times differ"
        );
        b["metadata"]["managedFields"][0]["manager"] = json!("n");
        assert!(!same_content(&a, &b));
        let mut c = a.clone();
        c["spec"]["suspend"] = json!(true);
        assert!(spec_changed(&a, &c) && !same_content(&a, &c));
        c["spec"]["suspend"] = json!(false);
        c["extra"] = json!(1);
        assert!(spec_changed(&a, &c), "a new top-level field is spec");
    }
}
