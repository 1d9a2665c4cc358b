//! The largest snapshot the budgets allow: gates at every budget at once (a manifest of
//! `GATE_MANIFEST_MAX_BYTES` with selectors at their term and value budgets, feed windows at
//! their occurrence budget with summaries at theirs), as many as `SNAPSHOT_MAX_BYTES` holds.
//! Its free text comes from a [`Text`]: the same letter over and over (gzip's best case) or
//! pseudo-random letters (close to its worst: what is persisted then takes many ConfigMaps).

use chrono::{Duration, TimeZone, Utc};
use fleetgate_policy::budgets::{
    CALENDAR_MAX_OCCURRENCES, GATE_MANIFEST_MAX_BYTES, GATE_MAX_OCCURRENCES, GATE_RULE_MAX_BYTES,
    OCCURRENCE_SUMMARY_MAX_BYTES, SELECTOR_MAX_TERMS, SELECTOR_MAX_VALUES, SNAPSHOT_MAX_BYTES,
};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
use prost::Message;
use serde_json::json;

use super::{CLUSTER, gate_named, snapshot};

/// Where the free text of the largest snapshot comes from.
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

/// One gate at every budget: its manifest JSON exactly `GATE_MANIFEST_MAX_BYTES`, and
/// `GATE_MAX_OCCURRENCES` feed occurrences with the longest summaries.
pub fn largest_gate(name: &str, text: &mut Text) -> pb::GateRule {
    let feeds = GATE_MAX_OCCURRENCES / CALENDAR_MAX_OCCURRENCES;
    let windows: Vec<_> = (0..feeds)
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
            "clusters": {"names": [CLUSTER]},
            "targets": {"kinds": ["Kustomization"], "selector": {"matchExpressions": expressions}},
            "mode": "suspend", "default": "open",
            "windows": windows,
        }
    });
    let used = manifest.to_string().len();
    assert!(
        used < GATE_MANIFEST_MAX_BYTES,
        "selectors alone are {used} bytes"
    );
    manifest["metadata"]["annotations"]["pad"] = json!(text.take(GATE_MANIFEST_MAX_BYTES - used));
    let manifest_json = manifest.to_string();
    assert_eq!(manifest_json.len(), GATE_MANIFEST_MAX_BYTES);
    fleetgate_policy::parse_gate_json(manifest.clone())
        .and_then(|g| g.validate())
        .expect("the largest gate is within its budgets");

    let first = Utc.with_ymd_and_hms(2099, 1, 1, 0, 0, 0).unwrap();
    let calendars = (0..feeds)
        .map(|i| pb::CalendarOccurrences {
            window: format!("feed-{i}"),
            occurrences: (0..CALENDAR_MAX_OCCURRENCES)
                .map(|n| {
                    let start = first + Duration::hours(2 * i64::try_from(n).unwrap());
                    let summary = format!(
                        "{}…",
                        text.take(OCCURRENCE_SUMMARY_MAX_BYTES - '…'.len_utf8())
                    );
                    assert_eq!(summary.len(), OCCURRENCE_SUMMARY_MAX_BYTES);
                    pb::CalendarOccurrence {
                        start: Some(to_timestamp(start)),
                        end: Some(to_timestamp(start + Duration::minutes(59))),
                        summary,
                    }
                })
                .collect(),
            stale_at: Some(to_timestamp(first + Duration::days(3650))),
        })
        .collect();
    let rule = pb::GateRule {
        name: name.into(),
        version: u64::MAX,
        manifest_json,
        release: None,
        waiting: None,
        opening_fence: None,
        calendars,
    };
    assert!(
        rule.encoded_len() <= GATE_RULE_MAX_BYTES,
        "{} > {GATE_RULE_MAX_BYTES}",
        rule.encoded_len()
    );
    rule
}

/// Snapshot `revision` with as many largest gates as `SNAPSHOT_MAX_BYTES` holds, and a gate
/// `close-apps` closing the Kustomizations named `closes` (enforcing it shows the snapshot
/// was decoded).
pub fn largest_snapshot(revision: u64, text: &mut Text, closes: &[&str]) -> pb::Snapshot {
    let mut snap = snapshot(revision, vec![], vec![]);
    let mut i = 0;
    loop {
        let g = largest_gate(&format!("big-{i}"), text);
        // An entry in `gates` costs its length and a few bytes of tag and length prefix.
        if snap.encoded_len() + g.encoded_len() + 8 > SNAPSHOT_MAX_BYTES {
            break;
        }
        snap.gates.push(g);
        i += 1;
    }
    snap.gates
        .push(gate_named("close-apps", "suspend", closes, "closed"));
    let size = snap.encoded_len();
    assert!(size <= SNAPSHOT_MAX_BYTES + 4096, "{size}");
    assert!(size > 4 * 1024 * 1024, "over tonic's default 4 MiB: {size}");
    snap
}
