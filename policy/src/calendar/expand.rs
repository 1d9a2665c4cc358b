//! Expanding iCalendar text into the occurrences of a calendar window. calcard parses the text
//! and expands RRULE, RDATE, EXDATE and RECURRENCE-ID (with the feed's VTIMEZONEs and
//! Windows/Outlook zone names); this module adds what a gate needs on top: events whose TZID
//! resolves nowhere are rejected one by one (never read as floating), STATUS:CANCELLED, `match`,
//! all-day events as local midnight to midnight, an expansion bounded to a range, and errors
//! that name the feed's line and property.

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use calcard::common::PartialDateTime;
use calcard::icalendar::dates::{CalendarErrorType, TimeOrDelta};
use calcard::icalendar::{ICalendar, ICalendarProperty, ICalendarValue};
use calcard::{Entry, Parser};
use chrono::{DateTime, Datelike, Duration, Timelike, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

use super::EventMatch;
use super::lines::{ComponentLines, refresh_hint, scan};
use crate::resolve_local;

/// At most this many instances are expanded from one text (every rule together) by the lenient
/// [`expand_ics`]; [`super::read_calendar`] uses the work budget
/// [`crate::budgets::CALENDAR_MAX_INSTANCES`] and refuses a text that reaches it.
const EXPANSION_LIMIT: usize = 200_000;

/// One occurrence of a calendar window: `[start, end)` and the event's SUMMARY.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Occurrence {
    pub start: DateTime<Utc>,
    pub end: DateTime<Utc>,
    pub summary: Arc<str>,
}

/// A problem in calendar text, located: `line 42, DTSTART: …`. `line` is 1-based; 0 when the
/// problem is about the whole text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CalendarIssue {
    pub line: usize,
    pub property: String,
    pub message: String,
}

impl fmt::Display for CalendarIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.line, self.property.is_empty()) {
            (0, true) => f.write_str(&self.message),
            (0, false) => write!(f, "{}: {}", self.property, self.message),
            (l, true) => write!(f, "line {l}: {}", self.message),
            (l, false) => write!(f, "line {l}, {}: {}", self.property, self.message),
        }
    }
}

/// What a calendar text yields over a range.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExpandedCalendar {
    /// The occurrences that overlap the range, sorted by start (matching events only).
    pub occurrences: Vec<Occurrence>,
    /// Events skipped, each with why (unknown TZID, invalid DTSTART, bad RRULE, …).
    pub rejected: Vec<CalendarIssue>,
    /// How many VEVENTs the text has (before `match`).
    pub events: usize,
    /// The feed's REFRESH-INTERVAL or X-PUBLISHED-TTL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_hint_seconds: Option<i64>,
    /// An upper bound on the recurrence instances expansion stepped through (the work done;
    /// [`crate::budgets::CALENDAR_MAX_INSTANCES`] bounds it in [`super::read_calendar`]).
    #[serde(skip)]
    pub expansion_steps: usize,
}

impl ExpandedCalendar {
    /// The feed's own refresh hint as a duration.
    pub fn refresh_hint(&self) -> Option<Duration> {
        self.refresh_hint_seconds.map(Duration::seconds)
    }
}

/// Expands `text` into the occurrences overlapping `[from, to)`. Floating times and DATE values
/// are read in `tz` (the window's zone). Events that cannot be read are skipped and listed in
/// `rejected`; an error is returned only when the text is not an iCalendar at all.
pub fn expand_ics(
    text: &str,
    tz: Tz,
    matcher: Option<&EventMatch>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
) -> Result<ExpandedCalendar, CalendarIssue> {
    expand_bounded(text, tz, matcher, from, to, EXPANSION_LIMIT).map(|e| e.calendar)
}

/// What [`expand_bounded`] found beyond the calendar itself.
pub(crate) struct Bounded {
    pub(crate) calendar: ExpandedCalendar,
    /// Whether calcard's components and the line scan's agree (else no event was checked).
    pub(crate) located: bool,
    /// An upper bound on the recurrence instances stepped through: the rules' instances kept,
    /// plus every EXDATE and RECURRENCE-ID (which use up steps without leaving an instance).
    #[allow(dead_code)]
    pub(crate) steps: usize,
    /// Whether the steps may have reached `limit` (then later instances are missing).
    pub(crate) limit_reached: bool,
}

