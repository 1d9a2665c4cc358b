//! The largest gate the budgets allow (`fleetgate_policy::budgets`), for the tests and
//! benchmarks that need a snapshot at its budget: a manifest with its feed windows and its
//! selectors at their term and value budgets, padded to a given size, and the pieces of its
//! feed occurrences (the first instant, the longest summary). The spoke's persistence tests and
//! bench build their snapshot from it themselves; `fleetgate-scale snapshot` has the hub build
//! it from its database. Free text comes from a [`Text`]: the same letter over and over
//! (gzip's best case) or pseudo-random letters (close to its worst).

use chrono::{DateTime, TimeZone, Utc};
use fleetgate_policy::budgets::{
    CALENDAR_MAX_OCCURRENCES, GATE_MANIFEST_MAX_BYTES, GATE_MAX_OCCURRENCES,
    OCCURRENCE_SUMMARY_MAX_BYTES, SELECTOR_MAX_TERMS, SELECTOR_MAX_VALUES,
};
use serde_json::{Value, json};

/// Where the free text of the largest gate comes from.
pub enum Text {
    /// One letter repeated.
    Repeated(char),
    /// Letters and digits from a xorshift generator (deterministic).
    Random(u64),
}

impl Text {
    /// `n` characters (ASCII, so `n` bytes), starting with a letter (label values must).
    pub fn take(&mut self, n: usize) -> String {
        match self {
            Text::Repeated(c) => c.to_string().repeat(n),
            Text::Random(x) => (0..n)
                .map(|i| {
                    *x ^= *x << 13;
                    *x ^= *x >> 7;
                    *x ^= *x << 17;
                    let set: &[u8] = if i == 0 {
                        b"abcdefghijklmnopqrstuvwxyz"
                    } else {
                        b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                    };
                    char::from(set[(*x % set.len() as u64) as usize])
                })
                .collect(),
        }
    }
}

/// Feed windows (`feed-0`, `feed-1`, …) of the largest gate: as many as its occurrence
/// budget holds at the budget of one feed.
pub const FEED_WINDOWS: usize = GATE_MAX_OCCURRENCES / CALENDAR_MAX_OCCURRENCES;

/// Gate `name` over cluster `cluster` at every manifest budget: [`FEED_WINDOWS`] deny feed
/// windows, a target selector of `SELECTOR_MAX_TERMS` terms of `SELECTOR_MAX_VALUES` values,
/// and an annotation padding its JSON to exactly `manifest_bytes` (at most
/// `GATE_MANIFEST_MAX_BYTES`). Panics unless the gate is valid.
pub fn largest_manifest(
    name: &str,
    cluster: &str,
    manifest_bytes: usize,
    text: &mut Text,
) -> Value {
    assert!(
        manifest_bytes <= GATE_MANIFEST_MAX_BYTES,
        "{manifest_bytes}"
    );
    let windows: Vec<_> = (0..FEED_WINDOWS)
        .map(|i| {
            json!({"name": format!("feed-{i}"), "kind": "deny",
                   "calendar": {"url": format!("https://calendar.example.com/{name}/{i}.ics")}})
        })
        .collect();
    let expressions: Vec<_> = (0..SELECTOR_MAX_TERMS)
        .map(|t| {
            let values: Vec<String> = (0..SELECTOR_MAX_VALUES)
                .map(|v| format!("{t:02}-{v:03}-{}", text.take(30)))
                .collect();
            json!({"key": format!("example.com/budget-{t}"), "operator": "NotIn", "values": values})
        })
        .collect();
    let mut manifest = json!({
        "apiVersion": "fleetgate.io/v1", "kind": "Gate",
        "metadata": {"name": name, "annotations": {"pad": ""}},
        "spec": {
            "clusters": {"names": [cluster]},
            "targets": {"kinds": ["Kustomization"], "selector": {"matchExpressions": expressions}},
            "mode": "suspend", "default": "open",
            "windows": windows,
        }
    });
    let used = manifest.to_string().len();
    assert!(used < manifest_bytes, "selectors alone are {used} bytes");
    manifest["metadata"]["annotations"]["pad"] = json!(text.take(manifest_bytes - used));
    assert_eq!(manifest.to_string().len(), manifest_bytes);
    fleetgate_policy::parse_gate_json(manifest.clone())
        .and_then(|g| g.validate())
        .expect("the largest gate is within its budgets");
    manifest
}

/// The first occurrence of the largest gate's feeds: far ahead, so none has passed.
pub fn first_occurrence() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2099, 1, 1, 0, 0, 0).unwrap()
}

/// An occurrence summary of exactly `OCCURRENCE_SUMMARY_MAX_BYTES`, ending in `…` as the hub
/// cuts a longer one.
pub fn longest_summary(text: &mut Text) -> String {
    let summary = format!(
        "{}…",
        text.take(OCCURRENCE_SUMMARY_MAX_BYTES - '…'.len_utf8())
    );
    assert_eq!(summary.len(), OCCURRENCE_SUMMARY_MAX_BYTES);
    summary
}
