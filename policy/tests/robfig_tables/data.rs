//! The rows of robfig/cron v3's tests (spec_test.go at bc59245), as data; `robfig_tables.rs` checks them.

use super::Expect::{self, Differs, Same, SameMinute};

/// `TestActivation`: (time, spec, fires). Times are in the machine's zone in robfig (no DST
/// crossing in these rows), UTC here.
pub(crate) const ACTIVATION: &[(&str, &str, bool)] = &[
    // Every fifteen minutes.
    ("Mon Jul 9 15:00 2012", "0/15 * * * *", true),
    ("Mon Jul 9 15:45 2012", "0/15 * * * *", true),
    ("Mon Jul 9 15:40 2012", "0/15 * * * *", false),
    // Every fifteen minutes, starting at 5 minutes.
    ("Mon Jul 9 15:05 2012", "5/15 * * * *", true),
    ("Mon Jul 9 15:20 2012", "5/15 * * * *", true),
    ("Mon Jul 9 15:50 2012", "5/15 * * * *", true),
    // Named months
    ("Sun Jul 15 15:00 2012", "0/15 * * Jul *", true),
    ("Sun Jul 15 15:00 2012", "0/15 * * Jun *", false),
    // Everything set.
    ("Sun Jul 15 08:30 2012", "30 08 ? Jul Sun", true),
    ("Sun Jul 15 08:30 2012", "30 08 15 Jul ?", true),
    ("Mon Jul 16 08:30 2012", "30 08 ? Jul Sun", false),
    ("Mon Jul 16 08:30 2012", "30 08 15 Jul ?", false),
    // Predefined schedules
    ("Mon Jul 9 15:00 2012", "@hourly", true),
    ("Mon Jul 9 15:04 2012", "@hourly", false),
    ("Mon Jul 9 15:00 2012", "@daily", false),
    ("Mon Jul 9 00:00 2012", "@daily", true),
    ("Mon Jul 9 00:00 2012", "@weekly", false),
    ("Sun Jul 8 00:00 2012", "@weekly", true),
    ("Sun Jul 8 01:00 2012", "@weekly", false),
    ("Sun Jul 8 00:00 2012", "@monthly", false),
    ("Sun Jul 1 00:00 2012", "@monthly", true),
    // Test interaction of DOW and DOM.
    // If both are restricted, then only one needs to match.
    ("Sun Jul 15 00:00 2012", "* * 1,15 * Sun", true),
    ("Fri Jun 15 00:00 2012", "* * 1,15 * Sun", true),
    ("Wed Aug 1 00:00 2012", "* * 1,15 * Sun", true),
    ("Sun Jul 15 00:00 2012", "* * */10 * Sun", true), // verifies #70
    // However, if one has a star, then both need to match.
    ("Sun Jul 15 00:00 2012", "* * * * Mon", false),
    ("Mon Jul 9 00:00 2012", "* * 1,15 * *", false),
    ("Sun Jul 15 00:00 2012", "* * 1,15 * *", true),
    ("Sun Jul 15 00:00 2012", "* * */2 * Sun", true),
];

/// Our DST rule for wall times (docs/gate-reference.md "Windows", the DST rule): a time inside a spring-forward gap
/// moves later by the gap's length rather than being skipped, so a window scheduled at 02:30
/// still opens that day; an ambiguous fall-back time means the earlier instant only, so a
/// window does not open twice.
pub(crate) const GAP: &str =
    "DST gap: a skipped wall time moves later by the gap (robfig skips it)";
pub(crate) const OVERLAP: &str =
    "DST overlap: a repeated wall time is its earlier instant only (robfig fires at both)";

