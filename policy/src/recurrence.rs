//! RFC 5545 recurrence rules expanded in wall-clock terms: the `rrule` crate expands with a
//! UTC `DTSTART` that holds the local wall time, and each instance is then mapped to an instant
//! in the window's zone with the same DST rule as cron starts.

use std::str::FromStr;

use chrono::{NaiveDateTime, TimeZone};
use rrule::{RRule, RRuleSet, Unvalidated};

use crate::PolicyError;

/// A validated RRULE anchored at a wall-clock `DTSTART`.
#[derive(Debug, Clone)]
pub(crate) struct Recurrence {
    set: RRuleSet,
    pub(crate) dtstart: NaiveDateTime,
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
        let start = rrule::Tz::UTC.from_utc_datetime(&dtstart);
        let set = parsed.build(start).map_err(|e| err(e.to_string()))?;
        Ok(Recurrence { set, dtstart })
    }

    /// Wall-clock instance times in `[from, to]`, in order.
    pub(crate) fn between(&self, from: NaiveDateTime, to: NaiveDateTime) -> Vec<NaiveDateTime> {
        let mut out = Vec::new();
        if to < self.dtstart {
            return out;
        }
        for instance in &self.set {
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