/// [`expand_ics`] with at most `limit` recurrence instances stepped through.
pub(crate) fn expand_bounded(
    text: &str,
    tz: Tz,
    matcher: Option<&EventMatch>,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    limit: usize,
) -> Result<Bounded, CalendarIssue> {
    let components = scan(text);
    if components.first().is_none_or(|c| c.kind != "VCALENDAR") {
        return Err(issue(
            1,
            "BEGIN",
            "not an iCalendar text (it must start with BEGIN:VCALENDAR)",
        ));
    }
    let mut ical = match Parser::new(text).entry() {
        Entry::ICalendar(ical) => ical,
        Entry::UnterminatedComponent(c) => {
            return Err(issue(
                text.lines().count(),
                "END",
                &format!("component {c} is not closed (END:{c} missing)"),
            ));
        }
        other => {
            return Err(issue(
                1,
                "BEGIN",
                &format!("not an iCalendar text ({other:?})"),
            ));
        }
    };
    // calcard numbers components in BEGIN order, as the scan does; a mismatch means the texts
    // were read differently, and then line numbers would point at the wrong events.
    let located = ical.components.len() == components.len();
    let line_of = |comp: usize, prop: &str| -> usize {
        let c = located.then(|| components.get(comp)).flatten();
        c.map(|c| c.property(prop).map_or(c.begin, |p| p.line))
            .unwrap_or(0)
    };

    let mut rejected = Vec::new();
    let mut skip: BTreeSet<usize> = BTreeSet::new();
    let resolver = ical.build_owned_tz_resolver();
    let events: Vec<usize> = (0..components.len())
        .filter(|&i| located && components[i].kind == "VEVENT")
        .collect();
    for &i in &events {
        let c = &components[i];
        if let Some(p) = c.properties.iter().find(|p| {
            p.tzid
                .as_deref()
                .is_some_and(|z| resolver.resolve(z).is_none())
                && matches!(
                    p.name.as_str(),
                    "DTSTART" | "DTEND" | "EXDATE" | "RDATE" | "RECURRENCE-ID"
                )
        }) {
            rejected.push(issue(
                p.line,
                &p.name,
                &format!(
                    "unknown time zone '{}' (no VTIMEZONE with this TZID in the feed, and not an IANA or Windows zone name); event {}",
                    p.tzid.as_deref().unwrap_or_default(),
                    event_name(c)
                ),
            ));
            skip.insert(i);
            continue;
        }
        let has_end = c.property("DTEND").is_some() || c.property("DURATION").is_some();
        if let Some(start) = c.property("DTSTART")
            && !has_end
            && start.value.trim().contains('T')
        {
            rejected.push(issue(
                start.line,
                "DTSTART",
                &format!(
                    "a DATE-TIME event without DTEND or DURATION lasts no time (RFC 5545 3.6.1); event {}",
                    event_name(c)
                ),
            ));
            skip.insert(i);
        }
    }
    for &i in &events {
        if skip.contains(&i) {
            continue;
        }
        if let Err(why) = pin_dst_times(&mut ical.components[i].entries, &resolver, tz) {
            rejected.push(issue(
                line_of(i, "DTSTART"),
                "DTSTART",
                &format!("{why}; event {}", event_name(&components[i])),
            ));
            skip.insert(i);
        }
    }
    for &i in &skip {
        if let Some(c) = ical.components.get_mut(i) {
            c.entries.clear();
        }
    }
    // The zone each event's wall times are in: its DTSTART's TZID, UTC for `Z` times, else the
    // window's (floating times and DATE values).
    let zones: Vec<Option<Tz>> = components
        .iter()
        .map(|c| {
            let start = c.property("DTSTART")?;
            match start.tzid.as_deref() {
                Some(z) => match resolver.resolve(z) {
                    Some(calcard::common::timezone::Tz::Tz(t)) => Some(t),
                    _ => None,
                },
                None if start.value.trim().ends_with(['Z', 'z']) => Some(Tz::UTC),
                None => Some(tz),
            }
        })
        .collect();
    bound_rules(&mut ical, &zones, to + Duration::days(2));

    let window_tz: calcard::common::timezone::Tz = tz.into();
    let expanded = ical.expand_dates(window_tz, limit);
    // calcard counts every instance a rule yields against `limit`, also those an EXDATE or a
    // RECURRENCE-ID replaces; it does not say whether it stopped at the limit.
    let recurring: BTreeSet<u32> = ical
        .components
        .iter()
        .enumerate()
        .filter(|(_, c)| c.entries.iter().any(|e| e.name == ICalendarProperty::Rrule))
        .map(|(i, _)| i as u32)
        .collect();
    let replaced: usize = ical
        .components
        .iter()
        .flat_map(|c| c.entries.iter())
        .filter(|e| {
            matches!(
                e.name,
                ICalendarProperty::Exdate | ICalendarProperty::RecurrenceId
            )
        })
        .map(|e| e.values.len().max(1))
        .sum();
    let steps = expanded
        .events
        .iter()
        .filter(|e| recurring.contains(&e.comp_id))
        .count()
        + replaced;
    let limit_reached = steps >= limit;
    for e in &expanded.errors {
        let comp = e.comp_id as usize;
        if skip.contains(&comp) || components.get(comp).is_none_or(|c| c.kind != "VEVENT") {
            continue;
        }
        let (prop, why) = match &e.error {
            CalendarErrorType::MissingDtStart => ("DTSTART", "missing".to_string()),
            CalendarErrorType::InvalidDtStart => (
                "DTSTART",
                "not a valid DATE or DATE-TIME (or a local time that does not exist in its zone)"
                    .to_string(),
            ),
            CalendarErrorType::InvalidDtEnd => ("DTEND", "not a valid DATE or DATE-TIME".into()),
            CalendarErrorType::InvalidDuration => ("DURATION", "not a valid duration".into()),
            CalendarErrorType::RRule(err) => ("RRULE", err.to_string()),
        };
        rejected.push(issue(
            line_of(comp, prop),
            prop,
            &format!("{why}; event {}", event_name(&components[comp])),
        ));
    }
    if limit_reached {
        rejected.push(issue(
            0,
            "RRULE",
            &format!("more than {limit} instances; later occurrences are missing"),
        ));
    }
    rejected.sort_by_key(|r| r.line);

    // What each event component contributes, worked out once (not once per instance).
    struct EventInfo {
        summary: Arc<str>,
        zone: Tz,
        all_day: bool,
    }
    let info: Vec<Option<EventInfo>> = components
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if !located || c.kind != "VEVENT" || skip.contains(&i) {
                return None;
            }
            let cancelled = c
                .property("STATUS")
                .is_some_and(|s| s.value.trim().eq_ignore_ascii_case("CANCELLED"));
            let summary = c
                .property("SUMMARY")
                .map(|p| unescape(&p.value))
                .unwrap_or_default();
            let categories: Vec<String> = c
                .properties
                .iter()
                .filter(|p| p.name == "CATEGORIES")
                .flat_map(|p| {
                    p.value
                        .split(',')
                        .map(|v| unescape(v.trim()))
                        .collect::<Vec<_>>()
                })
                .collect();
            if cancelled || matcher.is_some_and(|m| !m.matches(&summary, &categories)) {
                return None;
            }
            Some(EventInfo {
                summary: summary.into(),
                zone: zones.get(i).copied().flatten().unwrap_or(tz),
                all_day: c
                    .property("DTSTART")
                    .is_some_and(|p| !p.value.trim().contains('T')),
            })
        })
        .collect();

    let mut occurrences = Vec::new();
    for event in &expanded.events {
        let Some(Some(e)) = info.get(event.comp_id as usize) else {
            continue;
        };
        let start = instant(&event.start, e.zone);
        let end = match &event.end {
            TimeOrDelta::Time(t) => instant(t, e.zone),
            // All-day lengths are calendar days: local midnight to midnight, 23 or 25 hours
            // long across a DST change.
            TimeOrDelta::Delta(d) if e.all_day && d.num_seconds() % 86_400 == 0 => {
                resolve_local(tz, event.start.naive_local() + *d)
            }
            TimeOrDelta::Delta(d) => start + *d,
        };
        if end > from && start < to && end > start {
            occurrences.push(Occurrence {
                start,
                end,
                summary: e.summary.clone(),
            });
        }
    }
    occurrences.sort_by_key(|o| (o.start, o.end));
    occurrences.dedup_by(|a, b| a.start == b.start && a.end == b.end);
    Ok(Bounded {
        calendar: ExpandedCalendar {
            occurrences,
            rejected,
            events: events.len(),
            refresh_hint_seconds: refresh_hint(&components).map(|d| d.num_seconds()),
            expansion_steps: steps,
        },
        located,
        steps,
        limit_reached,
    })
}

