//! DST behaviour: gaps move starts later by the gap length, overlaps take the earlier instant,
//! durations are elapsed time. Zones with 1-hour, 30-minute, odd-offset and skipped-day changes.

mod support;

use chrono::NaiveDateTime;
use chrono_tz::Tz;
use fleetgate_policy::GateState::{Closed, Open};
use fleetgate_policy::resolve_local;
use support::{changes, gate, utc};

fn local(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
}

#[test]
fn resolve_local_table() {
    let cases: &[(&str, &str, &str, &str)] = &[
        // zone, local wall time, expected UTC, why
        (
            "Europe/Berlin",
            "2026-03-29 01:30",
            "2026-03-29 00:30",
            "before the gap, CET",
        ),
        (
            "Europe/Berlin",
            "2026-03-29 02:00",
            "2026-03-29 01:00",
            "gap start → 03:00 CEST",
        ),
        (
            "Europe/Berlin",
            "2026-03-29 02:30",
            "2026-03-29 01:30",
            "gap → 03:30 CEST",
        ),
        (
            "Europe/Berlin",
            "2026-03-29 03:00",
            "2026-03-29 01:00",
            "after the gap, CEST",
        ),
        (
            "Europe/Berlin",
            "2026-10-25 02:30",
            "2026-10-25 00:30",
            "overlap → earlier (CEST)",
        ),
        (
            "Europe/Berlin",
            "2026-10-25 03:00",
            "2026-10-25 02:00",
            "after the overlap, CET",
        ),
        (
            "America/New_York",
            "2026-03-08 02:30",
            "2026-03-08 07:30",
            "gap → 03:30 EDT",
        ),
        (
            "America/New_York",
            "2026-11-01 01:30",
            "2026-11-01 05:30",
            "overlap → 01:30 EDT",
        ),
        (
            "America/New_York",
            "2026-11-01 02:30",
            "2026-11-01 07:30",
            "after the overlap, EST",
        ),
        (
            "Australia/Lord_Howe",
            "2026-10-04 02:15",
            "2026-10-03 15:45",
            "30-min gap → 02:45 +11",
        ),
        (
            "Australia/Lord_Howe",
            "2026-04-05 01:45",
            "2026-04-04 14:45",
            "30-min overlap → +11",
        ),
        (
            "Australia/Lord_Howe",
            "2026-04-05 02:00",
            "2026-04-04 15:30",
            "after the overlap, +10:30",
        ),
        (
            "Asia/Kathmandu",
            "2026-06-01 08:00",
            "2026-06-01 02:15",
            "+05:45, no DST",
        ),
        (
            "Pacific/Apia",
            "2011-12-29 12:00",
            "2011-12-29 22:00",
            "the day before the skip, -10",
        ),
        (
            "Pacific/Apia",
            "2011-12-30 12:00",
            "2011-12-30 22:00",
            "skipped day → moved 24h later",
        ),
        (
            "Pacific/Apia",
            "2011-12-31 12:00",
            "2011-12-30 22:00",
            "after the skip, +14",
        ),
    ];
    for (zone, wall, expected, why) in cases {
        let tz: Tz = zone.parse().unwrap();
        assert_eq!(
            resolve_local(tz, local(wall)),
            utc(expected),
            "{zone} {wall}: {why}"
        );
    }
}

#[test]
fn berlin_cron_start_in_gap_moves_later_and_keeps_elapsed_duration() {
    let g = gate(
        "  default: open\n  timeZone: Europe/Berlin\n  windows:\n    - {name: night, kind: deny, schedule: '30 2 * * *', duration: 1h}\n",
    );
    // 2026-03-29: 02:30 does not exist → 03:30 CEST (01:30Z) for one elapsed hour.
    assert_eq!(
        changes(&g, "2026-03-28 12:00", "2026-03-29 12:00", &[]),
        vec![
            (utc("2026-03-29 01:30"), Closed),
            (utc("2026-03-29 02:30"), Open)
        ]
    );
    // 2026-10-25: 02:30 happens twice → the first (CEST, 00:30Z), one elapsed hour.
    assert_eq!(
        changes(&g, "2026-10-24 12:00", "2026-10-25 12:00", &[]),
        vec![
            (utc("2026-10-25 00:30"), Closed),
            (utc("2026-10-25 01:30"), Open)
        ]
    );
    // An ordinary day: 02:30 CET = 01:30Z.
    assert_eq!(
        changes(&g, "2026-11-01 12:00", "2026-11-02 12:00", &[]),
        vec![
            (utc("2026-11-02 01:30"), Closed),
            (utc("2026-11-02 02:30"), Open)
        ]
    );
}

#[test]
fn new_york_weekly_window_spanning_the_change_is_elapsed_time() {
    // Sat 22:00 EST for 6h across the spring-forward night ends 05:00 EDT (09:00Z), not 04:00.
    let g = gate(
        "  default: open\n  timeZone: America/New_York\n  windows:\n    - {name: maint, kind: deny, schedule: '0 22 * * SAT', duration: 6h}\n",
    );
    assert_eq!(
        changes(&g, "2026-03-07 12:00", "2026-03-08 12:00", &[]),
        vec![
            (utc("2026-03-08 03:00"), Closed),
            (utc("2026-03-08 09:00"), Open)
        ]
    );
    let e = g.evaluate(utc("2026-03-08 04:00"), &[]);
    assert_eq!(
        e.reason,
        "deny window 'maint' until Sun 2026-03-08 05:00 EDT"
    );
}

