//! Reading calendar text the way every gate uses it, fail closed: the one function that turns
//! feed bytes (or inline `ics`) into occurrences over a range, for the hub, the CLI's offline
//! preview and the spoke (inline windows). A text that is over its budget, not iCalendar,
//! truncated, has one event that cannot be read, or expands past its budgets is refused as a
//! whole: skipping the bad part of a `deny` calendar would open a gate.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use chrono_tz::Tz;

use super::EventMatch;
use super::expand::{CalendarIssue, ExpandedCalendar, expand_bounded};
use super::lines::{split_property, unfold};
use crate::budgets::{
    CALENDAR_MAX_BYTES, CALENDAR_MAX_EVENTS, CALENDAR_MAX_INSTANCES, CALENDAR_MAX_OCCURRENCES,
    CALENDAR_MIN_RECURRENCE, OCCURRENCE_SUMMARY_MAX_BYTES,
};

/// Why a calendar text was refused as a whole. `Display` is a sentence for people (the feed's
/// `error`, the manifest field's message).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CalendarRefusal {
    /// Over [`CALENDAR_MAX_BYTES`].
    TooLarge { bytes: usize },
    /// Not UTF-8.
    NotUtf8,
    /// Nothing but whitespace.
    Empty,
    /// An HTML page (a login or error page served instead of the feed).
    Html,
    /// JSON (an API's error answer).
    Json,
    /// Does not start with `BEGIN:VCALENDAR`.
    NotICalendar { line: usize, starts: String },
    /// The text ends inside a component: truncated (a cut transfer, a full disk).
    Truncated { component: String, begin: usize },
    /// An `END:` that closes another component than the one open.
    Mismatched {
        line: usize,
        expected: String,
        found: String,
    },
    /// Text after the closing `END:VCALENDAR` (a second calendar, or garbage).
    AfterEnd { line: usize },
    /// A line that is not `NAME[;PARAMS]:VALUE`.
    NotAProperty { line: usize },
    /// More VEVENTs than [`CALENDAR_MAX_EVENTS`].
    TooManyEvents { events: usize },
    /// A rule that repeats more often than [`CALENDAR_MIN_RECURRENCE`].
    TooFrequent { line: usize, rule: String },
    /// An event that cannot be read (the first; `more` others).
    Event { issue: CalendarIssue, more: usize },
    /// The text as a whole cannot be read (calcard refused it).
    Unreadable(CalendarIssue),
    /// Expansion reached [`CALENDAR_MAX_INSTANCES`].
    TooManyInstances,
    /// More than [`CALENDAR_MAX_OCCURRENCES`] occurrences in the horizon.
    TooManyOccurrences { occurrences: usize },
}

impl fmt::Display for CalendarRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use CalendarRefusal as R;
        match self {
            R::TooLarge { bytes } => write!(
                f,
                "{bytes} bytes, over the budget of {CALENDAR_MAX_BYTES} bytes for a calendar"
            ),
            R::NotUtf8 => f.write_str("not a usable iCalendar: not UTF-8 text"),
            R::Empty => f.write_str("not a usable iCalendar: the body is empty"),
            R::Html => f.write_str(
                "not a usable iCalendar: an HTML page (a login or error page?), not text/calendar",
            ),
            R::Json => f.write_str("not a usable iCalendar: JSON, not text/calendar"),
            R::NotICalendar { line, starts } => write!(
                f,
                "not a usable iCalendar: it must start with BEGIN:VCALENDAR (line {line} reads '{starts}')"
            ),
            R::Truncated { component, .. } if component == "VCALENDAR" => {
                f.write_str("not a usable iCalendar: no END:VCALENDAR (truncated?)")
            }
            R::Truncated { component, begin } => write!(
                f,
                "not a usable iCalendar: no END:VCALENDAR; the text ends inside the {component} that begins at line {begin} (truncated?)"
            ),
            R::Mismatched {
                line,
                expected,
                found,
            } => write!(
                f,
                "not a usable iCalendar: line {line}: END:{found} where END:{expected} was expected"
            ),
            R::AfterEnd { line } => write!(
                f,
                "not a usable iCalendar: line {line}: text after END:VCALENDAR"
            ),
            R::NotAProperty { line } => write!(
                f,
                "not a usable iCalendar: line {line} is not a property (NAME:VALUE)"
            ),
            R::TooManyEvents { events } => write!(
                f,
                "has {events} events, over the budget of {CALENDAR_MAX_EVENTS}"
            ),
            R::TooFrequent { line, rule } => write!(
                f,
                "line {line}, RRULE: '{rule}' repeats more often than once an hour, which no gate calendar needs"
            ),
            R::Event { issue, more: 0 } => write!(f, "{issue}"),
            R::Event { issue, more } => write!(f, "{issue} (and {more} more)"),
            R::Unreadable(issue) => write!(f, "not a usable iCalendar: {issue}"),
            R::TooManyInstances => write!(
                f,
                "expands to more than {CALENDAR_MAX_INSTANCES} recurrence instances (counting those before the horizon and those EXDATE removes)"
            ),
            R::TooManyOccurrences { occurrences } => write!(
                f,
                "expands to more than {CALENDAR_MAX_OCCURRENCES} occurrences in the horizon ({occurrences})"
            ),
        }
    }
}