/// A calcard date-time as an instant. Floating values (calcard leaves a recurrence instance
/// that falls into a DST gap floating) are read in `tz` with the windows' DST rule.
fn instant(t: &DateTime<calcard::common::timezone::Tz>, tz: Tz) -> DateTime<Utc> {
    match t.timezone() {
        calcard::common::timezone::Tz::Floating => resolve_local(tz, t.naive_local()),
        _ => t.with_timezone(&Utc),
    }
}

/// Prepares every RRULE for calcard, which compares UNTIL with instances in floating (wall)
/// time and expands from DTSTART with no range:
/// - a UTC or offset UNTIL (what Outlook and Google write) becomes the wall time of that instant
///   in the event's zone, so the last instance of a series is not lost to the zone's offset;
/// - an open-ended rule (or an UNTIL past `until`) gets UNTIL `until`: an endless weekly meeting
///   would otherwise use up the expansion limit of every event after it.
fn bound_rules(ical: &mut ICalendar, zones: &[Option<Tz>], until: DateTime<Utc>) {
    for (i, c) in ical.components.iter_mut().enumerate() {
        let zone = zones.get(i).copied().flatten();
        // The bound never precedes DTSTART: a series that starts after the horizon is read as
        // one instance there (left out of the range), not as a rule calcard refuses.
        let start = c
            .entries
            .iter()
            .find_map(|e| match (&e.name, e.values.first()) {
                (ICalendarProperty::Dtstart, Some(ICalendarValue::PartialDateTime(dt))) => {
                    dt.to_date_time().map(|d| d.date_time)
                }
                _ => None,
            });
        for entry in &mut c.entries {
            if entry.name != ICalendarProperty::Rrule {
                continue;
            }
            for value in &mut entry.values {
                let ICalendarValue::RecurrenceRule(rule) = value else {
                    continue;
                };
                if let Some(result) = rule.until.as_ref().and_then(|u| u.to_date_time())
                    && let Some(offset) = result.offset
                {
                    let instant = (result.date_time
                        - Duration::seconds(i64::from(
                            chrono::Offset::fix(&offset).local_minus_utc(),
                        )))
                    .and_utc();
                    let wall = match zone {
                        Some(z) => instant.with_timezone(&z).naive_local(),
                        None => instant.naive_utc(),
                    };
                    rule.until = Some(floating(wall));
                }
                let bound = match zone {
                    Some(z) => until.with_timezone(&z).naive_local(),
                    None => until.naive_utc(),
                };
                let bound = start.map_or(bound, |s| bound.max(s));
                let later = rule
                    .until
                    .as_ref()
                    .is_none_or(|u| u.to_date_time().is_none_or(|u| u.date_time > bound));
                if rule.count.is_none() && later {
                    rule.until = Some(floating(bound));
                }
            }
        }
    }
}

