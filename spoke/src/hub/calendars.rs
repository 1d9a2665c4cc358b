//! The occurrences of a gate's `calendar.url` windows as the hub sends them
//! (`GateRule.calendars`): the hub fetches the feed and expands its last good
//! copy over a bounded horizon; the spoke keeps them in its persisted
//! snapshot and evaluates the windows with the same policy code, so they
//! open and close on time while the hub is away.

use fleetgate_policy::{FeedOccurrences, Occurrence};
use fleetgate_proto::{time::from_timestamp, v1 as pb};

use super::proto_time::required_time;
use crate::error::Result;

/// The hub's expanded feeds of gate `gate` (`gates[i]`); malformed times are an `InvalidSnapshot`.
pub fn from_proto(
    gate: &str,
    i: usize,
    msg: Vec<pb::CalendarOccurrences>,
) -> Result<Vec<FeedOccurrences>> {
    msg.into_iter()
        .enumerate()
        .map(|(j, c)| {
            let path = format!("gates[{i}] ({gate}).calendars[{j}]");
            let occurrences = c
                .occurrences
                .into_iter()
                .enumerate()
                .map(|(k, o)| {
                    Ok(Occurrence {
                        start: required_time(
                            o.start.as_ref(),
                            &format!("{path}.occurrences[{k}].start"),
                        )?,
                        end: required_time(
                            o.end.as_ref(),
                            &format!("{path}.occurrences[{k}].end"),
                        )?,
                        summary: o.summary.into(),
                    })
                })
                .collect::<Result<Vec<_>>>()?;
            Ok(FeedOccurrences {
                window: c.window,
                occurrences,
                stale_at: c.stale_at.as_ref().and_then(from_timestamp),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Duration, Utc};
    use fleetgate_proto::time::to_timestamp;

    use super::*;
    use crate::hub::snapshot::{CompiledSnapshot, Snapshot};

    fn occurrence(start: DateTime<Utc>, end: DateTime<Utc>) -> pb::CalendarOccurrence {
        pb::CalendarOccurrence {
            start: Some(to_timestamp(start)),
            end: Some(to_timestamp(end)),
            summary: "Freeze".into(),
        }
    }

    fn snapshot(calendars: Vec<pb::CalendarOccurrences>) -> pb::Snapshot {
        let manifest = serde_json::json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate", "metadata": {"name": "g"},
            "spec": {"clusters": {"names": ["c1"]}, "targets": {"kinds": ["Kustomization"]},
                     "default": "open",
                     "windows": [{"name": "cab", "kind": "deny",
                                  "calendar": {"url": "https://cal.example.com/cab.ics", "onStale": "closed"}}]}
        });
        pb::Snapshot {
            revision: 3,
            cluster: "c1".into(),
            gates: vec![pb::GateRule {
                name: "g".into(),
                version: 1,
                manifest_json: manifest.to_string(),
                calendars,
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    #[test]
    fn hub_feeds_close_on_time_after_a_restart() {
        let t = Utc::now();
        let (start, end) = (t + Duration::hours(1), t + Duration::hours(2));
        let msg = snapshot(vec![pb::CalendarOccurrences {
            window: "cab".into(),
            occurrences: vec![occurrence(start, end)],
            stale_at: Some(to_timestamp(t + Duration::days(3))),
        }]);
        let snap = Snapshot::from_proto(msg).unwrap();
        // As persisted and read back after a restart without the hub.
        let json = serde_json::to_string(&snap).unwrap();
        let back: Snapshot = serde_json::from_str(&json).unwrap();
        assert_eq!(back, snap);
        let compiled = CompiledSnapshot::compile(back).unwrap();
        let before = compiled.evaluate(t);
        assert!(before.gates[0].open, "{:?}", before.gates[0]);
        assert_eq!(before.next_transition, Some(start));
        let during = compiled.evaluate(start + Duration::minutes(30));
        assert!(!during.gates[0].open, "the feed's event closes it");
        assert_eq!(during.next_transition, Some(end));
        assert!(compiled.evaluate(end).gates[0].open);
        // The copy goes stale at stale_at: onStale: closed closes the gate.
        assert!(!compiled.evaluate(t + Duration::days(4)).gates[0].open);
    }

    #[test]
    fn never_fetched_feeds_count_as_stale_and_bad_times_are_named() {
        let compiled =
            CompiledSnapshot::compile(Snapshot::from_proto(snapshot(vec![])).unwrap()).unwrap();
        assert!(
            !compiled.evaluate(Utc::now()).gates[0].open,
            "onStale: closed with no copy at all"
        );
        let bad = snapshot(vec![pb::CalendarOccurrences {
            window: "cab".into(),
            occurrences: vec![pb::CalendarOccurrence::default()],
            stale_at: None,
        }]);
        let err = Snapshot::from_proto(bad).unwrap_err().to_string();
        assert!(
            err.contains("gates[0] (g).calendars[0].occurrences[0].start"),
            "{err}"
        );
    }
}