#[test]
fn lord_howe_half_hour_gap_and_overlap() {
    let g = gate(
        "  default: closed\n  timeZone: Australia/Lord_Howe\n  windows:\n    - {name: w, kind: allow, schedule: '15 2 * * *', duration: 30m}\n    - {name: v, kind: allow, schedule: '45 1 * * *', duration: 10m}\n",
    );
    // 2026-10-04 01:45 is still +10:30 (15:15Z on the 3rd); 02:15 is in the 02:00→02:30 gap
    // → 02:45 (+11) = 15:45Z.
    assert_eq!(
        changes(&g, "2026-10-03 15:00", "2026-10-03 17:00", &[]),
        vec![
            (utc("2026-10-03 15:15"), Open),
            (utc("2026-10-03 15:25"), Closed),
            (utc("2026-10-03 15:45"), Open),
            (utc("2026-10-03 16:15"), Closed)
        ]
    );
    // 2026-04-05 01:45 happens twice (+11, then +10:30) → the earlier, 14:45Z on the 4th;
    // 02:15 (+10:30) = 15:45Z.
    assert_eq!(
        changes(&g, "2026-04-04 14:00", "2026-04-04 17:00", &[]),
        vec![
            (utc("2026-04-04 14:45"), Open),
            (utc("2026-04-04 14:55"), Closed),
            (utc("2026-04-04 15:45"), Open),
            (utc("2026-04-04 16:15"), Closed)
        ]
    );
}

#[test]
fn kathmandu_odd_offset_and_reason_zone() {
    let g = gate(
        "  default: closed\n  timeZone: Asia/Kathmandu\n  windows:\n    - {name: office, kind: allow, schedule: '0 9 * * MON-FRI', duration: 8h}\n",
    );
    assert_eq!(
        changes(&g, "2026-06-01 00:00", "2026-06-02 00:00", &[]),
        vec![
            (utc("2026-06-01 03:15"), Open),
            (utc("2026-06-01 11:15"), Closed)
        ]
    );
    let e = g.evaluate(utc("2026-06-01 04:00"), &[]);
    assert_eq!(e.state, Open);
    assert_eq!(e.reason, "allow window 'office' until 17:00 +0545");
    assert_eq!(e.next_transition, Some(utc("2026-06-01 11:15")));
}

#[test]
fn apia_skipped_day() {
    // Daily 09:00 for 2h. 2011-12-30 did not exist in Apia: its 09:00 maps onto the same
    // instant as 2011-12-31 09:00 (+14), so there is one occurrence, not two.
    let g = gate(
        "  default: closed\n  timeZone: Pacific/Apia\n  windows:\n    - {name: daily, kind: allow, schedule: '0 9 * * *', duration: 2h}\n",
    );
    assert_eq!(
        changes(&g, "2011-12-29 00:00", "2012-01-01 00:00", &[]),
        vec![
            (utc("2011-12-29 19:00"), Open),
            (utc("2011-12-29 21:00"), Closed),
            (utc("2011-12-30 19:00"), Open),
            (utc("2011-12-30 21:00"), Closed),
            (utc("2011-12-31 19:00"), Open),
            (utc("2011-12-31 21:00"), Closed)
        ]
    );
    // A dated freeze starting on the skipped day starts 24h later than written.
    let g = gate(
        "  timeZone: Pacific/Apia\n  windows:\n    - {name: f, kind: deny, start: '2011-12-30T12:00:00', end: '2012-01-02T00:00:00'}\n",
    );
    assert_eq!(
        changes(&g, "2011-12-29 00:00", "2012-01-03 00:00", &[]),
        vec![
            (utc("2011-12-30 22:00"), Closed),
            (utc("2012-01-01 10:00"), Open)
        ]
    );
}

#[test]
fn rrule_instances_follow_the_same_dst_rule() {
    // Daily at 02:30 Berlin: on 2026-03-29 the instance moves to 03:30 CEST (01:30Z).
    let g = gate(
        "  default: open\n  timeZone: Europe/Berlin\n  windows:\n    - {name: r, kind: deny, rrule: 'FREQ=DAILY', dtstart: '2026-03-27T02:30:00', duration: 30m}\n",
    );
    assert_eq!(
        changes(&g, "2026-03-28 00:00", "2026-03-29 12:00", &[]),
        vec![
            (utc("2026-03-28 01:30"), Closed),
            (utc("2026-03-28 02:00"), Open),
            (utc("2026-03-29 01:30"), Closed),
            (utc("2026-03-29 02:00"), Open)
        ]
    );
}

#[test]
fn window_zone_overrides_gate_zone() {
    let g = gate(
        "  default: closed\n  timeZone: Europe/Berlin\n  windows:\n    - {name: ny, kind: allow, schedule: '0 9 * * *', duration: 1h, timeZone: America/New_York}\n",
    );
    assert_eq!(
        changes(&g, "2026-07-01 00:00", "2026-07-02 00:00", &[]),
        vec![
            (utc("2026-07-01 13:00"), Open),
            (utc("2026-07-01 14:00"), Closed)
        ]
    );
}
