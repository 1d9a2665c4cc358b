//! Calendar windows: a window whose occurrences are the events of an iCalendar (RFC 5545) text,
//! given inline (`calendar.ics`) or as a feed the hub fetches (`calendar.url`). The text is
//! expanded into occurrences over a bounded horizon when the gate is compiled; a feed's
//! occurrences come from outside (the hub's fetch, or the snapshot a spoke received), with the
//! instant its copy turns stale.

mod expand;
mod lines;
mod read;
mod spec;

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};

pub use expand::{CalendarIssue, ExpandedCalendar, Occurrence, expand_ics};
pub use read::{CalendarRefusal, cut_summary, read_calendar};
pub use spec::{
    CalendarAuth, CalendarSource, DEFAULT_MAX_STALE, DEFAULT_REFRESH, EventMatch, MAX_ICS_BYTES,
    MIN_REFRESH, OnStale, SecretRef,
};

/// How far before the compile instant calendar text is expanded.
pub const HORIZON_BEFORE: Duration = Duration::days(31);
/// How far after the compile instant calendar text is expanded (and the hub sends a feed's
/// occurrences to spokes): a spoke cut off from its hub keeps a year of calendar.
pub const HORIZON_AFTER: Duration = Duration::days(400);

/// A feed's occurrences as the hub last fetched them, for one window of one gate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FeedOccurrences {
    /// The window's name.
    pub window: String,
    /// Occurrences over the horizon, sorted by start.
    pub occurrences: Vec<Occurrence>,
    /// From this instant on the copy is stale (last successful fetch + `maxStale`), and a
    /// window with `onStale: closed` closes the gate. `None`: never stale (not a feed).
    pub stale_at: Option<DateTime<Utc>>,
}

/// What compiling a gate needs beyond its manifest for calendar windows: the instant the
/// expansion horizon is centred on, and the occurrences of `url` feeds (a feed window with none
/// has never been fetched: stale from the start, so `onStale: closed` closes).
#[derive(Debug, Clone, Default)]
pub struct Calendars {
    pub from: DateTime<Utc>,
    pub to: DateTime<Utc>,
    pub feeds: Vec<FeedOccurrences>,
}

impl Calendars {
    /// The default horizon around `now` ([`HORIZON_BEFORE`], [`HORIZON_AFTER`]), no feeds.
    pub fn at(now: DateTime<Utc>) -> Calendars {
        Calendars {
            from: now - HORIZON_BEFORE,
            to: now + HORIZON_AFTER,
            feeds: Vec::new(),
        }
    }

    /// With these feed occurrences.
    #[must_use]
    pub fn with_feeds(mut self, feeds: Vec<FeedOccurrences>) -> Calendars {
        self.feeds = feeds;
        self
    }

    /// A horizon that also covers `[from, to]` (a preview further out than the default).
    #[must_use]
    pub fn covering(mut self, from: DateTime<Utc>, to: DateTime<Utc>) -> Calendars {
        self.from = self.from.min(from - Duration::days(1));
        self.to = self.to.max(to + Duration::days(9));
        self
    }
}
