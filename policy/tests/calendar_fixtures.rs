//! Calendar windows against hand-written feeds in the shapes Google Calendar, Outlook/Exchange
//! and Apple Calendar export (`tests/data/calendars/`): all-day and multi-day events, a weekly
//! meeting with a moved and a cancelled instance, DST-crossing events, Windows zone names,
//! VTIMEZONE, floating and UTC times, and an event whose TZID resolves nowhere.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;
use fleetgate_policy::{
    Calendars, EventMatch, FeedOccurrences, GateState, Occurrence, expand_ics, parse_gate,
    read_calendar,
};

fn fixture(name: &str) -> String {
    let path = format!("{}/tests/data/calendars/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn utc(y: i32, mo: u32, d: u32, h: u32, mi: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, 0).unwrap()
}

fn year_2026_27() -> (DateTime<Utc>, DateTime<Utc>) {
    (utc(2026, 1, 1, 0, 0), utc(2028, 1, 1, 0, 0))
}

fn spans(occ: &[Occurrence]) -> Vec<(String, String, String)> {
    occ.iter()
        .map(|o| {
            (
                o.start.format("%Y-%m-%d %H:%M").to_string(),
                o.end.format("%Y-%m-%d %H:%M").to_string(),
                o.summary.to_string(),
            )
        })
        .collect()
}

fn row(start: &str, end: &str, summary: &str) -> (String, String, String) {
    (start.into(), end.into(), summary.into())
}

#[test]
fn google_all_day_and_multi_day_events_run_local_midnight_to_midnight() {
    let (from, to) = year_2026_27();
    let berlin: Tz = "Europe/Berlin".parse().unwrap();
    let e = expand_ics(&fixture("google_freezes.ics"), berlin, None, from, to).unwrap();
    assert!(e.rejected.is_empty(), "{:?}", e.rejected);
    assert_eq!(e.events, 5);
    assert_eq!(
        spans(&e.occurrences),
        vec![
            row("2026-04-30 22:00", "2026-05-01 22:00", "Tag der Arbeit"),
            // No DTEND on a DATE: one day.
            row(
                "2026-10-02 22:00",
                "2026-10-03 22:00",
                "Tag der Deutschen Einheit"
            ),
            row("2026-11-27 14:00", "2026-11-27 15:30", "CAB review meeting"),
            row("2026-12-23 23:00", "2027-01-01 23:00", "Freeze: year end"),
            // Crosses the start of summer time (28 March 2027): midnight CET to midnight CEST.
            row("2027-03-25 23:00", "2027-03-29 22:00", "Freeze: Easter"),
            row("2027-04-30 22:00", "2027-05-01 22:00", "Tag der Arbeit"),
        ]
    );
    // The same all-day events read in another zone start at that zone's midnight.
    let tokyo: Tz = "Asia/Tokyo".parse().unwrap();
    let e = expand_ics(&fixture("google_freezes.ics"), tokyo, None, from, to).unwrap();
    assert_eq!(e.occurrences[0].start, utc(2026, 4, 30, 15, 0));
}

#[test]
fn match_takes_only_the_events_named_or_categorised() {
    let (from, to) = year_2026_27();
    let text = fixture("google_freezes.ics");
    let by_summary = EventMatch {
        summary: Some("freeze".into()),
        categories: vec![],
    };
    let e = expand_ics(&text, Tz::Europe__Berlin, Some(&by_summary), from, to).unwrap();
    let names: Vec<_> = e
        .occurrences
        .iter()
        .map(|o| o.summary.to_string())
        .collect();
    assert_eq!(names, ["Freeze: year end", "Freeze: Easter"]);
    let by_category = EventMatch {
        summary: None,
        categories: vec!["public".into()],
    };
    let e = expand_ics(&text, Tz::Europe__Berlin, Some(&by_category), from, to).unwrap();
    let names: Vec<_> = e
        .occurrences
        .iter()
        .map(|o| o.summary.to_string())
        .collect();
    assert_eq!(names, ["Tag der Arbeit", "Tag der Arbeit"]);
}

#[test]
fn outlook_weekly_meeting_with_windows_zone_moved_and_excluded_instances() {
    let (from, to) = year_2026_27();
    let e = expand_ics(&fixture("outlook_maintenance.ics"), Tz::UTC, None, from, to).unwrap();
    let patch: Vec<_> = e
        .occurrences
        .iter()
        .filter(|o| o.summary.starts_with("Patch window"))
        .map(|o| o.start.format("%m-%d %H:%M").to_string())
        .collect();
    assert_eq!(
        patch[..8],
        [
            "10-20 06:00", // 08:00 CEST
            "10-27 07:00", // 08:00 CET, after the change back on 25 October
            "11-03 07:00",
            "11-10 07:00",
            "11-19 12:00", // the 17 November instance, moved to Thursday 13:00
            "11-24 07:00",
            "12-01 07:00",
            "12-15 07:00", // 8 December: EXDATE
        ]
    );
    // UNTIL=20270330T070000Z: the last instance (08:00 CEST = 06:00Z) is before it and counts.
    assert_eq!(patch.last().unwrap(), "03-30 06:00");
    assert_eq!(patch.len(), 23);
    // "Pacific Standard Time" (no VTIMEZONE in the feed) is America/Los_Angeles: 00:30 PDT to
    // 03:30 PST on the night summer time ends is four hours.
    let us = e
        .occurrences
        .iter()
        .find(|o| o.summary.starts_with("US datacenter"))
        .unwrap();
    assert_eq!(
        (us.start, us.end),
        (utc(2026, 11, 1, 7, 30), utc(2026, 11, 1, 11, 30))
    );
    // The event in an unknown zone is rejected on its own, with its line, never read as floating.
    assert_eq!(e.rejected.len(), 1, "{:?}", e.rejected);
    let r = &e.rejected[0];
    assert_eq!((r.line, r.property.as_str()), (58, "DTSTART"));
    assert!(r.message.contains("Olympus Mons Standard Time"), "{r}");
    assert!(!e.occurrences.iter().any(|o| o.summary.contains("Olympus")));
    // X-PUBLISHED-TTL:PT2H
    assert_eq!(e.refresh_hint_seconds, Some(7200));
}

#[test]
fn apple_dst_crossing_cancelled_instance_rdate_floating_and_utc() {
    let (from, to) = year_2026_27();
    let e = expand_ics(
        &fixture("apple_maintenance.ics"),
        Tz::Europe__Berlin,
        None,
        from,
        to,
    )
    .unwrap();
    assert!(e.rejected.is_empty(), "{:?}", e.rejected);
    assert_eq!(
        spans(&e.occurrences),
        vec![
            row(
                "2026-10-30 00:00",
                "2026-10-30 03:00",
                "Thursday night maintenance"
            ),
            // 00:00 EDT to 04:00 EST: five hours across the change.
            row(
                "2026-11-01 04:00",
                "2026-11-01 09:00",
                "Storage migration (crosses the DST change)"
            ),
            row(
                "2026-11-06 01:00",
                "2026-11-06 04:00",
                "Thursday night maintenance"
            ),
            row(
                "2026-11-13 01:00",
                "2026-11-13 04:00",
                "Thursday night maintenance"
            ),
            row(
                "2026-11-20 01:00",
                "2026-11-20 04:00",
                "Thursday night maintenance"
            ),
            // 26 November: STATUS:CANCELLED on its RECURRENCE-ID.
            row(
                "2026-12-04 01:00",
                "2026-12-04 04:00",
                "Thursday night maintenance"
            ),
            // RDATE, with the series' DURATION.
            row(
                "2026-12-08 01:00",
                "2026-12-08 04:00",
                "Thursday night maintenance"
            ),
            // Floating: read in the window's zone (Berlin).
            row(
                "2026-12-10 22:00",
                "2026-12-11 00:00",
                "Floating: midnight work"
            ),
            row(
                "2026-12-15 15:00",
                "2026-12-15 16:00",
                "UTC: vendor upgrade"
            ),
            row("2026-12-24 23:00", "2026-12-25 23:00", "Christmas"),
        ]
    );
    // REFRESH-INTERVAL;VALUE=DURATION:P1D
    assert_eq!(e.refresh_hint_seconds, Some(86_400));
}

#[test]
fn folded_lines_and_line_numbers_in_errors() {
    let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:A long\r\n  folded summary\r\nDTSTART:20261201T080000Z\r\nDTEND:20261201T090000Z\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\nSUMMARY:bad\r\nDTSTART:2026-12-01\r\nDTEND:20261201T090000Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
    let (from, to) = year_2026_27();
    let e = expand_ics(text, Tz::UTC, None, from, to).unwrap();
    assert_eq!(e.occurrences.len(), 1);
    assert_eq!(&*e.occurrences[0].summary, "A long folded summary");
    assert_eq!(e.rejected.len(), 1, "{:?}", e.rejected);
    assert_eq!(
        (e.rejected[0].line, e.rejected[0].property.as_str()),
        (13, "DTSTART")
    );

    let not_ics = expand_ics("hello", Tz::UTC, None, from, to).unwrap_err();
    assert_eq!(not_ics.line, 1);
}

/// RFC 5545 3.3.5, the windows' DST rule: a single event's local time in the spring-forward gap
/// moves later by the gap's length, one in the fall-back overlap means the earlier instant —
/// floating or with a TZID, DTSTART and DTEND alike. calcard alone refuses such times.
#[test]
fn single_events_inside_a_dst_change_are_read_with_the_dst_rule() {
    let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n\
        BEGIN:VEVENT\r\nUID:a\r\nSUMMARY:overlap floating\r\nDTSTART:20261025T023000\r\nDURATION:PT1H\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:b\r\nSUMMARY:gap with zone\r\nDTSTART;TZID=Europe/Berlin:20260329T021500\r\nDTEND;TZID=Europe/Berlin:20260329T043000\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:c\r\nSUMMARY:end in the gap\r\nDTSTART;TZID=America/New_York:20260308T010000\r\nDTEND;TZID=America/New_York:20260308T023000\r\nEND:VEVENT\r\n\
        END:VCALENDAR\r\n";
    let (from, to) = year_2026_27();
    for read in [
        expand_ics(text, Tz::Europe__Berlin, None, from, to).unwrap(),
        read_calendar(text.as_bytes(), Tz::Europe__Berlin, None, from, to).unwrap(),
    ] {
        assert!(read.rejected.is_empty(), "{:?}", read.rejected);
        assert_eq!(
            spans(&read.occurrences),
            vec![
                // 01:00 EST; 02:30 does not exist in New York that night: 03:30 EDT.
                row("2026-03-08 06:00", "2026-03-08 07:30", "end in the gap"),
                // 02:15 does not exist in Berlin: 03:15 CEST; 04:30 CEST.
                row("2026-03-29 01:15", "2026-03-29 02:30", "gap with zone"),
                // 02:30 happens twice: the first, CEST.
                row("2026-10-25 00:30", "2026-10-25 01:30", "overlap floating"),
            ]
        );
    }
}

/// A recurring event counts its instances from DTSTART in its zone; a start that is not one
/// instant is refused with its line, the time and the zone — the feed as a whole by the
/// fail-closed reading.
#[test]
fn a_recurring_event_starting_inside_a_dst_change_is_refused_by_line() {
    let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\n\
        BEGIN:VEVENT\r\nUID:a\r\nSUMMARY:nightly\r\nDTSTART;TZID=Europe/Berlin:20261025T023000\r\nDURATION:PT1H\r\nRRULE:FREQ=DAILY;COUNT=3\r\nEND:VEVENT\r\n\
        BEGIN:VEVENT\r\nUID:b\r\nSUMMARY:fine\r\nDTSTART:20261201T080000Z\r\nDURATION:PT1H\r\nEND:VEVENT\r\n\
        END:VCALENDAR\r\n";
    let (from, to) = year_2026_27();
    let e = expand_ics(text, Tz::UTC, None, from, to).unwrap();
    assert_eq!(
        spans(&e.occurrences),
        vec![row("2026-12-01 08:00", "2026-12-01 09:00", "fine")]
    );
    assert_eq!(e.rejected.len(), 1, "{:?}", e.rejected);
    let why = e.rejected[0].to_string();
    assert!(
        why.starts_with("line 6, DTSTART: 2026-10-25T02:30:00 is not one instant in Europe/Berlin"),
        "{why}"
    );
    let refused = read_calendar(text.as_bytes(), Tz::UTC, None, from, to).unwrap_err();
    assert!(refused.to_string().contains("Europe/Berlin"), "{refused}");
}

const GATE: &str = r#"
apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: holidays}
spec:
  clusters: {selector: {}}
  timeZone: Europe/Berlin
  windows:
    - name: freezes
      kind: deny
      match: {summary: Freeze}
      calendar:
        ics: |
