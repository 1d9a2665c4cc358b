//! A gate's calendar feeds as data: its `calendar.url` windows, the occurrences spokes get,
//! compiling a gate with them, and a feed row as the APIs show it. Pure: the feed
//! operations (`super`), the fleet evaluation and the notifications share it.

use chrono::{DateTime, Duration, Utc};
use fleetgate_api_types::records::{CalendarFeedState, CalendarFeedStatus};
use fleetgate_policy::{CompiledGate, FeedOccurrences, Gate};

pub use crate::db::calendar_feeds::feed_occurrences;
use crate::db::calendar_feeds::{FeedRow, FeedWindow};

/// The `calendar.url` windows of `gate`.
pub(crate) fn feed_windows(gate: &Gate) -> Vec<FeedWindow> {
    gate.spec
        .windows
        .iter()
        .filter_map(|w| {
            let c = w.calendar.as_ref()?;
            Some(FeedWindow {
                window: w.name.clone(),
                url: c.url.clone()?,
                refresh: c.refresh_every(),
                max_stale: c.max_stale_after(),
                secret_name: c.auth.as_ref().map(|a| a.secret_ref.name.clone()),
            })
        })
        .collect()
}

/// Compiles a stored gate at `at` with its feeds' occurrences.
pub(crate) fn compile_at(
    gate: &Gate,
    feeds: &[FeedOccurrences],
    at: DateTime<Utc>,
) -> std::result::Result<CompiledGate, fleetgate_policy::PolicyError> {
    gate.compile_with(&fleetgate_policy::Calendars::at(at).with_feeds(feeds.to_vec()))
}

/// A feed row as the APIs show it.
pub(crate) fn status(row: &FeedRow, now: DateTime<Utc>) -> CalendarFeedStatus {
    let stale_at = row
        .published_fetched_at
        .map(|p| p + Duration::seconds(row.max_stale_seconds));
    let occurrences = row.occurrences.as_array().map_or(0, Vec::len);
    let rejected = row
        .rejected
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| {
                    serde_json::from_value::<fleetgate_policy::CalendarIssue>(v.clone()).ok()
                })
                .map(|i| i.to_string())
                .collect()
        })
        .unwrap_or_default();
    let stale = stale_at.is_none_or(|s| s <= now) && row.attempted_at.is_some();
    let state = if row.attempted_at.is_none() {
        CalendarFeedState::NotFetched
    } else if stale {
        CalendarFeedState::Stale
    } else if row.last_error.is_some() {
        CalendarFeedState::Failing
    } else {
        CalendarFeedState::Ok
    };
    CalendarFeedStatus {
        window: row.window_name.clone(),
        url: row.url.clone(),
        state,
        last_fetch_at: row.fetched_at,
        last_change_at: row.changed_at,
        last_attempt_at: row.attempted_at,
        error: row.last_error.clone(),
        failures: row.failures,
        next_fetch_at: row.next_fetch_at,
        stale,
        stale_at,
        occurrences,
        rejected,
    }
}
