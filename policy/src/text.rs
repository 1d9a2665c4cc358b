//! Text PostgreSQL can store. Its `text` and `jsonb` types refuse U+0000 (NUL), the one
//! Unicode scalar value they cannot hold; every other character, control or not, is stored
//! as given. This module is the one definition of that rule, used at every boundary:
//! - input from people and machines (REST bodies, paths and queries, gRPC AdminService
//!   messages, gate manifests from any source) is *refused* with an error naming the field:
//!   [`check_str`], [`check_json`], [`check_serialize`];
//! - data a cluster reports about itself is *stored faithfully*, with each U+0000 replaced by
//!   U+FFFD (REPLACEMENT CHARACTER): [`replace_str`], [`replace_json`].
//!
//! New input surfaces (access policies, webhooks, …) call [`check_serialize`] on what they
//! accept, or get it for free through the hub's extractors and the gRPC codec.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::Value;

use crate::PolicyError;
use crate::error::join_path;

/// The character PostgreSQL's `text` and `jsonb` cannot store.
pub const UNSTORABLE: char = '\u{0}';

/// What replaces [`UNSTORABLE`] in data reported by clusters.
pub const REPLACEMENT: char = '\u{FFFD}';

/// The message of every refusal, so clients can recognise it.
pub const MESSAGE: &str = "contains U+0000 (NUL), which cannot be stored";

/// True when PostgreSQL can store `s` as it is.
pub fn storable(s: &str) -> bool {
    !s.contains(UNSTORABLE)
}

/// Refuses `s` unless storable, naming `path`.
pub fn check_str(path: &str, s: &str) -> Result<(), PolicyError> {
    if storable(s) {
        Ok(())
    } else {
        Err(PolicyError::new(path, MESSAGE))
    }
}

/// Refuses `value` when any string in it (object keys included) is not storable. The error
/// names the first such field by its path from `value` (`spec.windows[0].name`; a key is
/// named by the path of the object holding it).
pub fn check_json(value: &Value) -> Result<(), PolicyError> {
    match value {
        Value::String(s) => check_str("", s),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_json(v).map_err(|e| e.within(&format!("[{i}]")))),
        Value::Object(map) => map.iter().try_for_each(|(k, v)| {
            if storable(k) {
                check_json(v).map_err(|e| e.within(&key_segment(k)))
            } else {
                Err(PolicyError::new("", format!("a key {MESSAGE}")))
            }
        }),
        Value::Null | Value::Bool(_) | Value::Number(_) => Ok(()),
    }
}

/// [`check_json`] over anything serialisable (field paths in its serde spelling, which for
/// manifests is the manifest's own).
pub fn check_serialize<T: Serialize + ?Sized>(value: &T) -> Result<(), PolicyError> {
    let json = serde_json::to_value(value)
        .map_err(|e| PolicyError::new("", format!("cannot be encoded: {e}")))?;
    check_json(&json)
}

/// `s` with every U+0000 replaced by U+FFFD (borrowed when nothing changes).
pub fn replace_str(s: &str) -> Cow<'_, str> {
    if storable(s) {
        Cow::Borrowed(s)
    } else {
        Cow::Owned(s.replace(UNSTORABLE, "\u{FFFD}"))
    }
}

/// Replaces every U+0000 in `value`'s strings and keys by U+FFFD. Returns the paths of the
/// fields it changed (empty when nothing changed).
pub fn replace_json(value: &mut Value) -> Vec<String> {
    let mut changed = Vec::new();
    replace_at(value, "", &mut changed);
    changed
}

fn replace_at(value: &mut Value, path: &str, changed: &mut Vec<String>) {
    match value {
        Value::String(s) => {
            if let Cow::Owned(r) = replace_str(s) {
                *s = r;
                changed.push(path.to_string());
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                replace_at(v, &format!("{path}[{i}]"), changed);
            }
        }
        Value::Object(map) => {
            if map.keys().any(|k| !storable(k)) {
                let old = std::mem::take(map);
                *map = old
                    .into_iter()
                    .map(|(k, v)| (replace_str(&k).into_owned(), v))
                    .collect();
                changed.push(path.to_string());
            }
            for (k, v) in map.iter_mut() {
                replace_at(v, &join_path(path, &key_segment(k)), changed);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// A key as a path segment: plain when it reads as one, quoted otherwise
/// (`metadata.labels["app.kubernetes.io/name"]`).
fn key_segment(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        k.to_string()
    } else {
        let quoted = serde_json::to_string(k).unwrap_or_else(|_| format!("\"{k}\""));
        format!("[{quoted}]")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_name_the_field() {
        let v = json!({"spec": {"windows": [{"name": "ok"}, {"name": "a\u{0}b"}]}});
        assert_eq!(check_json(&v).unwrap_err().path, "spec.windows[1].name");
        let v = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x\u{0}"}}});
        assert_eq!(
            check_json(&v).unwrap_err().path,
            "metadata.labels[\"app.kubernetes.io/name\"]"
        );
        let v = json!({"labels": {"a\u{0}": "x"}});
        let e = check_json(&v).unwrap_err();
        assert_eq!(e.path, "labels");
        assert!(e.message.contains("key"), "{e}");
        assert_eq!(check_json(&json!(["\u{0}"])).unwrap_err().path, "[0]");
        let fine = json!({"a": ["\u{1}\u{7f}\u{1F600}", 1, null, {"b\n": "\u{FFFF}"}]});
        assert!(check_json(&fine).is_ok());
    }

    #[test]
    fn replacement_keeps_everything_else() {
        assert_eq!(replace_str("a\u{0}b\u{0}"), "a\u{FFFD}b\u{FFFD}");
        assert!(matches!(replace_str("plain"), Cow::Borrowed(_)));
        let mut v = json!({"m": "bad \u{0} byte", "l": ["ok", "\u{0}"], "k\u{0}": "v"});
        let mut changed = replace_json(&mut v);
        changed.sort();
        assert_eq!(changed, ["", "l[1]", "m"]);
        assert_eq!(v["m"], "bad \u{FFFD} byte");
        assert_eq!(v["k\u{FFFD}"], "v");
        assert!(check_json(&v).is_ok());
        assert!(replace_json(&mut v).is_empty());
    }
}
