//! Wall-clock time to instants with the DST rule every window uses: a local time inside a gap
//! moves later by the gap's length (02:30 → 03:30), an ambiguous one means the earlier instant.
//! Also parsing of the local date-times the manifest uses (`2026-12-20T00:00:00`).

use chrono::{DateTime, Datelike, LocalResult, NaiveDate, NaiveDateTime, Offset, TimeZone, Utc};
use chrono_tz::Tz;

use crate::PolicyError;

/// The instant the wall-clock time `local` in `tz` denotes. In a DST gap the offset in effect
/// before the gap applies, which moves the time later by the gap's length (RFC 5545 §3.3.5);
/// in an overlap the earlier instant wins.
pub fn resolve_local(tz: Tz, local: NaiveDateTime) -> DateTime<Utc> {
    match tz.offset_from_local_datetime(&local) {
        LocalResult::Single(offset) => local_minus(local, offset.fix().local_minus_utc()),
        LocalResult::Ambiguous(a, b) => {
            let (a, b) = (
                local_minus(local, a.fix().local_minus_utc()),
                local_minus(local, b.fix().local_minus_utc()),
            );
            a.min(b)
        }
        LocalResult::None => {
            // Walk back to the last wall time before the gap; gaps are at most a day (Apia 2011).
            let mut probe = local;
            for _ in 0..(4 * 48) {
                probe -= chrono::Duration::minutes(15);
                if let Some(offset) = tz.offset_from_local_datetime(&probe).latest() {
                    return local_minus(local, offset.fix().local_minus_utc());
                }
            }
            // No zone has a gap this long; treat the time as UTC rather than fail.
            local.and_utc()
        }
    }
}

fn local_minus(local: NaiveDateTime, offset_seconds: i32) -> DateTime<Utc> {
    (local - chrono::Duration::seconds(i64::from(offset_seconds))).and_utc()
}

/// The wall-clock time of `t` in `tz`.
pub(crate) fn to_local(tz: Tz, t: DateTime<Utc>) -> NaiveDateTime {
    t.with_timezone(&tz).naive_local()
}

/// Parses an IANA zone name (`Europe/Berlin`, `UTC`).
pub(crate) fn parse_zone(name: &str) -> Result<Tz, PolicyError> {
    name.parse::<Tz>().map_err(|_| {
        PolicyError::new(
            "",
            format!("unknown time zone '{name}' (use an IANA name such as Europe/Berlin)"),
        )
    })
}

/// A manifest date-time: local wall time (`2026-12-20T00:00:00`, `2026-12-20T00:00`,
/// `2026-12-20`), or an absolute RFC 3339 time with offset (`2026-12-20T00:00:00Z`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ManifestTime {
    Local(NaiveDateTime),
    Absolute(DateTime<Utc>),
}

impl ManifestTime {
    pub(crate) fn parse(s: &str) -> Result<ManifestTime, PolicyError> {
        let parsed = Self::parse_any_year(s)?;
        let year = match parsed {
            ManifestTime::Local(t) => t.year(),
            ManifestTime::Absolute(t) => t.year(),
        };
        // Recurrences are expanded from their start; a start centuries back would make every
        // evaluation walk them. No gate needs times outside this range.
        if !(1970..=2200).contains(&year) {
            return Err(PolicyError::new(
                "",
                format!("date-time '{}' is outside the years 1970-2200", s.trim()),
            ));
        }
        Ok(parsed)
    }

    fn parse_any_year(s: &str) -> Result<ManifestTime, PolicyError> {
        let s = s.trim();
        if let Ok(t) = DateTime::parse_from_rfc3339(s) {
            return Ok(ManifestTime::Absolute(t.with_timezone(&Utc)));
        }
        for format in [
            "%Y-%m-%dT%H:%M:%S",
            "%Y-%m-%dT%H:%M",
            "%Y-%m-%d %H:%M:%S",
            "%Y-%m-%d %H:%M",
        ] {
            if let Ok(t) = NaiveDateTime::parse_from_str(s, format) {
                return Ok(ManifestTime::Local(t));
            }
        }
        if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
            return Ok(ManifestTime::Local(d.and_time(chrono::NaiveTime::MIN)));
        }
        Err(PolicyError::new(
            "",
            format!(
                "invalid date-time '{s}' (expected local time like 2026-12-20T00:00:00, or RFC 3339 with an offset)"
            ),
        ))
    }

    /// The instant, resolving local times in `tz` with the DST rule.
    pub(crate) fn instant(self, tz: Tz) -> DateTime<Utc> {
        match self {
            ManifestTime::Local(local) => resolve_local(tz, local),
            ManifestTime::Absolute(t) => t,
        }
    }
}

/// Formats `t` for a reason: `14:30 UTC` when it falls on the same local day as `now`, else
/// `Mon 2026-11-30 00:00 CET`.
pub(crate) fn format_until(tz: Tz, t: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let local = t.with_timezone(&tz);
    if local.date_naive() == now.with_timezone(&tz).date_naive() {
        local.format("%H:%M %Z").to_string()
    } else {
        local.format("%a %Y-%m-%d %H:%M %Z").to_string()
    }
}
