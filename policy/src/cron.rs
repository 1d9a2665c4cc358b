//! The 5-field cron dialect of Kubernetes CronJob (robfig/cron v3's standard parser): minute
//! hour day-of-month month day-of-week with names, ranges, steps and lists, matched on
//! wall-clock minutes. The next match is found by skipping whole months, days and hours, never
//! by scanning minute by minute. The dialect fleetgate used before (Vixie cron's day rule) is
//! kept as a second reading so a stored expression whose meaning changed can be pointed out.

use chrono::{Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

use crate::PolicyError;

/// A parsed cron expression, read the way Kubernetes CronJob reads it (robfig/cron v3):
/// - a day field counts as unrestricted ("star") only when one of its elements is `*` or `?`
///   with no step or a step of 1 (`*`, `?`, `*/1`); `*/2`, `1-31`, `1/2` are restricted;
/// - when both day fields are restricted a day matches if **either** matches, otherwise both
///   must (`0 0 */2 * MON` = every odd day and every Monday);
/// - `a/n` runs from `a` to the field's maximum, which for day-of-week is 6 (Saturday), so
///   `MON/2` is Mon, Wed, Fri.
///
/// Beyond robfig (which rejects them) `7` is accepted as Sunday where it is written (`7`, `5-7`,
/// `1-7/2` = Mon, Wed, Fri, Sun), as croniter and Vixie cron read it.
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

/// How an expression is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Kubernetes CronJob / robfig/cron v3: what windows are evaluated with.
    Kubernetes,
    /// fleetgate before the switch: a day field containing any `*` element (also `*/2`) was
    /// unrestricted, `a/n` in day-of-week ran to 7 (so `MON/2` added Sunday), `?` and steps
    /// beyond the field's maximum were rejected. Only read to warn about changed meanings.
    Legacy,
}

struct FieldSpec {
    name: &'static str,
    min: u32,
    /// The largest value that may be written.
    max: u32,
    /// Where `*` and `a/n` end: the maximum, except day-of-week's 6 (7 only repeats Sunday).
    last: u32,
    names: &'static [&'static str],
}

const FIELDS: [FieldSpec; 5] = [
    FieldSpec {
        name: "minute",
        min: 0,
        max: 59,
        last: 59,
        names: &[],
    },
    FieldSpec {
        name: "hour",
        min: 0,
        max: 23,
        last: 23,
        names: &[],
    },
    FieldSpec {
        name: "day-of-month",
        min: 1,
        max: 31,
        last: 31,
        names: &[],
    },
    FieldSpec {
        name: "month",
        min: 1,
        max: 12,
        last: 12,
        names: &[
            "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
        ],
    },
    FieldSpec {
        name: "day-of-week",
        min: 0,
        max: 7,
        last: 6,
        names: &["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"],
    },
];

const DAY_OF_WEEK: usize = 4;

impl CronSchedule {
    /// Parses a 5-field expression or one of `@yearly`/`@annually`, `@monthly`, `@weekly`,
    /// `@daily`/`@midnight`, `@hourly`. Errors name the field:
    /// `invalid cron field 'day-of-week': value 8 out of range 0-7`.
    pub fn parse(expr: &str) -> Result<CronSchedule, PolicyError> {
        Self::parse_as(expr, Dialect::Kubernetes)
    }

    pub(crate) fn parse_as(expr: &str, dialect: Dialect) -> Result<CronSchedule, PolicyError> {
        let expanded = match expr.trim() {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            every if every.starts_with("@every") => {
                // robfig's `@every 1h` counts from when the scheduler started; a window needs
                // starts fixed in the calendar.
                return Err(PolicyError::new(
                    "",
                    format!(
                        "invalid cron expression '{expr}': @every has no fixed start; use a 5-field schedule or an rrule"
                    ),
                ));
            }
            zoned if zoned.starts_with("TZ=") || zoned.starts_with("CRON_TZ=") => {
                // Kubernetes rejects these too and has `spec.timeZone`; so do we (`timeZone`).
                return Err(PolicyError::new(
                    "",
                    format!(
                        "invalid cron expression '{expr}': give the zone in the window's or gate's timeZone, not as TZ= in the schedule"
                    ),
                ));
            }
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
            let (b, star) = parse_field(part, spec, dialect).map_err(|m| {
                PolicyError::new("", format!("invalid cron field '{}': {m}", spec.name))
            })?;
            bits[i] = b;
            stars[i] = star;
        }
        // Sunday is 0 and 7; fold 7 onto 0.
        let dow = (bits[DAY_OF_WEEK] | (bits[DAY_OF_WEEK] >> 7)) & 0x7f;
        Ok(CronSchedule {
            minutes: bits[0],
            hours: bits[1] as u32,
            days_of_month: bits[2] as u32,
            months: bits[3] as u16,
            days_of_week: dow as u8,
            dom_star: stars[2],
            dow_star: stars[DAY_OF_WEEK],
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

    pub(crate) fn day_matches(&self, d: NaiveDate) -> bool {
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

/// Parses one field to a bit set (bit n = value n) and whether it counts as unrestricted for
/// the day rule (see [`Dialect`]).
fn parse_field(field: &str, spec: &FieldSpec, dialect: Dialect) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for element in field.split(',') {
        if element.is_empty() {
            return Err(format!("empty list element in '{field}'"));
        }
        let (range, step) = match element.split_once('/') {
            Some((r, s)) => (r, Some(parse_step(s, element, spec, dialect)?)),
            None => (element, None),
        };
        let any = range == "*" || (range == "?" && dialect == Dialect::Kubernetes);
        let (lo, hi) = if any {
            // robfig (`getRange`): `if step > 1 { extra = 0 }` - only an unstepped `*` or `?`
            // (or `*/1`) leaves the field unrestricted.
            star |= match dialect {
                Dialect::Kubernetes => step.is_none_or(|s| s == 1),
                Dialect::Legacy => true,
            };
            (spec.min, spec.last)
        } else if let Some((a, b)) = range.split_once('-') {
            let (a, b) = (value(a, spec)?, value(b, spec)?);
            if a > b {
                return Err(format!("range start {a} after end {b} in '{element}'"));
            }
            (a, b)
        } else {
            let a = value(range, spec)?;
            match (step, dialect) {
                (None, _) => (a, a),
                // `5/15` means from 5 to the last value in steps of 15; day-of-week ends on
                // Saturday, and `7/n` starts on Sunday like `0/n` (croniter; robfig rejects 7).
                (Some(_), Dialect::Kubernetes) => (a % (spec.last + 1), spec.last),
                (Some(_), Dialect::Legacy) => (a, spec.max),
            }
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

/// A step: robfig accepts any positive step (`*/90` in minutes is `0`); the old dialect
/// stopped at the field's maximum.
fn parse_step(s: &str, element: &str, spec: &FieldSpec, dialect: Dialect) -> Result<u32, String> {
    let step: u32 = s
        .parse()
        .map_err(|_| format!("invalid step '{s}' in '{element}'"))?;
    if step == 0 {
        return Err(format!("step 0 in '{element}' (a step is 1 or more)"));
    }
    if dialect == Dialect::Legacy && step > spec.max {
        return Err(format!("step {step} above {} in '{element}'", spec.max));
    }
    // Any step past 63 selects only the first value of these fields; bounding it keeps the
    // bit loop from overflowing.
    Ok(step.min(64))
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
