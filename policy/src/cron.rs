//! A standard 5-field cron dialect (minute hour day-of-month month day-of-week) with names,
//! ranges, steps and lists, matched on wall-clock minutes. The next match is found by skipping
//! whole months, days and hours, never by scanning minute by minute.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::PolicyError;

/// A parsed cron expression. `0` and `7` both mean Sunday. When both day-of-month and
/// day-of-week are restricted (neither contains a `*` element), a day matches if either does;
/// otherwise both must (the Vixie cron and Kubernetes CronJob rule).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CronSchedule {
    pub(crate) minutes: u64,
    pub(crate) hours: u32,
    pub(crate) days_of_month: u32,
    pub(crate) months: u16,
    pub(crate) days_of_week: u8,
    pub(crate) dom_star: bool,
    pub(crate) dow_star: bool,
}

struct FieldSpec {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [FieldSpec; 5] = [
    FieldSpec {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    FieldSpec {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    FieldSpec {
        name: "day-of-month",
        min: 1,
        max: 31,
        names: &[],
    },
    FieldSpec {
        name: "month",
        min: 1,
        max: 12,
        names: &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ],
    },
    FieldSpec {
        name: "day-of-week",
        min: 0,
        max: 7,
        names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    },
];

impl CronSchedule {
    /// Parses a 5-field expression or one of `@yearly`/`@annually`, `@monthly`, `@weekly`,
    /// `@daily`/`@midnight`, `@hourly`. Errors name the field:
    /// `invalid cron field 'day-of-week': value 8 out of range 0-7`.
    pub fn parse(expr: &str) -> Result<CronSchedule, PolicyError> {
        let expanded = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            other => other,
        };
        let parts: Vec<&str> = expanded.split_whitespace().collect();
        if parts.len() != 5 {
            return Err(PolicyError::new(
                "",
                format!(
                    "invalid cron expression '{expr}': expected 5 fields (minute hour day-of-month month day-of-week), got {}",
                    parts.len()
                ),
            ));
        }
        let mut bits = [0u64; 5];
        let mut stars = [false; 5];
        for (i, (part, spec)) in parts.iter().zip(FIELDS.iter()).enumerate() {
            let (b, star) = parse_field(part, spec).map_err(|m| {
                PolicyError::new("", format!("invalid cron field '{}': {m}", spec.name))
            })?;
            bits[i] = b;
            stars[i] = star;
        }
        // Sunday is 0 and 7; fold 7 onto 0.
        let dow = (bits[4] | (bits[4] >> 7)) & 0x7f;
        Ok(CronSchedule {
            minutes: bits[0],
            hours: bits[1] as u32,
            days_of_month: bits[2] as u32,
            months: bits[3] as u16,
            days_of_week: dow as u8,
            dom_star: stars[2],
            dow_star: stars[4],
        })
    }

    /// Whether the wall-clock minute `t` matches (seconds are ignored).
    pub fn matches(&self, t: NaiveDateTime) -> bool {
        self.month_matches(t.date())
            && self.day_matches(t.date())
            && self.hours & (1 << t.hour()) != 0
            && self.minutes & (1 << t.minute()) != 0
    }

    fn month_matches(&self, d: NaiveDate) -> bool {
        self.months & (1 << d.month()) != 0
    }

    fn day_matches(&self, d: NaiveDate) -> bool {
        let dom = self.days_of_month & (1 << d.day()) != 0;
        let dow = self.days_of_week & (1 << d.weekday().num_days_from_sunday()) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first matching wall-clock minute at or after `from` (rounded up to a whole minute)
    /// and not after `limit`.
    pub fn next_at_or_after(
        &self,
        from: NaiveDateTime,
        limit: NaiveDateTime,
    ) -> Option<NaiveDateTime> {
        let mut t = from.with_nanosecond(0)?;
        if t.second() != 0 {
            t = t.with_second(0)? + Duration::minutes(1);
        }
        while t <= limit {
            let date = t.date();
            if !self.month_matches(date) {
                let (y, m) = if date.month() == 12 {
                    (date.year() + 1, 1)
                } else {
                    (date.year(), date.month() + 1)
                };
                t = NaiveDate::from_ymd_opt(y, m, 1)?.and_time(NaiveTime::MIN);
                continue;
            }
            if !self.day_matches(date) {
                t = date.succ_opt()?.and_time(NaiveTime::MIN);
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            let later_minutes = self.minutes >> t.minute();
            if later_minutes == 0 {
                t = t.with_minute(0)? + Duration::hours(1);
                continue;
            }
            return Some(t + Duration::minutes(i64::from(later_minutes.trailing_zeros())));
        }
        None
    }

    /// Every matching wall-clock minute in `[from, to]`, in order.
    pub fn matches_between(&self, from: NaiveDateTime, to: NaiveDateTime) -> Vec<NaiveDateTime> {
        let mut out = Vec::new();
        let mut cursor = from;
        while let Some(t) = self.next_at_or_after(cursor, to) {
            out.push(t);
            cursor = t + Duration::minutes(1);
        }
        out
    }
}

/// Parses one field to a bit set (bit n = value n) and whether it contains a `*` element.
fn parse_field(field: &str, spec: &FieldSpec) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for element in field.split(',') {
        if element.is_empty() {
            return Err(format!("empty list element in '{field}'"));
        }
        let (range, step) = match element.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| format!("invalid step '{s}' in '{element}'"))?;
                if step == 0 || step > spec.max {
                    return Err(format!(
                        "step {step} out of range 1-{} in '{element}'",
                        spec.max
                    ));
                }
                (r, Some(step))
            }
            None => (element, None),
        };
        let (lo, hi) = if range == "*" {
            star = true;
            // For day-of-week `*` means 0-6; 7 would only duplicate Sunday.
            (spec.min, if spec.max == 7 { 6 } else { spec.max })
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(a, spec)?, value(b, spec)?);
            if a > b {
                return Err(format!("range start {a} after end {b} in '{element}'"));
            }
            (a, b)
        } else {
            let a = value(range, spec)?;
            // `5/15` means from 5 to the maximum in steps of 15.
            (a, if step.is_some() { spec.max } else { a })
        };
        let step = step.unwrap_or(1);
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

fn value(s: &str, spec: &FieldSpec) -> Result<u32, String> {
    if let Some(i) = spec.names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
        return Ok(spec.min + i as u32);
    }
    let v: u32 = s.parse().map_err(|_| {
        if spec.names.is_empty() {
            format!("invalid value '{s}'")
        } else {
            format!(
                "invalid value '{s}' (use {}-{} or {}…{})",
                spec.min,
                spec.max,
                spec.names[0],
                spec.names[spec.names.len() - 1]
            )
        }
    })?;
    if v < spec.min || v > spec.max {
        return Err(format!("value {v} out of range {}-{}", spec.min, spec.max));
    }
    Ok(v)
}
