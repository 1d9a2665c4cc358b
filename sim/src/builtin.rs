//! Validation the API server applies to built-in kinds beyond ObjectMeta, where a
//! controller's own writes can fail it: ConfigMap and Secret keys and size, 1,048,576
//! bytes of `data` and `binaryData` together, decoded (`core.MaxSecretSize`;
//! k8s.io/kubernetes/pkg/apis/core/validation/validation.go `ValidateConfigMap`,
//! `ValidateSecret`), and Events (pkg/apis/core/validation/events.go
//! `ValidateEventCreate`/`ValidateEventUpdate`, which both Event APIs run).
//!
//! Text values are not checked for their characters. A real API server stores U+0000
//! (NUL) in a ConfigMap value, an Event's note or a custom resource's string field: its
//! JSON decoder (sigs.k8s.io/json, encoding/json's) turns `\u0000` into the character,
//! protobuf and JSON storage in etcd keep it, and no validation above looks at it. NUL
//! is refused only where a field has a character set: names, label keys and values,
//! annotation keys (`meta`), ConfigMap keys and an Event's reportingController (here),
//! and CRD fields with a `pattern` (`schema`). The simulator refuses exactly there.

use base64::Engine as _;
use serde_json::Value;

use crate::crd::ResourceType;
use crate::error::FieldError;
use crate::meta::{dns1123_subdomain, qualified_name};

/// `core.MaxSecretSize`: a ConfigMap's or Secret's data, all keys together.
pub const MAX_DATA_SIZE: usize = 1024 * 1024;

/// events.go's limits, in bytes (Go's `len`).
pub const REPORTING_INSTANCE_LIMIT: usize = 128;
pub const ACTION_LIMIT: usize = 128;
pub const REASON_LIMIT: usize = 128;
pub const NOTE_LIMIT: usize = 1024;

/// The errors of `new` (the stored shape of the request's API; `old` on update).
pub fn validate(rt: &ResourceType, old: Option<&Value>, new: &Value) -> Vec<FieldError> {
    match (rt.group.as_str(), rt.kind.as_str()) {
        ("", "ConfigMap") => data(new, &["data", "binaryData"]),
        ("", "Secret") => data(new, &["data"]),
        ("events.k8s.io", "Event") => event(new, old, true),
        ("", "Event") => event(new, old, false),
        _ => Vec::new(),
    }
}

/// `validation.IsConfigMapKey`: at most 253 characters of `[-._a-zA-Z0-9]`, not `.`,
/// `..` nor starting with `..`.
fn config_key(key: &str) -> Option<&'static str> {
    if key.len() > 253 {
        return Some("must be no more than 253 characters");
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_'))
    {
        return Some(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.' \
             (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is \
             '[-._a-zA-Z0-9]+')",
        );
    }
    if key == "." || key == ".." {
        return Some("must not be '.' or '..'");
    }
    if key.starts_with("..") {
        return Some("must not start with '..'");
    }
    None
}

/// `ValidateConfigMap` / `ValidateSecret`: every key a config key, a ConfigMap's `data` key
/// not also in `binaryData`, and all values together (decoded bytes) at most
/// [`MAX_DATA_SIZE`].
fn data(obj: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut size = 0;
    let config_map = obj["kind"].as_str() == Some("ConfigMap");
    for field in fields {
        for (k, v) in obj[field].as_object().into_iter().flatten() {
            if let Some(detail) = config_key(k) {
                errors.push(FieldError::invalid(
                    &format!("{field}[{k}]"),
                    format!("{k:?}"),
                    detail.into(),
                ));
            }
            // Checked from `data` only, as upstream does.
            if config_map && *field == "data" && obj["binaryData"].get(k).is_some() {
                errors.push(FieldError::invalid(
                    &format!("data[{k}]"),
                    format!("{k:?}"),
                    "duplicate of key present in binaryData".into(),
                ));
            }
            let text = v.as_str().unwrap_or_default();
            size += match (obj["kind"].as_str(), *field) {
                // Stored bytes: Secret data and ConfigMap binaryData travel as base64.
                (Some("Secret"), _) | (_, "binaryData") => {
                    base64::engine::general_purpose::STANDARD
                        .decode(text)
                        .map_or(text.len(), |b| b.len())
                }
                _ => text.len(),
            };
        }
    }
    if size > MAX_DATA_SIZE {
        // A ConfigMap's error is on `field.NewPath("")`, which renders as `[]` (the whole
        // object); a Secret's on `data`.
        let path = if config_map { "[]" } else { "data" };
        errors.push(FieldError::too_long(path, MAX_DATA_SIZE));
    }
    errors
}