/// calcard refuses a DTSTART or DTEND whose wall time is not one instant in its zone (it falls
/// into a DST change). Of a single event (no RRULE, no RDATE) such a time is pinned here to the
/// instant the windows' DST rule gives (RFC 5545 3.3.5: a time in a gap moves later by the gap's
/// length, a time in an overlap means the earlier instant), written as UTC; the other end is
/// pinned with it, so it keeps its own zone. A recurring event's instances are wall times in its
/// zone counted from DTSTART, which cannot be moved without moving them: it is refused, naming
/// the time and the zone.
fn pin_dst_times(
    entries: &mut [calcard::icalendar::ICalendarEntry],
    resolver: &calcard::icalendar::timezone::TzResolver<String>,
    window: Tz,
) -> Result<(), String> {
    use calcard::icalendar::ICalendarParameterName;
    // The zone a local DATE-TIME value of `entry` is read in, and the value; None for DATE
    // values, UTC or offset times, and zones without DST (fixed offsets).
    let local = |entry: &calcard::icalendar::ICalendarEntry, inherited: Option<&str>| {
        let Some(ICalendarValue::PartialDateTime(dt)) = entry.values.first() else {
            return None;
        };
        if !dt.has_date_and_time() || dt.tz_hour.is_some() {
            return None;
        }
        let zone = match resolver.resolve_or_default(entry.tz_id().or(inherited)) {
            calcard::common::timezone::Tz::Tz(z) => z,
            calcard::common::timezone::Tz::Floating => window,
            calcard::common::timezone::Tz::Fixed(_) => return None,
        };
        let wall = dt.to_date_time()?.date_time;
        Some((zone, wall))
    };
    let single = |(zone, wall): (Tz, chrono::NaiveDateTime)| {
        matches!(
            chrono::TimeZone::offset_from_local_datetime(&zone, &wall),
            chrono::LocalResult::Single(_)
        )
    };
    let position = |name: ICalendarProperty| entries.iter().position(|e| e.name == name);
    let (Some(start_at), end_at) = (
        position(ICalendarProperty::Dtstart),
        position(ICalendarProperty::Dtend),
    ) else {
        return Ok(());
    };
    let start_zone = entries[start_at].tz_id().map(str::to_owned);
    let start = local(&entries[start_at], None);
    let end = end_at.and_then(|i| local(&entries[i], start_zone.as_deref()));
    if start.is_none_or(single) && end.is_none_or(single) {
        return Ok(());
    }
    let recurring = entries
        .iter()
        .any(|e| matches!(e.name, ICalendarProperty::Rrule | ICalendarProperty::Rdate));
    if recurring {
        let (zone, wall) = start.filter(|s| !single(*s)).or(end).unwrap_or_default();
        return Err(format!(
            "{} is not one instant in {zone} (it falls into a DST change); a recurring event must start and end at wall times that occur once",
            wall.format("%Y-%m-%dT%H:%M:%S")
        ));
    }
    for (at, value) in [(Some(start_at), start), (end_at, end)] {
        let (Some(at), Some((zone, wall))) = (at, value) else {
            continue;
        };
        let pinned = resolve_local(zone, wall).naive_utc();
        let entry = &mut entries[at];
        entry
            .params
            .retain(|p| p.name != ICalendarParameterName::Tzid);
        entry.values[0] = ICalendarValue::PartialDateTime(Box::new(PartialDateTime {
            tz_hour: Some(0),
            tz_minute: Some(0),
            ..floating(pinned)
        }));
    }
    Ok(())
}

/// A floating calcard date-time.
fn floating(t: chrono::NaiveDateTime) -> PartialDateTime {
    PartialDateTime {
        year: u16::try_from(t.year()).ok(),
        month: u8::try_from(t.month()).ok(),
        day: u8::try_from(t.day()).ok(),
        hour: u8::try_from(t.hour()).ok(),
        minute: u8::try_from(t.minute()).ok(),
        second: u8::try_from(t.second()).ok(),
        tz_hour: None,
        tz_minute: None,
        tz_minus: false,
    }
}

/// `'SUMMARY' (line N)` for messages.
fn event_name(c: &ComponentLines) -> String {
    match c.property("SUMMARY") {
        Some(s) => format!("'{}' (line {})", unescape(&s.value), c.begin),
        None => format!("at line {}", c.begin),
    }
}

/// RFC 5545 TEXT unescaping (`\,` `\;` `\\` `\n`).
fn unescape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let mut chars = v.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n' | 'N') => out.push('\n'),
                Some(other) => out.push(other),
                None => {}
            }
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn issue(line: usize, property: &str, message: &str) -> CalendarIssue {
    CalendarIssue {
        line,
        property: property.to_string(),
        message: message.to_string(),
    }
}
