//! RRULE windows: wall-clock expansion, COUNT and UNTIL, rules anchored years back (expanded
//! from a re-anchored DTSTART for speed) still on the original grid, and errors.

mod support;

use chrono::Duration;
use fleetgate_policy::GateState::{Closed, Open};
use support::{changes, gate, utc};

fn rrule_gate(rule: &str, dtstart: &str, duration: &str) -> fleetgate_policy::CompiledGate {
    gate(&format!(
        "  default: closed\n  windows:\n    - {{name: r, kind: allow, rrule: '{rule}', dtstart: '{dtstart}', duration: {duration}}}\n"
    ))
}

#[test]
fn hourly_rule_from_years_ago_stays_on_its_grid() {
    // Every 7 hours from 2020-01-01 00:13: instance k at dtstart + 7k hours.
    let g = rrule_gate("FREQ=HOURLY;INTERVAL=7", "2020-01-01T00:13:00", "10m");
    let dtstart = utc("2020-01-01 00:13");
    let from = utc("2026-11-23 00:00");
    let hours = (from - dtstart).num_hours();
    let first = dtstart + Duration::hours((hours / 7 + 1) * 7);
    let expected: Vec<_> = (0..4)
        .flat_map(|k| {
            let s = first + Duration::hours(7 * k);
            [(s, Open), (s + Duration::minutes(10), Closed)]
        })
        .filter(|(t, _)| *t <= utc("2026-11-24 04:00"))
        .collect();
    assert!(expected.len() >= 6);
    assert_eq!(
        changes(&g, "2026-11-23 00:00", "2026-11-24 04:00", &[]),
        expected
    );
}

#[test]
fn biweekly_rule_keeps_week_parity() {
    // Every other week on Mon and Fri from Mon 2024-01-01: 2026-11-23 is 151 weeks later (odd),
    // so that week is skipped and 2026-11-30 (152 weeks) is on.
    let g = rrule_gate(
        "FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,FR",
        "2024-01-01T09:00:00",
        "1h",
    );
    assert_eq!(
        changes(&g, "2026-11-22 00:00", "2026-12-06 00:00", &[]),
        vec![
            (utc("2026-11-30 09:00"), Open),
            (utc("2026-11-30 10:00"), Closed),
            (utc("2026-12-04 09:00"), Open),
            (utc("2026-12-04 10:00"), Closed),
        ]
    );
}

#[test]
fn count_and_until_limit_instances() {
    let g = rrule_gate("FREQ=DAILY;COUNT=2", "2026-11-23T09:00:00", "1h");
    assert_eq!(
        changes(&g, "2026-11-20 00:00", "2026-12-01 00:00", &[]).len(),
        4
    );
    // UNTIL is wall-clock time in the window's zone, with or without a trailing Z.
    for until in ["20261124T090000", "20261124T090000Z"] {
        let g = gate(&format!(
            "  default: closed\n  timeZone: Europe/Berlin\n  windows:\n    - {{name: r, kind: allow, rrule: 'FREQ=DAILY;UNTIL={until}', dtstart: '2026-11-23T09:00:00', duration: 1h}}\n"
        ));
        assert_eq!(
            changes(&g, "2026-11-20 00:00", "2026-12-01 00:00", &[]),
            vec![
                (utc("2026-11-23 08:00"), Open),
                (utc("2026-11-23 09:00"), Closed),
                (utc("2026-11-24 08:00"), Open),
                (utc("2026-11-24 09:00"), Closed)
            ],
            "UNTIL={until}"
        );
    }
}

#[test]
fn monthly_second_tuesday() {
    let g = rrule_gate("RRULE:FREQ=MONTHLY;BYDAY=2TU", "2026-01-01T22:00:00", "4h");
    let opens: Vec<_> = g
        .transitions(utc("2026-01-01 00:00"), utc("2027-01-01 00:00"), &[])
        .into_iter()
        .filter(|t| t.state == Open)
        .map(|t| t.at.format("%m-%d").to_string())
        .collect();
    assert_eq!(
        opens,
        [
            "01-13", "02-10", "03-10", "04-14", "05-12", "06-09", "07-14", "08-11", "09-08",
            "10-13", "11-10", "12-08"
        ]
    );
}

#[test]
fn rrule_errors() {
    let text = |rule: &str| {
        format!(
            "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{names: [a]}}\n  windows:\n    - {{name: r, kind: allow, rrule: '{rule}', dtstart: '2026-01-01T00:00:00', duration: 1h}}\n"
        )
    };
    for rule in [
        "FREQ=WEEKLY;BYDAY=XX",
        "DTSTART:20260101T000000Z;FREQ=DAILY",
        "BYDAY=MO",
        "FREQ=DAILY;INTERVAL=0",
        "FREQ=SECONDLY",
        "FREQ=DAILY;COUNT=20000",
    ] {
        let e = fleetgate_policy::parse_gate(&text(rule))
            .unwrap()
            .validate()
            .expect_err(rule);
        assert_eq!(e.path, "spec.windows[0].rrule", "{rule}: {e}");
        assert!(
            e.message.starts_with(&format!("invalid rrule '{rule}'")),
            "{rule}: {e}"
        );
    }
}

#[test]
fn rule_ended_long_before_the_query_is_cheap_and_empty() {
    // UNTIL in 2021 with a minutely rule: nothing in 2026, found without walking five years.
    let g = rrule_gate(
        "FREQ=MINUTELY;INTERVAL=30;UNTIL=20210101T000000",
        "2020-01-01T00:00:00",
        "10m",
    );
    assert!(changes(&g, "2026-01-01 00:00", "2026-02-01 00:00", &[]).is_empty());
    assert_eq!(
        g.evaluate(utc("2026-01-01 00:00"), &[]).next_transition,
        None
    );
}