impl std::error::Error for CalendarRefusal {}

/// Reads `bytes` (a fetched feed or inline `ics`) into the occurrences overlapping
/// `[from, to)`, or refuses the text as a whole. Floating times and DATE values are read in
/// `tz`; `matcher` picks the events that count. What it returns has no `rejected` events, and
/// its summaries are cut to [`OCCURRENCE_SUMMARY_MAX_BYTES`].
pub fn read_calendar(
    bytes: &[u8],
    tz: Tz,
    matcher: Option<&EventMatch>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<ExpandedCalendar, CalendarRefusal> {
    if bytes.len() > CALENDAR_MAX_BYTES {
        return Err(CalendarRefusal::TooLarge { bytes: bytes.len() });
    }
    let text = std::str::from_utf8(bytes).map_err(|_| CalendarRefusal::NotUtf8)?;
    check_structure(text)?;
    let bounded = expand_bounded(text, tz, matcher, from, to, CALENDAR_MAX_INSTANCES)
        .map_err(CalendarRefusal::Unreadable)?;
    if !bounded.located {
        return Err(CalendarRefusal::Unreadable(super::expand::issue(
            0,
            "",
            "its components could not be told apart",
        )));
    }
    if bounded.limit_reached {
        return Err(CalendarRefusal::TooManyInstances);
    }
    let mut calendar = bounded.calendar;
    if let Some(first) = calendar.rejected.first() {
        return Err(CalendarRefusal::Event {
            issue: first.clone(),
            more: calendar.rejected.len() - 1,
        });
    }
    if calendar.occurrences.len() > CALENDAR_MAX_OCCURRENCES {
        return Err(CalendarRefusal::TooManyOccurrences {
            occurrences: calendar.occurrences.len(),
        });
    }
    let mut last: Option<(Arc<str>, Arc<str>)> = None;
    for o in &mut calendar.occurrences {
        if o.summary.len() <= OCCURRENCE_SUMMARY_MAX_BYTES {
            continue;
        }
        match &last {
            Some((long, short)) if Arc::ptr_eq(long, &o.summary) => o.summary = short.clone(),
            _ => {
                let short: Arc<str> = cut_summary(&o.summary).into();
                last = Some((o.summary.clone(), short.clone()));
                o.summary = short;
            }
        }
    }
    Ok(calendar)
}

/// `s` cut to [`OCCURRENCE_SUMMARY_MAX_BYTES`] at a character boundary, ending in `…`.
pub fn cut_summary(s: &str) -> String {
    if s.len() <= OCCURRENCE_SUMMARY_MAX_BYTES {
        return s.to_string();
    }
    let mut end = OCCURRENCE_SUMMARY_MAX_BYTES - '…'.len_utf8();
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// The text's shape before calcard reads it: one VCALENDAR, starting the text and closing it,
/// every BEGIN closed by its own END, property lines only, the event budget, and no rule that
/// repeats more often than [`CALENDAR_MIN_RECURRENCE`] (refused before anything is expanded).
fn check_structure(text: &str) -> Result<(), CalendarRefusal> {
    let start = text.trim_start_matches('\u{feff}').trim_start();
    if start.is_empty() {
        return Err(CalendarRefusal::Empty);
    }
    let head: String = start.chars().take(512).collect::<String>().to_lowercase();
    if head.starts_with('<') || head.contains("<html") || head.contains("<!doctype") {
        return Err(CalendarRefusal::Html);
    }
    if head.starts_with('{') || head.starts_with('[') {
        return Err(CalendarRefusal::Json);
    }
    let mut stack: Vec<(String, usize)> = Vec::new();
    let mut closed = false;
    let mut events = 0usize;
    let mut begun = false;
    for (line, logical) in unfold(text) {
        if logical.trim().trim_start_matches('\u{feff}').is_empty() {
            continue;
        }
        if closed {
            return Err(CalendarRefusal::AfterEnd { line });
        }
        let Some((name, _params, value)) = split_property(&logical) else {
            if !begun {
                return Err(not_icalendar(line, &logical));
            }
            return Err(CalendarRefusal::NotAProperty { line });
        };
        let value_upper = value.trim().to_ascii_uppercase();
        if !begun {
            if name != "BEGIN" || value_upper != "VCALENDAR" {
                return Err(not_icalendar(line, &logical));
            }
            begun = true;
        }
        match name.as_str() {
            "BEGIN" => {
                if value_upper == "VEVENT" {
                    events += 1;
                    if events > CALENDAR_MAX_EVENTS {
                        return Err(CalendarRefusal::TooManyEvents { events });
                    }
                }
                stack.push((value_upper, line));
            }
            "END" => {
                let Some((open, _)) = stack.pop() else {
                    return Err(CalendarRefusal::AfterEnd { line });
                };
                if open != value_upper {
                    return Err(CalendarRefusal::Mismatched {
                        line,
                        expected: open,
                        found: value_upper,
                    });
                }
                closed = stack.is_empty();
            }
            "RRULE" if too_frequent(&value_upper) => {
                return Err(CalendarRefusal::TooFrequent {
                    line,
                    rule: value.trim().chars().take(120).collect(),
                });
            }
            _ => {}
        }
    }
    match stack.pop() {
        // The innermost open component names where the text was cut.
        Some((component, begin)) => Err(CalendarRefusal::Truncated { component, begin }),
        None if !closed => Err(CalendarRefusal::Empty),
        None => Ok(()),
    }
}

fn not_icalendar(line: usize, logical: &str) -> CalendarRefusal {
    let starts: String = logical.chars().take(40).collect();
    CalendarRefusal::NotICalendar { line, starts }
}

/// Whether an RRULE value (upper-cased) repeats more often than [`CALENDAR_MIN_RECURRENCE`]:
/// `FREQ=SECONDLY`, `FREQ=MINUTELY` with an INTERVAL under the spacing, or several values in
/// `BYSECOND` or `BYMINUTE`.
fn too_frequent(rule: &str) -> bool {
    let part = |name: &str| {
        rule.split(';').find_map(|p| {
            let (k, v) = p.split_once('=')?;
            (k.trim() == name).then(|| v.trim())
        })
    };
    let interval: i64 = part("INTERVAL")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1);
    let unit = match part("FREQ") {
        Some("SECONDLY") => 1,
        Some("MINUTELY") => 60,
        _ => i64::MAX,
    };
    let several = |name| part(name).is_some_and(|v| v.split(',').count() > 1);
    unit.saturating_mul(interval) < CALENDAR_MIN_RECURRENCE.num_seconds()
        || several("BYSECOND")
        || several("BYMINUTE")
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn range() -> (DateTime<Utc>, DateTime<Utc>) {
        (
            Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
            Utc.with_ymd_and_hms(2027, 1, 1, 0, 0, 0).unwrap(),
        )
    }

    fn read(text: &str) -> Result<ExpandedCalendar, CalendarRefusal> {
        let (from, to) = range();
        read_calendar(text.as_bytes(), Tz::UTC, None, from, to)
    }

    const WEEKLY: &str = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nBEGIN:VEVENT\r\nUID:a\r\nSUMMARY:Freeze\r\nDTSTART:20260105T090000Z\r\nDURATION:PT2H\r\nRRULE:FREQ=WEEKLY;COUNT=10\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";

    #[test]
    fn a_good_calendar_is_read() {
        let c = read(WEEKLY).unwrap();
        assert_eq!(c.occurrences.len(), 10);
        assert!(c.rejected.is_empty());
    }

    /// The 253-byte feed of the report: refused before anything is expanded.
    #[test]
    fn secondly_is_refused_without_expanding() {
        let text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:x\r\nBEGIN:VEVENT\r\nUID:x\r\nDTSTART:20260101T000000Z\r\nDURATION:PT1S\r\nRRULE:FREQ=SECONDLY;INTERVAL=2\r\nSUMMARY:boom\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n";
        let e = read(text).unwrap_err();
        assert!(
            matches!(e, CalendarRefusal::TooFrequent { line: 8, .. }),
            "{e}"
        );
        assert!(e.to_string().contains("more often than once an hour"));
    }

    #[test]
    fn truncated_html_json_empty_are_refused() {
        let cut = &WEEKLY[..WEEKLY.find("END:VEVENT").unwrap()];
        let e = read(cut).unwrap_err();
        assert!(
            matches!(e, CalendarRefusal::Truncated { ref component, begin: 3 } if component == "VEVENT")
        );
        assert!(e.to_string().contains("no END:VCALENDAR"), "{e}");
        let no_end = WEEKLY.replace("END:VCALENDAR\r\n", "");
        assert_eq!(
            read(&no_end).unwrap_err().to_string(),
            "not a usable iCalendar: no END:VCALENDAR (truncated?)"
        );
        assert_eq!(
            read("<!DOCTYPE html><html><body>Sign in</body></html>").unwrap_err(),
            CalendarRefusal::Html
        );
        assert_eq!(
            read("{\"error\":\"nope\"}").unwrap_err(),
            CalendarRefusal::Json
        );
        assert_eq!(read("  \r\n").unwrap_err(), CalendarRefusal::Empty);
        assert!(matches!(
            read("hello").unwrap_err(),
            CalendarRefusal::NotICalendar { line: 1, .. }
        ));
        let twice = format!("{WEEKLY}{WEEKLY}");
        assert!(matches!(
            read(&twice).unwrap_err(),
            CalendarRefusal::AfterEnd { line: 11 }
        ));
        let crossed = WEEKLY.replace("END:VEVENT", "END:VTODO");
        assert!(matches!(
            read(&crossed).unwrap_err(),
            CalendarRefusal::Mismatched { line: 9, .. }
        ));
    }

    /// An event that cannot be read refuses the whole text: skipping it could open a gate.
    #[test]
    fn one_bad_event_refuses_the_whole_calendar() {
        let bad = WEEKLY.replace(
            "END:VCALENDAR",
            "BEGIN:VEVENT\r\nUID:b\r\nSUMMARY:Deny\r\nDTSTART;TZID=Nowhere/Else:20260105T090000\r\nDURATION:PT2H\r\nEND:VEVENT\r\nEND:VCALENDAR",
        );
        let e = read(&bad).unwrap_err();
        assert!(matches!(e, CalendarRefusal::Event { more: 0, .. }), "{e}");
        assert!(
            e.to_string()
                .starts_with("line 13, DTSTART: unknown time zone 'Nowhere/Else'"),
            "{e}"
        );
    }

    #[test]
    fn occurrence_and_byte_budgets() {
        let daily_hourly = WEEKLY.replace("FREQ=WEEKLY;COUNT=10", "FREQ=HOURLY");
        let e = read(&daily_hourly).unwrap_err();
        assert!(
            matches!(e, CalendarRefusal::TooManyOccurrences { .. }),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("expands to more than 5000 occurrences in the horizon")
        );
        let big = vec![b'x'; CALENDAR_MAX_BYTES + 1];
        let (from, to) = range();
        assert_eq!(
            read_calendar(&big, Tz::UTC, None, from, to).unwrap_err(),
            CalendarRefusal::TooLarge {
                bytes: CALENDAR_MAX_BYTES + 1
            }
        );
        // Hourly since 2010: past the work budget before the horizon starts.
        let old = WEEKLY
            .replace("FREQ=WEEKLY;COUNT=10", "FREQ=HOURLY;INTERVAL=1")
            .replace("20260105", "20100105");
        assert_eq!(read(&old).unwrap_err(), CalendarRefusal::TooManyInstances);
    }

    #[test]
    fn long_summaries_are_cut_at_a_character_boundary() {
        let long = "é".repeat(200);
        let c = read(&WEEKLY.replace("SUMMARY:Freeze", &format!("SUMMARY:{long}"))).unwrap();
        let s = &c.occurrences[0].summary;
        assert!(
            s.len() <= OCCURRENCE_SUMMARY_MAX_BYTES && s.ends_with('…'),
            "{s}"
        );
    }
}
