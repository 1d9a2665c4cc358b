//! What the change streams compare of a cluster's report problems and a calendar feed
//! ([`ReportProblemBrief`], [`FeedBrief`]). A leaf of `service/fleet/`.

use chrono::{DateTime, Utc};

/// How a cluster's latest report was stored, when not cleanly: objects stored
/// repaired or left out (`total`), or the whole report refused (`write_error`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportProblemBrief {
    pub total: u32,
    pub write_error: Option<String>,
}

/// A `calendar.url` window's feed as the change streams compare it: its state and the
/// hash of the copy in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedBrief {
    pub url: String,
    pub state: fleetgate_api_types::records::CalendarFeedState,
    /// SHA-256 (hex) of the last good copy; `None` before the first good fetch.
    pub sha256: Option<String>,
    pub occurrences: u32,
    pub changed_at: Option<DateTime<Utc>>,
}

/// A feed row as the change streams compare it.
pub fn brief(row: &crate::db::calendar_feeds::FeedRow, now: DateTime<Utc>) -> FeedBrief {
    let s = crate::service::calendars::feeds::status(row, now);
    FeedBrief {
        url: s.url,
        state: s.state,
        sha256: row.body_sha256.as_deref().map(hex::encode),
        occurrences: u32::try_from(s.occurrences).unwrap_or(u32::MAX),
        changed_at: row.changed_at,
    }
}