/// `TestNext`: (time, 6-field spec as robfig wrote it, robfig's answer, ours). An empty answer
/// is robfig's zero time: never.
pub(crate) const NEXT: &[(&str, &str, &str, Expect)] = &[
    // Simple cases
    (
        "Mon Jul 9 14:45 2012",
        "0 0/15 * * * *",
        "Mon Jul 9 15:00 2012",
        Same,
    ),
    (
        "Mon Jul 9 14:59 2012",
        "0 0/15 * * * *",
        "Mon Jul 9 15:00 2012",
        Same,
    ),
    (
        "Mon Jul 9 14:59:59 2012",
        "0 0/15 * * * *",
        "Mon Jul 9 15:00 2012",
        Same,
    ),
    // Wrap around hours
    (
        "Mon Jul 9 15:45 2012",
        "0 20-35/15 * * * *",
        "Mon Jul 9 16:20 2012",
        Same,
    ),
    // Wrap around days
    (
        "Mon Jul 9 23:46 2012",
        "0 */15 * * * *",
        "Tue Jul 10 00:00 2012",
        Same,
    ),
    (
        "Mon Jul 9 23:45 2012",
        "0 20-35/15 * * * *",
        "Tue Jul 10 00:20 2012",
        Same,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 * * * *",
        "Tue Jul 10 00:20:15 2012",
        SameMinute,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 1/2 * * *",
        "Tue Jul 10 01:20:15 2012",
        SameMinute,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 10-12 * * *",
        "Tue Jul 10 10:20:15 2012",
        SameMinute,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 1/2 */2 * *",
        "Thu Jul 11 01:20:15 2012",
        SameMinute,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 * 9-20 * *",
        "Wed Jul 10 00:20:15 2012",
        SameMinute,
    ),
    (
        "Mon Jul 9 23:35:51 2012",
        "15/35 20-35/15 * 9-20 Jul *",
        "Wed Jul 10 00:20:15 2012",
        SameMinute,
    ),
    // Wrap around months
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 9 Apr-Oct ?",
        "Thu Aug 9 00:00 2012",
        Same,
    ),
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 */5 Apr,Aug,Oct Mon",
        "Tue Aug 1 00:00 2012",
        Same,
    ),
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 */5 Oct Mon",
        "Mon Oct 1 00:00 2012",
        Same,
    ),
    // Wrap around years
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 * Feb Mon",
        "Mon Feb 4 00:00 2013",
        Same,
    ),
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 * Feb Mon/2",
        "Fri Feb 1 00:00 2013",
        Same,
    ),
    // Wrap around minute, hour, day, month, and year
    (
        "Mon Dec 31 23:59:45 2012",
        "0 * * * * *",
        "Tue Jan 1 00:00:00 2013",
        Same,
    ),
    // Leap year
    (
        "Mon Jul 9 23:35 2012",
        "0 0 0 29 Feb ?",
        "Mon Feb 29 00:00 2016",
        Same,
    ),
    // Daylight savings time 2am EST (-5) -> 3am EDT (-4)
    (
        "2012-03-11T00:00:00-0500",
        "TZ=America/New_York 0 30 2 11 Mar ?",
        "2013-03-11T02:30:00-0400",
        Differs("2012-03-11T03:30:00-0400", GAP),
    ),
    // hourly job
    (
        "2012-03-11T00:00:00-0500",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T01:00:00-0500",
        Same,
    ),
    (
        "2012-03-11T01:00:00-0500",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T03:00:00-0400",
        Same,
    ),
    (
        "2012-03-11T03:00:00-0400",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T04:00:00-0400",
        Same,
    ),
    (
        "2012-03-11T04:00:00-0400",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T05:00:00-0400",
        Same,
    ),
    // hourly job using CRON_TZ
    (
        "2012-03-11T00:00:00-0500",
        "CRON_TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T01:00:00-0500",
        Same,
    ),
    (
        "2012-03-11T01:00:00-0500",
        "CRON_TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T03:00:00-0400",
        Same,
    ),
    (
        "2012-03-11T03:00:00-0400",
        "CRON_TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T04:00:00-0400",
        Same,
    ),
    (
        "2012-03-11T04:00:00-0400",
        "CRON_TZ=America/New_York 0 0 * * * ?",
        "2012-03-11T05:00:00-0400",
        Same,
    ),
    // 1am nightly job
    (
        "2012-03-11T00:00:00-0500",
        "TZ=America/New_York 0 0 1 * * ?",
        "2012-03-11T01:00:00-0500",
        Same,
    ),
    (
        "2012-03-11T01:00:00-0500",
        "TZ=America/New_York 0 0 1 * * ?",
        "2012-03-12T01:00:00-0400",
        Same,
    ),
    // 2am nightly job (skipped)
    (
        "2012-03-11T00:00:00-0500",
        "TZ=America/New_York 0 0 2 * * ?",
        "2012-03-12T02:00:00-0400",
        Differs("2012-03-11T03:00:00-0400", GAP),
    ),
    // Daylight savings time 2am EDT (-4) => 1am EST (-5)
    (
        "2012-11-04T00:00:00-0400",
        "TZ=America/New_York 0 30 2 04 Nov ?",
        "2012-11-04T02:30:00-0500",
        Same,
    ),
    (
        "2012-11-04T01:45:00-0400",
        "TZ=America/New_York 0 30 1 04 Nov ?",
        "2012-11-04T01:30:00-0500",
        Differs("2013-11-04T01:30:00-0500", OVERLAP),
    ),
    // hourly job
    (
        "2012-11-04T00:00:00-0400",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-11-04T01:00:00-0400",
        Same,
    ),
    (
        "2012-11-04T01:00:00-0400",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-11-04T01:00:00-0500",
        Differs("2012-11-04T02:00:00-0500", OVERLAP),
    ),
    (
        "2012-11-04T01:00:00-0500",
        "TZ=America/New_York 0 0 * * * ?",
        "2012-11-04T02:00:00-0500",
        Same,
    ),
    // 1am nightly job (runs twice)
    (
        "2012-11-04T00:00:00-0400",
        "TZ=America/New_York 0 0 1 * * ?",
        "2012-11-04T01:00:00-0400",
        Same,
    ),
    (
        "2012-11-04T01:00:00-0400",
        "TZ=America/New_York 0 0 1 * * ?",
        "2012-11-04T01:00:00-0500",
        Differs("2012-11-05T01:00:00-0500", OVERLAP),
    ),
    (
        "2012-11-04T01:00:00-0500",
        "TZ=America/New_York 0 0 1 * * ?",
        "2012-11-05T01:00:00-0500",
        Same,
    ),
    // 2am nightly job
    (
        "2012-11-04T00:00:00-0400",
        "TZ=America/New_York 0 0 2 * * ?",
        "2012-11-04T02:00:00-0500",
        Same,
    ),
    (
        "2012-11-04T02:00:00-0500",
        "TZ=America/New_York 0 0 2 * * ?",
        "2012-11-05T02:00:00-0500",
        Same,
    ),
    // 3am nightly job
    (
        "2012-11-04T00:00:00-0400",
        "TZ=America/New_York 0 0 3 * * ?",
        "2012-11-04T03:00:00-0500",
        Same,
    ),
    (
        "2012-11-04T03:00:00-0500",
        "TZ=America/New_York 0 0 3 * * ?",
        "2012-11-05T03:00:00-0500",
        Same,
    ),
    // hourly job
    (
        "TZ=America/New_York 2012-11-04T00:00:00-0400",
        "0 0 * * * ?",
        "2012-11-04T01:00:00-0400",
        Same,
    ),
    (
        "TZ=America/New_York 2012-11-04T01:00:00-0400",
        "0 0 * * * ?",
        "2012-11-04T01:00:00-0500",
        Differs("2012-11-04T02:00:00-0500", OVERLAP),
    ),
    (
        "TZ=America/New_York 2012-11-04T01:00:00-0500",
        "0 0 * * * ?",
        "2012-11-04T02:00:00-0500",
        Same,
    ),
    // 1am nightly job (runs twice)
    (
        "TZ=America/New_York 2012-11-04T00:00:00-0400",
        "0 0 1 * * ?",
        "2012-11-04T01:00:00-0400",
        Same,
    ),
    (
        "TZ=America/New_York 2012-11-04T01:00:00-0400",
        "0 0 1 * * ?",
        "2012-11-04T01:00:00-0500",
        Differs("2012-11-05T01:00:00-0500", OVERLAP),
    ),
    (
        "TZ=America/New_York 2012-11-04T01:00:00-0500",
        "0 0 1 * * ?",
        "2012-11-05T01:00:00-0500",
        Same,
    ),
    // 2am nightly job
    (
        "TZ=America/New_York 2012-11-04T00:00:00-0400",
        "0 0 2 * * ?",
        "2012-11-04T02:00:00-0500",
        Same,
    ),
    (
        "TZ=America/New_York 2012-11-04T02:00:00-0500",
        "0 0 2 * * ?",
        "2012-11-05T02:00:00-0500",
        Same,
    ),
    // 3am nightly job
    (
        "TZ=America/New_York 2012-11-04T00:00:00-0400",
        "0 0 3 * * ?",
        "2012-11-04T03:00:00-0500",
        Same,
    ),
    (
        "TZ=America/New_York 2012-11-04T03:00:00-0500",
        "0 0 3 * * ?",
        "2012-11-05T03:00:00-0500",
        Same,
    ),
    // Unsatisfiable (`CronSchedule` agrees: no match; a gate rejects the window, see below)
    ("Mon Jul 9 23:35 2012", "0 0 0 30 Feb ?", "", Same),
    ("Mon Jul 9 23:35 2012", "0 0 0 31 Apr ?", "", Same),
    // Monthly job
    (
        "TZ=America/New_York 2012-11-04T00:00:00-0400",
        "0 0 3 3 * ?",
        "2012-12-03T03:00:00-0500",
        Same,
    ),
    // Test the scenario of DST resulting in midnight not being a valid time.
    // https://github.com/robfig/cron/issues/157
    (
        "2018-10-17T05:00:00-0400",
        "TZ=America/Sao_Paulo 0 0 9 10 * ?",
        "2018-11-10T06:00:00-0500",
        Same,
    ),
    (
        "2018-02-14T05:00:00-0500",
        "TZ=America/Sao_Paulo 0 0 9 22 * ?",
        "2018-02-22T07:00:00-0500",
        Same,
    ),
];

/// `TestNextWithTz`: 5-field specs read in the zone of the given time (+05:30 = Asia/Kolkata).
/// robfig's "Failing tests" comment is historical; all four pass there.
pub(crate) const NEXT_WITH_TZ: &[(&str, &str, &str)] = &[
    (
        "2016-01-03T13:09:03+0530",
        "14 14 * * *",
        "2016-01-03T14:14:00+0530",
    ),
    (
        "2016-01-03T04:09:03+0530",
        "14 14 * * ?",
        "2016-01-03T14:14:00+0530",
    ),
    (
        "2016-01-03T14:09:03+0530",
        "14 14 * * *",
        "2016-01-03T14:14:00+0530",
    ),
    (
        "2016-01-03T14:00:00+0530",
        "14 14 * * ?",
        "2016-01-03T14:14:00+0530",
    ),
];

/// `TestErrors` and `TestSlash0NoHang`: rejected by robfig, and by us.
pub(crate) const ERRORS: &[&str] = &[
    "xyz",
    "60 0 * * *",
    "0 60 * * *",
    "0 0 * * XYZ",
    "TZ=America/New_York 15/0 * * * *",
];
