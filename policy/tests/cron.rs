//! The cron dialect: fields, names, ranges, steps, lists, Sunday as 0 and 7, the
//! day-of-month/day-of-week OR rule, macros, next-match search and error messages. The day rule
//! is checked in full against robfig/cron and croniter in `day_rule.rs`.

use chrono::NaiveDateTime;
use fleetgate_policy::CronSchedule;

fn t(s: &str) -> NaiveDateTime {
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap()
}

fn next(expr: &str, from: &str) -> Option<String> {
    let cron = CronSchedule::parse(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    cron.next_at_or_after(t(from), t(from) + chrono::Duration::days(3000))
        .map(|n| n.format("%Y-%m-%d %H:%M %a").to_string())
}

#[test]
fn next_match_table() {
    // 2026-11-20 is a Friday.
    let cases: &[(&str, &str, &str)] = &[
        ("* * * * *", "2026-11-20 10:07", "2026-11-20 10:07 Fri"),
        ("0 8 * * MON", "2026-11-20 10:07", "2026-11-23 08:00 Mon"),
        ("0 8 * * mon", "2026-11-20 10:07", "2026-11-23 08:00 Mon"),
        ("0 8 * * 1", "2026-11-23 08:00", "2026-11-23 08:00 Mon"),
        ("0 8 * * 1", "2026-11-23 08:01", "2026-11-30 08:00 Mon"),
        ("0 0 * * 0", "2026-11-20 00:00", "2026-11-22 00:00 Sun"),
        ("0 0 * * 7", "2026-11-20 00:00", "2026-11-22 00:00 Sun"),
        ("0 0 * * SUN", "2026-11-20 00:00", "2026-11-22 00:00 Sun"),
        ("0 0 * * 5-7", "2026-11-21 01:00", "2026-11-22 00:00 Sun"),
        ("*/15 * * * *", "2026-11-20 10:07", "2026-11-20 10:15 Fri"),
        ("5/20 * * * *", "2026-11-20 10:26", "2026-11-20 10:45 Fri"),
        (
            "10-20/5 9 * * *",
            "2026-11-20 09:16",
            "2026-11-20 09:20 Fri",
        ),
        (
            "0,30 9,17 * * *",
            "2026-11-20 09:31",
            "2026-11-20 17:00 Fri",
        ),
        ("0 0 1 * *", "2026-11-20 00:00", "2026-12-01 00:00 Tue"),
        ("0 0 1 JAN *", "2026-11-20 00:00", "2027-01-01 00:00 Fri"),
        (
            "0 0 * FEB-MAR *",
            "2026-11-20 00:00",
            "2027-02-01 00:00 Mon",
        ),
        ("0 0 29 2 *", "2026-11-20 00:00", "2028-02-29 00:00 Tue"),
        ("0 0 31 * *", "2026-11-20 00:00", "2026-12-31 00:00 Thu"),
        // Both day fields restricted: either matches (the 1st or a Monday).
        ("0 0 1 * MON", "2026-11-24 00:00", "2026-11-30 00:00 Mon"),
        ("0 0 1 * MON", "2026-11-30 00:01", "2026-12-01 00:00 Tue"),
        // A stepped `*/2` is restricted (Kubernetes CronJob): every odd day or every Monday.
        ("0 0 */2 * MON", "2026-11-20 00:00", "2026-11-21 00:00 Sat"),
        ("0 0 */2 * MON", "2026-11-22 00:00", "2026-11-23 00:00 Mon"),
        // `*/1` and `?` are unrestricted: Mondays only.
        ("0 0 */1 * MON", "2026-11-20 00:00", "2026-11-23 00:00 Mon"),
        ("0 0 ? * MON", "2026-11-20 00:00", "2026-11-23 00:00 Mon"),
        ("0 0 1 * ?", "2026-11-20 00:00", "2026-12-01 00:00 Tue"),
        // Day-of-week steps end on Saturday: MON/2 is Mon, Wed, Fri - never Sunday.
        ("0 12 * * MON/2", "2026-11-28 13:00", "2026-11-30 12:00 Mon"),
        ("0 12 * * MON/2", "2026-12-04 13:00", "2026-12-07 12:00 Mon"),
        ("0 12 * * 1-7/2", "2026-12-04 13:00", "2026-12-06 12:00 Sun"),
        // robfig accepts steps past the maximum: only the first value.
        ("*/90 * * * *", "2026-11-20 10:07", "2026-11-20 11:00 Fri"),
        // With the OR rule Feb 29 or any Monday in February.
        ("0 0 29 2 MON", "2026-01-01 00:00", "2026-02-02 00:00 Mon"),
        ("@daily", "2026-11-20 00:01", "2026-11-21 00:00 Sat"),
        ("@weekly", "2026-11-20 00:01", "2026-11-22 00:00 Sun"),
        ("@monthly", "2026-11-20 00:01", "2026-12-01 00:00 Tue"),
        ("@yearly", "2026-11-20 00:01", "2027-01-01 00:00 Fri"),
        ("@hourly", "2026-11-20 00:01", "2026-11-20 01:00 Fri"),
    ];
    for (expr, from, expected) in cases {
        assert_eq!(
            next(expr, from).as_deref(),
            Some(*expected),
            "{expr} from {from}"
        );
    }
}

#[test]
fn seconds_round_up_to_the_next_minute() {
    let cron = CronSchedule::parse("* * * * *").unwrap();
    let from = t("2026-11-20 10:07") + chrono::Duration::seconds(1);
    assert_eq!(
        cron.next_at_or_after(from, from + chrono::Duration::hours(1)),
        Some(t("2026-11-20 10:08"))
    );
}

#[test]
fn impossible_dates_never_match() {
    assert_eq!(next("0 0 30 2 *", "2026-01-01 00:00"), None);
    assert_eq!(next("0 0 31 4 *", "2026-01-01 00:00"), None);
}

#[test]
fn matches_between_lists_every_match() {
    let cron = CronSchedule::parse("0 */6 * * *").unwrap();
    let all = cron.matches_between(t("2026-11-20 00:00"), t("2026-11-21 00:00"));
    assert_eq!(
        all,
        vec![
            t("2026-11-20 00:00"),
            t("2026-11-20 06:00"),
            t("2026-11-20 12:00"),
            t("2026-11-20 18:00"),
            t("2026-11-21 00:00")
        ]
    );
    assert!(all.iter().all(|m| cron.matches(*m)));
    assert!(!cron.matches(t("2026-11-20 01:00")));
}

#[test]
fn long_searches_skip_instead_of_scanning() {
    // The next Feb 29 23:59 after 2029 is three years away: found by skipping months and days.
    let cron = CronSchedule::parse("59 23 29 2 *").unwrap();
    let n = cron.next_at_or_after(t("2029-01-01 00:00"), t("2040-01-01 00:00"));
    assert_eq!(n, Some(t("2032-02-29 23:59")));
}

#[test]
fn errors_name_the_field() {
    let cases: &[(&str, &str)] = &[
        (
            "0 8 * *",
            "invalid cron expression '0 8 * *': expected 5 fields (minute hour day-of-month month day-of-week), got 4",
        ),
        (
            "60 * * * *",
            "invalid cron field 'minute': value 60 out of range 0-59",
        ),
        (
            "0 24 * * *",
            "invalid cron field 'hour': value 24 out of range 0-23",
        ),
        (
            "0 0 0 * *",
            "invalid cron field 'day-of-month': value 0 out of range 1-31",
        ),
        (
            "0 0 * 13 *",
            "invalid cron field 'month': value 13 out of range 1-12",
        ),
        (
            "0 0 * * 8",
            "invalid cron field 'day-of-week': value 8 out of range 0-7",
        ),
        (
            "0 0 * * MOX",
            "invalid cron field 'day-of-week': invalid value 'MOX' (use 0-7 or SUN…SAT)",
        ),
        (
            "0 0 * * 5-2",
            "invalid cron field 'day-of-week': range start 5 after end 2 in '5-2'",
        ),
        (
            "*/0 * * * *",
            "invalid cron field 'minute': step 0 in '*/0' (a step is 1 or more)",
        ),
        (
            "TZ=UTC 0 * * * *",
            "invalid cron expression 'TZ=UTC 0 * * * *': give the zone in the window's or gate's timeZone, not as TZ= in the schedule",
        ),
        (
            "@every 1h",
            "invalid cron expression '@every 1h': @every has no fixed start; use a 5-field schedule or an rrule",
        ),
        (
            "1,,2 * * * *",
            "invalid cron field 'minute': empty list element in '1,,2'",
        ),
        (
            "x * * * *",
            "invalid cron field 'minute': invalid value 'x'",
        ),
    ];
    for (expr, message) in cases {
        let e = CronSchedule::parse(expr).unwrap_err();
        assert_eq!(e.to_string(), *message, "{expr}");
    }
}
