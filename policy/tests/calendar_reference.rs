//! Calendar expansion checked against a brute-force reference written from first principles:
//! for random daily and weekly series (INTERVAL, BYDAY, COUNT or UNTIL, EXDATE) in DST zones,
//! walk every day, keep the days the rule names, and map each local start to an instant with
//! chrono-tz. Start hours avoid 01:00-03:59, where DST makes a wall time missing or twice.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use fleetgate_policy::expand_ics;
use proptest::prelude::*;

const ZONES: [Tz; 4] = [
    Tz::Europe__Berlin,
    Tz::America__New_York,
    Tz::Australia__Sydney,
    Tz::UTC,
];

#[derive(Debug, Clone)]
struct Series {
    zone: Tz,
    start: NaiveDateTime,
    minutes: i64,
    weekly: bool,
    interval: u32,
    /// Bit i: weekday i from Monday; always includes DTSTART's weekday.
    byday: u8,
    count: Option<u32>,
    until_days: Option<i64>,
    /// Indices (into the reference's instances) to exclude.
    exclude: Vec<usize>,
}

fn series() -> impl Strategy<Value = Series> {
    (
        0..ZONES.len(),
        0i64..700,
        prop_oneof![0u32..1, 4u32..24],
        prop_oneof![Just(0u32), Just(15), Just(30), Just(45)],
        30i64..(3 * 24 * 60),
        any::<bool>(),
        1u32..4,
        0u8..128,
        prop_oneof![Just(None), (1u32..40).prop_map(Some)],
        prop_oneof![Just(None), (0i64..500).prop_map(Some)],
        proptest::collection::vec(0usize..40, 0..4),
    )
        .prop_map(
            |(z, day, hour, minute, minutes, weekly, interval, byday, count, until, exclude)| {
                let date = NaiveDate::from_ymd_opt(2026, 1, 1).unwrap() + Duration::days(day);
                let start = date.and_hms_opt(hour, minute, 0).unwrap();
                let own = 1u8 << start.weekday().num_days_from_monday();
                Series {
                    zone: ZONES[z],
                    start,
                    minutes,
                    weekly,
                    interval,
                    byday: byday | own,
                    // RFC 5545: COUNT and UNTIL never together.
                    until_days: if count.is_some() { None } else { until },
                    count,
                    exclude,
                }
            },
        )
}

fn instant(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    tz.from_local_datetime(&local)
        .single()
        .expect("start hours avoid DST changes")
        .with_timezone(&Utc)
}

/// Every instance start (local), from first principles.
fn reference_starts(s: &Series, last_day: NaiveDate) -> Vec<NaiveDateTime> {
    let until = s
        .until_days
        .map(|d| instant(s.zone, s.start + Duration::days(d)));
    let monday = |d: NaiveDate| d - Duration::days(i64::from(d.weekday().num_days_from_monday()));
    let mut out = Vec::new();
    let mut day = s.start.date();
    while day <= last_day {
        let on = if s.weekly {
            let weeks = (monday(day) - monday(s.start.date())).num_days() / 7;
            weeks % i64::from(s.interval) == 0
                && s.byday & (1 << day.weekday().num_days_from_monday()) != 0
        } else {
            (day - s.start.date()).num_days() % i64::from(s.interval) == 0
        };
        if on {
            let local = day.and_time(s.start.time());
            if until.is_some_and(|u| instant(s.zone, local) > u) {
                break;
            }
            out.push(local);
            if s.count.is_some_and(|c| out.len() == c as usize) {
                break;
            }
        }
        day += Duration::days(1);
    }
    out
}

fn ics(s: &Series, excluded: &[NaiveDateTime]) -> String {
    let zone = s.zone.name();
    let fmt = |t: NaiveDateTime| t.format("%Y%m%dT%H%M%S").to_string();
    let mut rule = format!(
        "FREQ={};INTERVAL={}",
        if s.weekly { "WEEKLY" } else { "DAILY" },
        s.interval
    );
    if s.weekly {
        let days: Vec<&str> = (0..7)
            .filter(|i| s.byday & (1 << i) != 0)
            .map(|i| ["MO", "TU", "WE", "TH", "FR", "SA", "SU"][i])
            .collect();
        rule.push_str(&format!(";BYDAY={}", days.join(",")));
    }
    if let Some(c) = s.count {
        rule.push_str(&format!(";COUNT={c}"));
    }
    if let Some(d) = s.until_days {
        let u = instant(s.zone, s.start + Duration::days(d));
        rule.push_str(&format!(";UNTIL={}", u.format("%Y%m%dT%H%M%SZ")));
    }
    let mut text = format!(
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//reference//EN\r\nBEGIN:VEVENT\r\nUID:x\r\nSUMMARY:series\r\nDTSTART;TZID={zone}:{}\r\nDURATION:PT{}M\r\nRRULE:{rule}\r\n",
        fmt(s.start),
        s.minutes
    );
    for x in excluded {
        text.push_str(&format!("EXDATE;TZID={zone}:{}\r\n", fmt(*x)));
    }
    text.push_str("END:VEVENT\r\nEND:VCALENDAR\r\n");
    text
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn expansion_matches_the_brute_force_reference(s in series()) {
        let from = Utc.with_ymd_and_hms(2026, 3, 1, 0, 0, 0).unwrap();
        let to = Utc.with_ymd_and_hms(2028, 1, 1, 0, 0, 0).unwrap();
        let all = reference_starts(&s, NaiveDate::from_ymd_opt(2028, 1, 5).unwrap());
        let excluded: Vec<NaiveDateTime> =
            s.exclude.iter().filter_map(|&i| all.get(i).copied()).collect();
        let expected: Vec<(DateTime<Utc>, DateTime<Utc>)> = all
            .iter()
            .filter(|t| !excluded.contains(t))
            .map(|t| {
                let start = instant(s.zone, *t);
                (start, start + Duration::minutes(s.minutes))
            })
            .filter(|(start, end)| *end > from && *start < to)
            .collect();
        let text = ics(&s, &excluded);
        let got = expand_ics(&text, Tz::UTC, None, from, to).unwrap();
        prop_assert!(got.rejected.is_empty(), "{:?}", got.rejected);
        let got: Vec<_> = got.occurrences.iter().map(|o| (o.start, o.end)).collect();
        prop_assert_eq!(got, expected, "{}", text);
    }
}