/// The field names of `obj`'s API (events.k8s.io/v1 or core/v1).
struct Names {
    regarding: &'static str,
    note: &'static str,
    controller: &'static str,
}

fn event(new: &Value, old: Option<&Value>, events_api: bool) -> Vec<FieldError> {
    let n = if events_api {
        Names {
            regarding: "regarding",
            note: "note",
            controller: "reportingController",
        }
    } else {
        Names {
            regarding: "involvedObject",
            note: "message",
            controller: "reportingComponent",
        }
    };
    let s = |f: &str| new[f].as_str().unwrap_or_default();
    let mut errors = Vec::new();
    let namespace = new["metadata"]["namespace"].as_str().unwrap_or_default();
    let involved_ns = new[n.regarding]["namespace"].as_str().unwrap_or_default();
    let ns_mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            format!("{involved_ns:?}"),
            "does not match event.namespace".into(),
        )
    };
    // legacyValidateEvent.
    if s("eventTime").is_empty() {
        if (involved_ns.is_empty() && !matches!(namespace, "" | "default"))
            || (!involved_ns.is_empty() && namespace != involved_ns)
        {
            errors.push(ns_mismatch());
        }
    } else {
        if involved_ns.is_empty() && !matches!(namespace, "default" | "kube-system") {
            errors.push(ns_mismatch());
        }
        let controller = s(n.controller);
        if controller.is_empty() {
            errors.push(FieldError::required("reportingController"));
        } else if !qualified_name(controller) {
            errors.push(FieldError::invalid(
                "reportingController",
                format!("{controller:?}"),
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must \
                 start and end with an alphanumeric character"
                    .into(),
            ));
        }
        let limits = [
            (
                "reportingInstance",
                s("reportingInstance"),
                REPORTING_INSTANCE_LIMIT,
            ),
            ("action", s("action"), ACTION_LIMIT),
            ("reason", s("reason"), REASON_LIMIT),
        ];
        for (field, value, limit) in limits {
            if value.is_empty() {
                errors.push(FieldError::required(field));
            } else if value.len() > limit {
                errors.push(at_most(field, limit));
            }
        }
        if s(n.note).len() > NOTE_LIMIT {
            errors.push(at_most("message", NOTE_LIMIT));
        }
    }
    if !dns1123_subdomain(namespace) {
        errors.push(FieldError::invalid(
            "namespace",
            format!("{namespace:?}"),
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
                .into(),
        ));
    }
    if !events_api {
        return errors; // core/v1: legacy validation only.
    }
    match old {
        None => {
            if s("eventTime").is_empty() {
                errors.push(FieldError::required("eventTime"));
            }
            if !matches!(s("type"), "Normal" | "Warning") {
                errors.push(FieldError::invalid(
                    "type",
                    "\"\"".into(),
                    format!("has invalid value: {}", s("type")),
                ));
            }
            for (field, set) in [
                ("firstTimestamp", !new["deprecatedFirstTimestamp"].is_null()),
                ("lastTimestamp", !new["deprecatedLastTimestamp"].is_null()),
                ("count", new["deprecatedCount"].as_i64().unwrap_or(0) != 0),
                ("source", !new["deprecatedSource"].is_null()),
            ] {
                if set {
                    errors.push(FieldError::invalid(
                        field,
                        "\"\"".into(),
                        "needs to be unset".into(),
                    ));
                }
            }
        }
        Some(old) => {
            for (field, path) in [
                ("involvedObject", n.regarding),
                ("reason", "reason"),
                ("message", n.note),
                ("type", "type"),
                ("action", "action"),
                ("reportingController", n.controller),
            ] {
                if old[path] != new[path] {
                    errors.push(FieldError::invalid(
                        field,
                        new[path].to_string(),
                        "field is immutable".into(),
                    ));
                }
            }
        }
    }
    if let Some(series) = new["series"].as_object() {
        if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
            errors.push(FieldError::invalid(
                "series.count",
                "\"\"".into(),
                "should be at least 2".into(),
            ));
        }
        if series.get("lastObservedTime").is_none_or(Value::is_null) {
            errors.push(FieldError::required("series.lastObservedTime"));
        }
    }
    errors
}

