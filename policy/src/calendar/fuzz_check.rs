//! The one check the fuzz target of the iCalendar path (`policy/fuzz`, run with
//! `cargo +nightly fuzz run read_calendar`) and the stable replay of its seed corpus
//! (`policy/tests/calendar_fuzz_corpus.rs`) run on an input, so the fuzzer and CI assert the
//! same things: [`read_calendar`] does not panic on any bytes; what it accepts is within the
//! counted budgets (steps, occurrences, summary bytes), sorted and inside the range; reading
//! the same bytes again gives the same calendar; and it reads exactly as the lenient expansion
//! (`expand_ics`, the reading before the budgets) does for the events it keeps. Time and memory
//! are bounded by libFuzzer (`-timeout`, `-rss_limit_mb`); the budgets are counted, not timed.

use chrono::{DateTime, TimeZone, Utc};
use chrono_tz::Tz;

use super::expand::{ExpandedCalendar, expand_ics};
use super::read::{CalendarRefusal, read_calendar};
use crate::budgets::{
    CALENDAR_MAX_EVENTS, CALENDAR_MAX_INSTANCES, CALENDAR_MAX_OCCURRENCES,
    OCCURRENCE_SUMMARY_MAX_BYTES,
};

/// The range every fuzz input is read over: 2026 and January 2027 (a DST change on each side
/// in the zone below).
pub fn fuzz_range() -> (DateTime<Utc>, DateTime<Utc>) {
    (
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap(),
        Utc.with_ymd_and_hms(2027, 2, 1, 0, 0, 0).unwrap(),
    )
}

/// The zone floating times and DATE values are read in: one with daylight saving time.
pub const FUZZ_ZONE: Tz = Tz::Europe__Berlin;

/// Reads `bytes` as a feed and panics if any property above does not hold; returns what the
/// reading gave (the corpus replay also checks each seed's expected outcome).
#[doc(hidden)]
pub fn check_read_calendar(bytes: &[u8]) -> Result<ExpandedCalendar, CalendarRefusal> {
    let (from, to) = fuzz_range();
    let read = read_calendar(bytes, FUZZ_ZONE, None, from, to);
    let calendar = match read {
        Err(refusal) => {
            // A refusal is a sentence for people.
            assert!(!refusal.to_string().is_empty(), "{refusal:?}");
            return Err(refusal);
        }
        Ok(c) => c,
    };
    assert!(
        calendar.occurrences.len() <= CALENDAR_MAX_OCCURRENCES,
        "{} occurrences accepted, over the budget",
        calendar.occurrences.len()
    );
    assert!(
        calendar.expansion_steps < CALENDAR_MAX_INSTANCES,
        "{} expansion steps accepted, at or over the budget",
        calendar.expansion_steps
    );
    assert!(
        calendar.events <= CALENDAR_MAX_EVENTS,
        "{}",
        calendar.events
    );
    assert!(calendar.rejected.is_empty(), "{:?}", calendar.rejected);
    for pair in calendar.occurrences.windows(2) {
        assert!(pair[0].start <= pair[1].start, "not sorted: {pair:?}");
    }
    for o in &calendar.occurrences {
        assert!(o.start <= o.end, "ends before it starts: {o:?}");
        assert!(o.start < to && o.end >= from, "outside the range: {o:?}");
        assert!(o.summary.len() <= OCCURRENCE_SUMMARY_MAX_BYTES, "{o:?}");
    }
    let again = read_calendar(bytes, FUZZ_ZONE, None, from, to);
    assert_eq!(
        again.as_ref(),
        Ok(&calendar),
        "the same bytes read differently"
    );
    // What the fail-closed reading keeps, it reads as the lenient expansion does (its
    // summaries are not cut: compare where they fit).
    let text = std::str::from_utf8(bytes).expect("accepted text is UTF-8");
    let lenient = expand_ics(text, FUZZ_ZONE, None, from, to).expect("the lenient reading");
    assert!(lenient.rejected.is_empty(), "{:?}", lenient.rejected);
    assert_eq!(lenient.occurrences.len(), calendar.occurrences.len());
    for (old, new) in lenient.occurrences.iter().zip(&calendar.occurrences) {
        assert_eq!((old.start, old.end), (new.start, new.end));
        if old.summary.len() <= OCCURRENCE_SUMMARY_MAX_BYTES {
            assert_eq!(old.summary, new.summary);
        }
    }
    Ok(calendar)
}