"#;

fn gate_with(ics: &str) -> String {
    let mut g = GATE.to_string();
    for line in ics.lines() {
        g.push_str("          ");
        g.push_str(line.trim_end_matches('\r'));
        g.push('\n');
    }
    g
}

#[test]
fn inline_calendar_window_closes_the_gate_on_each_event_with_its_summary() {
    let gate = parse_gate(&gate_with(&fixture("google_freezes.ics"))).unwrap();
    let compiled = gate
        .compile_with(&Calendars::at(utc(2026, 12, 1, 0, 0)))
        .unwrap();
    let e = compiled.evaluate(utc(2026, 12, 1, 0, 0), &[]);
    assert_eq!(e.state, GateState::Open);
    assert_eq!(e.next_transition, Some(utc(2026, 12, 23, 23, 0)));
    let e = compiled.evaluate(utc(2026, 12, 24, 12, 0), &[]);
    assert_eq!(e.state, GateState::Closed);
    assert_eq!(
        e.reason,
        "deny window 'freezes' (Freeze: year end) until Sat 2027-01-02 00:00 CET"
    );
    let lines = compiled.describe();
    assert_eq!(
        lines[0],
        "deny 'freezes': every event whose SUMMARY contains 'Freeze' of the inline calendar (5 events) (Europe/Berlin)"
    );
    let t = compiled.transitions(utc(2026, 12, 1, 0, 0), utc(2027, 12, 1, 0, 0), &[]);
    let at: Vec<_> = t.iter().map(|t| (t.at, t.state)).collect();
    assert_eq!(
        at,
        vec![
            (utc(2026, 12, 23, 23, 0), GateState::Closed),
            (utc(2027, 1, 1, 23, 0), GateState::Open),
            (utc(2027, 3, 25, 23, 0), GateState::Closed),
            (utc(2027, 3, 29, 22, 0), GateState::Open),
        ]
    );
}

