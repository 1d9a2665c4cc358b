//! YAML in and out for everything fleetgate reads from people (gate manifests, REST bodies,
//! the CLI's files) and writes for them (`-o yaml`): one set of parser limits and one error
//! shape, a field path plus a message ending "at line L, column C".
//!
//! The library is serde-saphyr (serde_yaml is deprecated and unmaintained). Compared with the
//! two serde_yaml forks:
//! - serde_yaml_ng still parses with `unsafe-libyaml`, the C-to-Rust translation archived with
//!   serde_yaml; serde_norway parses with its own fork of it. Both keep serde_yaml's fixed
//!   guard against alias bombs (an error after replaying 100 times the document's events) and
//!   its messages, but nothing can be tuned.
//! - serde-saphyr is actively released, forbids unsafe code, its parser is fuzzed, and it
//!   enforces configurable budgets (events, nodes, depth, anchors, aliases, alias replay), so
//!   a billion-laughs document stops early with an error saying which budget broke. Errors
//!   carry line and column; it plugs into serde_path_to_error through
//!   `with_deserializer_from_str`. It has no `Value` type of its own: we use serde_json's.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::PolicyError;

/// The most events that aliases may replay in one input. Real manifests share a window list
/// or a label map at most; a billion-laughs document needs millions. serde-saphyr's default
/// (1,000,000) already stops one, but only after ~100 ms of work per request.
const MAX_REPLAYED_EVENTS: usize = 10_000;

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        alias_limits: serde_saphyr::alias_limits! { max_total_replayed_events: MAX_REPLAYED_EVENTS },
        // One-line messages: they end up in JSON error bodies and CLI output.
        with_snippet: false,
    }
}

/// Parses one YAML (or JSON) document into `T`. Wrong types and unknown fields name the
/// field path (`spec.windows[0].kind`); syntax errors and broken limits have an empty path.
pub fn from_str<T: DeserializeOwned>(text: &str) -> Result<T, PolicyError> {
    let mut path = String::new();
    serde_saphyr::with_deserializer_from_str_with_options(text, options(), |de| {
        serde_path_to_error::deserialize(de).map_err(|e| {
            path = path_of(e.path());
            e.into_inner()
        })
    })
    .map_err(|e| PolicyError::new(path, message(&e)))
}

/// [`from_str`] over bytes (an HTTP body); input that is not UTF-8 is an
/// error about the whole document.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, PolicyError> {
    let text = std::str::from_utf8(bytes).map_err(|e| PolicyError::new("", e.to_string()))?;
    from_str(text)
}

/// Parses a stream of `---`-separated documents, skipping empty ones.
pub fn from_str_documents<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, PolicyError> {
    serde_saphyr::from_str_multiple_with_options(text, options())
        .map_err(|e| PolicyError::new("", message(&e)))
}

/// Renders `value` as a YAML document.
pub fn to_string<T: Serialize>(value: &T) -> Result<String, PolicyError> {
    serde_saphyr::to_string(value).map_err(|e| PolicyError::new("", e.to_string()))
}

/// serde_path_to_error prints the root as `.`; we print it as the empty path.
pub(crate) fn path_of(path: &serde_path_to_error::Path) -> String {
    let p = path.to_string();
    if p == "." { String::new() } else { p }
}

fn message(e: &serde_saphyr::Error) -> String {
    e.without_snippet().to_string()
}

/// An absent list or map may be written as null (`windows:` with nothing after it), as the
/// Kubernetes API and serde_yaml allowed; serde-saphyr and serde_json would reject it.
pub(crate) fn null_as_empty<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        #[allow(dead_code)]
        items: Vec<Item>,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Item {
        #[allow(dead_code)]
        n: u32,
    }

    #[test]
    fn errors_name_the_path_line_and_column() {
        let e = from_str::<Doc>("items:\n  - n: 1\n  - n: x\n").unwrap_err();
        assert_eq!(e.path, "items[1].n");
        assert!(e.message.contains("line 3, column 8"), "{e}");
        let e = from_str::<Doc>("items: [\n").unwrap_err();
        assert_eq!(e.path, "items");
        assert!(e.message.contains("line "), "{e}");
        assert!(!e.message.contains('\n'), "one line: {e}");
    }

    /// Nine levels of nine aliases: 9^9 (387 million) scalars once expanded, from under 1 KiB.
    #[test]
    fn alias_bomb_is_rejected_with_a_clear_error() {
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
        for i in 1..=9 {
            let p = i - 1;
            let refs = vec![format!("*a{p}"); 9].join(", ");
            text.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        // The path is where the limit broke, inside the expansion.
        let e = from_str::<serde_json::Value>(&text).unwrap_err();
        assert!(e.message.contains("alias replay limit"), "{e}");
        let e = from_str_documents::<serde_json::Value>(&text).unwrap_err();
        assert!(e.message.contains("alias replay limit"), "{e}");
    }

    #[test]
    fn documents_round_trip() {
        let docs: Vec<serde_json::Value> =
            from_str_documents("a: 1\n---\n---\nb: [x, 'yes']\n").unwrap();
        assert_eq!(
            docs,
            [
                serde_json::json!({"a": 1}),
                serde_json::json!({"b": ["x", "yes"]})
            ]
        );
        let back: serde_json::Value = from_str(&to_string(&docs[1]).unwrap()).unwrap();
        assert_eq!(back, docs[1]);
    }
}
