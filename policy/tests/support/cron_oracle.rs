//! The test oracle's own reading of cron, written from the rules rather than from
//! `policy/src/cron.rs`: each field becomes a plain set of allowed values, and a wall-clock
//! minute matches when every field allows it. The rules are Kubernetes CronJob's (robfig/cron
//! v3, `parser.go` `getRange` and `spec.go` `dayMatches`), plus `7` as Sunday where written.

use std::collections::BTreeSet;

use chrono::{Datelike, NaiveDateTime, Timelike};

/// A cron expression as sets of allowed values.
#[derive(Debug, Clone)]
pub struct OracleCron {
    minute: BTreeSet<u32>,
    hour: BTreeSet<u32>,
    day: BTreeSet<u32>,
    month: BTreeSet<u32>,
    /// 0 = Sunday … 6 = Saturday (a written 7 is stored as 0).
    weekday: BTreeSet<u32>,
    /// Whether the field holds an element `*` or `?` with no step or step 1.
    day_any: bool,
    weekday_any: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

impl OracleCron {
    /// `None` when the expression is not valid in the dialect.
    pub fn parse(expr: &str) -> Option<OracleCron> {
        // robfig's descriptors (parser.go `parseDescriptor`) written as fields.
        let fields = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let f: Vec<&str> = fields.split_whitespace().collect();
        if f.len() != 5 {
            return None;
        }
        let (minute, _) = field(f[0], 0, 59, 59, &[])?;
        let (hour, _) = field(f[1], 0, 23, 23, &[])?;
        let (day, day_any) = field(f[2], 1, 31, 31, &[])?;
        let (month, _) = field(f[3], 1, 12, 12, &MONTHS)?;
        let (weekday, weekday_any) = field(f[4], 0, 7, 6, &WEEKDAYS)?;
        let weekday = weekday.into_iter().map(|d| d % 7).collect();
        Some(OracleCron {
            minute,
            hour,
            day,
            month,
            weekday,
            day_any,
            weekday_any,
        })
    }

    /// Whether the day `t` falls on is one the expression fires on (month and day rule).
    pub fn day_matches(&self, t: NaiveDateTime) -> bool {
        let day = self.day.contains(&t.day());
        let weekday = self.weekday.contains(&t.weekday().num_days_from_sunday());
        let by_day = if self.day_any || self.weekday_any {
            day && weekday
        } else {
            day || weekday
        };
        self.month.contains(&t.month()) && by_day
    }

    /// Whether the wall-clock minute `t` matches.
    pub fn matches(&self, t: NaiveDateTime) -> bool {
        self.day_matches(t) && self.hour.contains(&t.hour()) && self.minute.contains(&t.minute())
    }
}

/// One field: a comma list of `*`, `?`, `v`, `a-b`, each optionally `/step`. `last` is where
/// `*` and `a/step` stop (day-of-week: Saturday, although 7 may be written).
fn field(
    text: &str,
    min: u32,
    max: u32,
    last: u32,
    names: &[&str],
) -> Option<(BTreeSet<u32>, bool)> {
    let number = |s: &str| -> Option<u32> {
        let v = match names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            Some(i) => min + i as u32,
            None => s.parse().ok()?,
        };
        (min..=max).contains(&v).then_some(v)
    };
    let mut set = BTreeSet::new();
    let mut any = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(s.parse::<u32>().ok().filter(|s| *s > 0)?)),
            None => (part, None),
        };
        let (from, to) = if range == "*" || range == "?" {
            any |= step.unwrap_or(1) == 1;
            (min, last)
        } else if let Some((a, b)) = range.split_once('-') {
            (number(a)?, number(b)?)
        } else if step.is_some() {
            // `7/n` begins on Sunday like `0/n`.
            let a = number(range)?;
            (if a > last { min } else { a }, last)
        } else {
            let a = number(range)?;
            (a, a)
        };
        if from > to {
            return None;
        }
        set.extend((from..=to).step_by(step.unwrap_or(1) as usize));
    }
    Some((set, any))
}
