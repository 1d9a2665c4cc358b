//! Structural-schema admission of custom resources from the CRD's `openAPIV3Schema`:
//! pruning of unknown fields, `null` dropping, defaulting, and the validations the Flux
//! CRDs use (type, enum, required, pattern, lengths, bounds, items). Messages follow
//! k8s.io/kube-openapi/pkg/validation/errors (e.g. `spec.interval in body must be of type
//! string: "integer"`). CEL rules (`x-kubernetes-validations`) and formats are not checked.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use regex::Regex;
use serde_json::Value;

use crate::error::FieldError;

#[derive(Debug, Default)]
pub struct Report {
    /// Dotted paths of fields removed because the schema does not declare them.
    pub unknown: Vec<String>,
    pub errors: Vec<FieldError>,
    defaults: bool,
}

/// Prunes, defaults and validates `obj` in place against `schema`.
pub fn admit(schema: &Value, obj: &mut Value) -> Report {
    admit_with(schema, obj, true)
}

/// Like [`admit`]; without `defaults` (an applied configuration's owned fields must not
/// include server defaults).
pub fn admit_with(schema: &Value, obj: &mut Value, defaults: bool) -> Report {
    let mut r = Report {
        defaults,
        ..Report::default()
    };
    let Some(map) = obj.as_object_mut() else {
        return r;
    };
    let props = &schema["properties"];
    if r.defaults {
        apply_defaults(schema, map);
    }
    let keys: Vec<String> = map.keys().cloned().collect();
    for k in keys {
        if k == "metadata" || k == "apiVersion" || k == "kind" {
            continue; // ObjectMeta/TypeMeta are handled by the server, not the schema.
        }
        match props.get(&k) {
            Some(ps) => walk_child(map, &k, ps, &k, &mut r),
            None => {
                map.remove(&k);
                r.unknown.push(k);
            }
        }
    }
    required(schema, map, "", &mut r);
    r
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn apply_defaults(schema: &Value, map: &mut serde_json::Map<String, Value>) {
    for (k, ps) in schema["properties"].as_object().into_iter().flatten() {
        if let Some(d) = ps.get("default")
            && !map.contains_key(k)
        {
            map.insert(k.clone(), d.clone());
        }
    }
}

fn required(schema: &Value, map: &serde_json::Map<String, Value>, path: &str, r: &mut Report) {
    for req in schema["required"].as_array().into_iter().flatten() {
        if let Some(req) = req.as_str()
            && !map.contains_key(req)
        {
            r.errors.push(FieldError::required(&join(path, req)));
        }
    }
}

/// Walks `map[key]`, dropping it if it is a `null` the schema does not allow.
fn walk_child(
    map: &mut serde_json::Map<String, Value>,
    key: &str,
    schema: &Value,
    path: &str,
    r: &mut Report,
) {
    let is_null = map.get(key).is_some_and(Value::is_null);
    if is_null && schema["nullable"] != Value::Bool(true) {
        // Structural defaulting: "null values for fields that either don't specify the
        // nullable flag, or give it a false value, will be pruned before defaulting"
        // (Kubernetes docs, CustomResourceDefinitions → Defaulting and Nullable).
        map.remove(key);
        if let (true, Some(d)) = (r.defaults, schema.get("default")) {
            map.insert(key.to_string(), d.clone());
        }
        return;
    }
    if let Some(v) = map.get_mut(key) {
        walk(v, schema, path, r);
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn render(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn walk(v: &mut Value, schema: &Value, path: &str, r: &mut Report) {
    if v.is_null() {
        return; // nullable: true
    }
    let int_or_string = schema["x-kubernetes-int-or-string"] == Value::Bool(true);
    if int_or_string {
        if !(v.is_string() || type_name(v) == "integer") {
            r.errors.push(FieldError::invalid(
                path,
                format!("\"{}\"", type_name(v)),
                format!(
                    "{path} in body must be of type integer,string: \"{}\"",
                    type_name(v)
                ),
            ));
            return;
        }
    } else if let Some(want) = schema["type"].as_str() {
        let have = type_name(v);
        let ok = have == want || (want == "number" && have == "integer");
        if !ok {
            r.errors.push(FieldError::invalid(
                path,
                format!("\"{have}\""),
                format!("{path} in body must be of type {want}: \"{have}\""),
            ));
            return;
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        let supported: Vec<String> = allowed.iter().map(render).collect();
        r.errors
            .push(FieldError::not_supported(path, render(v), &supported));
    }
    let preserve = schema["x-kubernetes-preserve-unknown-fields"] == Value::Bool(true);
    match v {
        Value::Object(map) => {
            if r.defaults {
                apply_defaults(schema, map);
            }
            let props = schema["properties"].as_object();
            let additional = &schema["additionalProperties"];
            let keys: Vec<String> = map.keys().cloned().collect();
            for k in keys {
                let child_path = join(path, &k);
                if let Some(ps) = props.and_then(|p| p.get(&k)) {
                    walk_child(map, &k, ps, &child_path, r);
                } else if additional.is_object() {
                    walk_child(map, &k, additional, &child_path, r);
                } else if !(preserve || *additional == Value::Bool(true)) {
                    map.remove(&k);
                    r.unknown.push(child_path);
                }
            }
            required(schema, map, path, r);
            bounds(schema, "Properties", map.len() as f64, path, v, r);
        }
        Value::Array(items) => {
            let len = items.len() as f64;
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, item_schema, &format!("{path}[{i}]"), r);
                }
            }
            bounds(schema, "Items", len, path, v, r);
        }
        Value::String(s) => {
            let chars = s.chars().count() as f64;
            if let Some(p) = schema["pattern"].as_str()
                && matches_pattern(p, s) == Some(false)
            {
                r.errors.push(FieldError::invalid(
                    path,
                    render(v),
                    format!("{path} in body should match '{p}'"),
                ));
            }
            bounds(schema, "Length", chars, path, v, r);
        }
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = schema["minimum"].as_f64()
                && x < min
            {
                r.errors.push(FieldError::invalid(
                    path,
                    render(v),
                    format!("{path} in body should be greater than or equal to {min}"),
                ));
            }
            if let Some(max) = schema["maximum"].as_f64()
                && x > max
            {
                r.errors.push(FieldError::invalid(
                    path,
                    render(v),
                    format!("{path} in body should be less than or equal to {max}"),
                ));
            }
        }
        _ => {}
    }
}

/// `min{what}`/`max{what}` checks (Length, Items, Properties).
fn bounds(schema: &Value, what: &str, n: f64, path: &str, v: &Value, r: &mut Report) {
    // Static keys: this runs for every node of every admitted object.
    let (unit, min_key, max_key) = match what {
        "Length" => ("chars long", "minLength", "maxLength"),
        "Items" => ("items", "minItems", "maxItems"),
        _ => ("properties", "minProperties", "maxProperties"),
    };
    let (min, max) = (schema[min_key].as_f64(), schema[max_key].as_f64());
    if min.is_none() && max.is_none() {
        return;
    }
    let shown = if what == "Length" {
        render(v)
    } else {
        format!("{n}")
    };
    if let Some(min) = min
        && n < min
    {
        r.errors.push(FieldError::invalid(
            path,
            shown.clone(),
            format!("{path} in body should be at least {min} {unit}"),
        ));
    }
    if let Some(max) = max
        && n > max
    {
        r.errors.push(FieldError::invalid(
            path,
            shown,
            format!("{path} in body should be at most {max} {unit}"),
        ));
    }
}

/// Whether `s` matches a CRD pattern (Go RE2 syntax is a subset Rust's regex accepts);
/// `None` for a pattern that does not compile. Patterns are compiled once; the match
/// runs on the cached `Regex` (no clone, no key allocation on a hit).
fn matches_pattern(pattern: &str, s: &str) -> Option<bool> {
    static CACHE: OnceLock<Mutex<HashMap<String, Option<Regex>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let mut guard = cache.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(re) = guard.get(pattern) {
        return re.as_ref().map(|re| re.is_match(s));
    }
    let re = Regex::new(pattern).ok();
    let matched = re.as_ref().map(|re| re.is_match(s));
    guard.insert(pattern.to_string(), re);
    matched
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::Registry;
    use serde_json::json;

    fn ks_schema() -> Value {
        let r = Registry::standard().unwrap();
        let t = r
            .lookup("kustomize.toolkit.fluxcd.io", "v1", "kustomizations")
            .unwrap();
        t.schema.clone().unwrap()
    }

    fn ks(spec: Value) -> Value {
        json!({"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
               "metadata": {"name": "x", "annotations": {"a": "b"}}, "spec": spec})
    }

    #[test]
    fn prunes_unknown_and_defaults() {
        let mut obj = ks(json!({"interval": "5m", "prune": true, "suspnd": true,
            "sourceRef": {"kind": "GitRepository", "name": "repo"}}));
        let r = admit(&ks_schema(), &mut obj);
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!(r.unknown, vec!["spec.suspnd"]);
        assert!(obj["spec"].get("suspnd").is_none());
        assert_eq!(obj["metadata"]["annotations"]["a"], "b");
        assert_eq!(obj["status"]["observedGeneration"], -1);
    }

    #[test]
    fn reports_type_enum_required_and_pattern_errors() {
        let mut obj = ks(json!({"interval": 5, "sourceRef": {"kind": "Foo"}}));
        let r = admit(&ks_schema(), &mut obj);
        let msgs: Vec<String> = r.errors.iter().map(FieldError::render).collect();
        assert!(msgs.contains(&"spec.interval: Invalid value: \"integer\": spec.interval in body must be of type string: \"integer\"".to_string()), "{msgs:?}");
        assert!(
            msgs.contains(&"spec.prune: Required value".to_string()),
            "{msgs:?}"
        );
        assert!(
            msgs.contains(&"spec.sourceRef.name: Required value".to_string()),
            "{msgs:?}"
        );
        assert!(
            msgs.iter().any(|m| m.starts_with(
                "spec.sourceRef.kind: Unsupported value: \"Foo\": supported values: "
            )),
            "{msgs:?}"
        );
        let mut obj = ks(json!({"interval": "5 minutes", "prune": true,
            "sourceRef": {"kind": "GitRepository", "name": "r"}}));
        let r = admit(&ks_schema(), &mut obj);
        assert_eq!(r.errors.len(), 1);
        assert!(
            r.errors[0]
                .render()
                .contains("spec.interval in body should match '^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$'")
        );
    }
}