fn at_most(field: &str, limit: usize) -> FieldError {
    FieldError::invalid(
        field,
        "\"\"".into(),
        format!("can have at most {limit} characters"),
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::crd::Registry;

    fn rt(api_version: &str, kind: &str) -> std::sync::Arc<ResourceType> {
        Registry::standard()
            .unwrap()
            .by_kind(api_version, kind)
            .unwrap()
    }

    fn event_v1(note: &str) -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"namespace": "flux-system", "name": "apps.1"},
            "eventTime": "2026-11-27T10:00:00.000000Z", "type": "Normal",
            "reason": "GateClosed", "action": "Suspend", "note": note,
            "reportingController": "fleetgate-spoke", "reportingInstance": "pod-1",
            "regarding": {"kind": "Kustomization", "namespace": "flux-system", "name": "apps"}})
    }

    #[test]
    fn nul_is_stored_in_values_and_refused_in_keys() {
        let cm = rt("v1", "ConfigMap");
        let ok = json!({"kind": "ConfigMap", "data": {"snapshot.json": "a\u{0}b"}});
        assert!(validate(&cm, None, &ok).is_empty());
        let bad = json!({"kind": "ConfigMap", "data": {"a\u{0}b": "x", "..x": "y"}});
        let errs = validate(&cm, None, &bad);
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert!(errs[1].render().starts_with("data[a\u{0}b]: Invalid value"));
        let ev = rt("events.k8s.io/v1", "Event");
        assert!(validate(&ev, None, &event_v1("bad \u{0} byte")).is_empty());
    }

    #[test]
    fn config_maps_hold_at_most_a_mebibyte() {
        let cm = rt("v1", "ConfigMap");
        let big = "x".repeat(MAX_DATA_SIZE / 2 + 1);
        let obj = json!({"kind": "ConfigMap", "data": {"a": big, "b": big}});
        let errs = validate(&cm, None, &obj);
        assert_eq!(
            errs.iter().map(FieldError::render).collect::<Vec<_>>(),
            ["[]: Too long: may not be more than 1048576 bytes"]
        );
        // binaryData counts decoded bytes: 1 MiB of binary is 1.33 MiB of base64, and fits.
        let b64 = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
        let full = json!({"kind": "ConfigMap", "binaryData": {"a": b64(MAX_DATA_SIZE)}});
        assert!(validate(&cm, None, &full).is_empty());
        let over = json!({"kind": "ConfigMap", "data": {"b": "x"}, "binaryData": {"a": b64(MAX_DATA_SIZE)}});
        assert_eq!(validate(&cm, None, &over).len(), 1);
        let secret = rt("v1", "Secret");
        let obj = json!({"kind": "Secret", "data": {"a": b64(MAX_DATA_SIZE + 1)}});
        assert_eq!(
            validate(&secret, None, &obj)
                .iter()
                .map(FieldError::render)
                .collect::<Vec<_>>(),
            ["data: Too long: may not be more than 1048576 bytes"]
        );
    }

    #[test]
    fn a_config_map_key_is_in_data_or_binary_data_not_both() {
        let cm = rt("v1", "ConfigMap");
        let obj = json!({"kind": "ConfigMap", "data": {"k": "x"}, "binaryData": {"k": "eA=="}});
        assert_eq!(
            validate(&cm, None, &obj)
                .iter()
                .map(FieldError::render)
                .collect::<Vec<_>>(),
            ["data[k]: Invalid value: \"k\": duplicate of key present in binaryData"]
        );
    }

    #[test]
    fn event_notes_are_at_most_1024_bytes_and_immutable() {
        let ev = rt("events.k8s.io/v1", "Event");
        // 1024 bytes is the limit in bytes, not characters (Go's len).
        assert!(validate(&ev, None, &event_v1(&"x".repeat(1024))).is_empty());
        let errs = validate(&ev, None, &event_v1(&"é".repeat(513)));
        assert_eq!(
            errs.iter().map(FieldError::render).collect::<Vec<_>>(),
            ["message: Invalid value: \"\": can have at most 1024 characters"]
        );
        let mut no_type = event_v1("n");
        no_type["type"] = json!("Info");
        no_type["reportingController"] = json!("fleetgate spoke");
        assert_eq!(validate(&ev, None, &no_type).len(), 2);
        let old = event_v1("first");
        let mut bumped = old.clone();
        bumped["series"] = json!({"count": 2, "lastObservedTime": "2026-11-27T10:01:00.000000Z"});
        assert!(validate(&ev, Some(&old), &bumped).is_empty());
        bumped["note"] = json!("second");
        assert_eq!(validate(&ev, Some(&old), &bumped).len(), 1);
    }
}
