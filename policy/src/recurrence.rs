//! RFC 5545 recurrence rules expanded in wall-clock terms: the `rrule` crate expands with a
//! UTC `DTSTART` that holds the local wall time, and each instance is then mapped to an instant
//! in the window's zone with the same DST rule as cron starts.

use std::str::FromStr;

use chrono::{Duration, NaiveDateTime, TimeZone};
use rrule::{Frequency, RRule, RRuleSet, Unvalidated};

use crate::PolicyError;

/// The largest COUNT accepted.
const MAX_COUNT: u32 = 10_000;

/// A validated RRULE anchored at a wall-clock `DTSTART`.
#[derive(Debug, Clone)]
pub(crate) struct Recurrence {
    rule: RRule<Unvalidated>,
    set: RRuleSet,
    pub(crate) dtstart: NaiveDateTime,
    /// The fixed length of one recurrence period (INTERVAL × FREQ) when the rule may be
    /// re-anchored closer to a query: expansion always starts at DTSTART, and an hourly rule
    /// from years ago would otherwise be walked instance by instance on every query.
    period: Option<Duration>,
}

impl Recurrence {
    /// Parses `rule` (`FREQ=MONTHLY;BYDAY=2TU`, an optional `RRULE:` prefix is allowed) anchored
    /// at `dtstart`. `UNTIL`, like `dtstart`, is wall-clock time in the window's zone; a trailing
    /// `Z` is accepted and means the same. Errors carry an empty path.
    pub(crate) fn parse(rule: &str, dtstart: NaiveDateTime) -> Result<Recurrence, PolicyError> {
        let err = |m: String| PolicyError::new("", format!("invalid rrule '{rule}': {m}"));
        let body = rule.trim();
        let body = body.strip_prefix("RRULE:").unwrap_or(body);
        if body.contains('\n') || body.to_ascii_uppercase().contains("DTSTART") {
            return Err(err(
                "give one RRULE value; DTSTART goes in the 'dtstart' field".into(),
            ));
        }
        // Make UNTIL a UTC value so it compares with our UTC-held wall times.
        let body: String = body
            .split(';')
            .map(|part| match part.split_once('=') {
                Some((k, v))
                    if k.eq_ignore_ascii_case("UNTIL") && v.contains('T') && !v.ends_with('Z') =>
                {
                    format!("{k}={v}Z")
                }
                _ => part.to_string(),
            })
            .collect::<Vec<_>>()
            .join(";");
        let parsed = RRule::<Unvalidated>::from_str(&body).map_err(|e| err(e.to_string()))?;
        if parsed.get_interval() == 0 {
            return Err(err("INTERVAL must be at least 1".into()));
        }
        if parsed.get_freq() == Frequency::Secondly {
            return Err(err(
                "FREQ=SECONDLY is finer than windows resolve (minutes)".into()
            ));
        }
        // A COUNT rule is expanded from DTSTART on every query; keep that walk short.
        if parsed.get_count().is_some_and(|c| c > MAX_COUNT) {
            return Err(err(format!("COUNT above {MAX_COUNT}; use UNTIL or no end")));
        }
        let start = rrule::Tz::UTC.from_utc_datetime(&dtstart);
        let set = parsed
            .clone()
            .build(start)
            .map_err(|e| err(e.to_string()))?;
        let unit = match parsed.get_freq() {
            Frequency::Weekly => Some(Duration::weeks(1)),
            Frequency::Daily => Some(Duration::days(1)),
            Frequency::Hourly => Some(Duration::hours(1)),
            Frequency::Minutely => Some(Duration::minutes(1)),
            Frequency::Secondly => Some(Duration::seconds(1)),
            // Months and years differ in length; they are few enough to walk.
            Frequency::Monthly | Frequency::Yearly => None,
        };
        // COUNT numbers instances from DTSTART, so such rules cannot be re-anchored.
        let period = unit
            .filter(|_| parsed.get_count().is_none())
            .map(|u| u * i32::from(parsed.get_interval().max(1)));
        Ok(Recurrence {
            rule: parsed,
            set,
            dtstart,
            period,
        })
    }

    /// The rule expanded from a DTSTART moved forward by whole periods to before `from`. Whole
    /// periods keep the grid (and the time of day, weekday, minute the rule takes from DTSTART),
    /// so every instance from the new anchor on is unchanged. `Some(None)`: the rule ended
    /// (UNTIL) before the anchor, so nothing is left from `from` on.
    fn anchored_before(&self, from: NaiveDateTime) -> Option<Option<RRuleSet>> {
        let period = self.period?.num_seconds().max(1);
        let periods = (from - self.dtstart).num_seconds() / period - 1;
        if periods < 2 {
            return None;
        }
        let anchor = self
            .dtstart
            .checked_add_signed(Duration::seconds(period.checked_mul(periods)?))?;
        if self
            .rule
            .get_until()
            .is_some_and(|u| u.naive_utc() < anchor)
        {
            return Some(None);
        }
        let start = rrule::Tz::UTC.from_utc_datetime(&anchor);
        self.rule.clone().build(start).ok().map(Some)
    }

    /// Wall-clock instance times in `[from, to]`, in order.
    pub(crate) fn between(&self, from: NaiveDateTime, to: NaiveDateTime) -> Vec<NaiveDateTime> {
        let mut out = Vec::new();
        if to < self.dtstart {
            return out;
        }
        let anchored = match self.anchored_before(from) {
            Some(None) => return out,
            Some(Some(set)) => Some(set),
            None => None,
        };
        for instance in anchored.as_ref().unwrap_or(&self.set) {
            let local = instance.naive_utc();
            if local > to {
                break;
            }
            if local >= from {
                out.push(local);
            }
        }
        out
    }
}
