//! The largest snapshot the budgets allow: gates at every budget at once (the tests crate's
//! [`largest_manifest`] at `GATE_MANIFEST_MAX_BYTES`, feed windows at their occurrence budget
//! with summaries at theirs), as many as `SNAPSHOT_MAX_BYTES` holds. Its free text comes from
//! a [`Text`]: the same letter over and over (gzip's best case) or pseudo-random letters
//! (close to its worst: what is persisted then takes many ConfigMaps).

use chrono::Duration;
use fleetgate_policy::budgets::{
    CALENDAR_MAX_OCCURRENCES, GATE_MANIFEST_MAX_BYTES, GATE_RULE_MAX_BYTES, SNAPSHOT_MAX_BYTES,
};
use fleetgate_proto::time::to_timestamp;
use fleetgate_proto::v1 as pb;
pub use fleetgate_tests::largest::Text;
use fleetgate_tests::largest::{FEED_WINDOWS, first_occurrence, largest_manifest, longest_summary};
use prost::Message;

use super::{CLUSTER, gate_named, snapshot};

/// One gate at every budget: its manifest JSON exactly `GATE_MANIFEST_MAX_BYTES`, and
/// `GATE_MAX_OCCURRENCES` feed occurrences with the longest summaries.
pub fn largest_gate(name: &str, text: &mut Text) -> pb::GateRule {
    let manifest_json = largest_manifest(name, CLUSTER, GATE_MANIFEST_MAX_BYTES, text).to_string();
    let first = first_occurrence();
    let calendars = (0..FEED_WINDOWS)
        .map(|i| pb::CalendarOccurrences {
            window: format!("feed-{i}"),
            occurrences: (0..CALENDAR_MAX_OCCURRENCES)
                .map(|n| {
                    let start = first + Duration::hours(2 * i64::try_from(n).unwrap());
                    pb::CalendarOccurrence {
                        start: Some(to_timestamp(start)),
                        end: Some(to_timestamp(start + Duration::minutes(59))),
                        summary: longest_summary(text),
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