#[test]
fn validation_names_the_feed_line_and_property() {
    let outlook = fixture("outlook_maintenance.ics");
    let err = parse_gate(&gate_with(&outlook))
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.path, "spec.windows[0].calendar.ics");
    assert!(
        err.message
            .starts_with("line 58, DTSTART: unknown time zone 'Olympus Mons Standard Time'"),
        "{err}"
    );
    let both = GATE.replace(
        "        ics: |\n",
        "        ics: x\n        url: https://example.com/a.ics\n",
    );
    let err = parse_gate(&both).unwrap().validate().unwrap_err();
    assert_eq!(err.path, "spec.windows[0].calendar");
    let dur = GATE.replace("      match:", "      duration: 1h\n      match:");
    let err = parse_gate(&(dur + "          BEGIN:VCALENDAR\n          END:VCALENDAR\n"))
        .unwrap()
        .validate()
        .unwrap_err();
    assert_eq!(err.path, "spec.windows[0].duration");
}

const FEED_GATE: &str = r#"
apiVersion: fleetgate.io/v1
kind: Gate
metadata: {name: cab}
spec:
  clusters: {selector: {}}
  windows:
    - name: cab-freeze
      kind: deny
      calendar: {url: "https://calendar.example.com/cab.ics", refresh: 30m, maxStale: 12h, onStale: closed}
"#;

#[test]
fn feed_window_uses_given_occurrences_and_closes_once_stale_when_asked() {
    let gate = parse_gate(FEED_GATE).unwrap();
    // Never fetched with onStale: closed: closed from the start.
    let never = gate
        .compile_with(&Calendars::at(utc(2026, 12, 1, 0, 0)))
        .unwrap();
    let e = never.evaluate(utc(2026, 12, 1, 0, 0), &[]);
    assert_eq!(e.state, GateState::Closed);
    assert_eq!(
        e.reason,
        "deny window 'cab-freeze': calendar feed never fetched (onStale: closed)"
    );
    let feed = FeedOccurrences {
        window: "cab-freeze".into(),
        occurrences: vec![Occurrence {
            start: utc(2026, 12, 2, 0, 0),
            end: utc(2026, 12, 3, 0, 0),
            summary: "Quarter close".into(),
        }],
        stale_at: Some(utc(2026, 12, 5, 0, 0)),
    };
    let compiled = gate
        .compile_with(&Calendars::at(utc(2026, 12, 1, 0, 0)).with_feeds(vec![feed]))
        .unwrap();
    let t = compiled.transitions(utc(2026, 12, 1, 0, 0), utc(2026, 12, 10, 0, 0), &[]);
    let at: Vec<_> = t
        .iter()
        .map(|t| (t.at, t.state, t.reason.clone()))
        .collect();
    assert_eq!(
        at,
        vec![
            (
                utc(2026, 12, 2, 0, 0),
                GateState::Closed,
                "deny window 'cab-freeze' (Quarter close) until Thu 2026-12-03 00:00 UTC".into()
            ),
            (
                utc(2026, 12, 3, 0, 0),
                GateState::Open,
                "default (open)".into()
            ),
            (
                utc(2026, 12, 5, 0, 0),
                GateState::Closed,
                "deny window 'cab-freeze': calendar feed stale since 00:00 UTC (onStale: closed)"
                    .into()
            ),
        ]
    );
    assert!(compiled.describe()[0].contains(
        "https://calendar.example.com/cab.ics (refreshed every 30m; if not fetched for 12h: closed)"
    ));
}
