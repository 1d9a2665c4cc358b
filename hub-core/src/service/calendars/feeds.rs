//! A gate's calendar feeds as data: its `calendar.url` windows, the occurrences spokes get,
//! compiling a gate with them, and a feed row as the APIs show it. Pure: the feed
//! operations (`super`), the fleet evaluation and the notifications share it.

use chrono::{DateTime, Duration, Utc};
use fleetgate_api_types::records::{CalendarFeedState, CalendarFeedStatus};
use fleetgate_policy::{CompiledGate, FeedOccurrences, Gate};

pub use crate::db::calendar_feeds::feed_occurrences;
use crate::db::calendar_feeds::{FeedRow, FeedWindow};
use crate::notify::calendars::display_url;

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

/// A gate manifest (JSON) as an audit entry keeps it: each `calendar.url` shown as
/// notifications show it ([`display_url`]: no user or password, no query, no fragment). The
/// stored gate keeps the URL as written.
pub(crate) fn manifest_for_audit(mut manifest: serde_json::Value) -> serde_json::Value {
    let windows = manifest
        .pointer_mut("/spec/windows")
        .and_then(serde_json::Value::as_array_mut);
    for w in windows.into_iter().flatten() {
        if let Some(url) = w.pointer_mut("/calendar/url")
            && let Some(shown) = url.as_str().map(display_url)
        {
            *url = serde_json::Value::String(shown);
        }
    }
    manifest
}

/// A feed row as the APIs show it: the URL without credentials or query ([`display_url`],
/// as notifications show it; the row keeps the URL it fetches), and the last error as the
/// fetch recorded it (the fetcher leaves the URL out of its errors).
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
        url: display_url(&row.url),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(url: &str) -> FeedRow {
        FeedRow {
            gate: "g".into(),
            window_name: "w".into(),
            url: url.into(),
            refresh_seconds: 3600,
            max_stale_seconds: 14400,
            secret_name: None,
            published_fetched_at: None,
            body_sha256: None,
            etag: None,
            last_modified: None,
            occurrences: serde_json::json!([]),
            rejected: serde_json::json!([]),
            expanded_from: None,
            expanded_to: None,
            refresh_hint_seconds: None,
            fetched_at: None,
            changed_at: None,
            attempted_at: None,
            last_error: None,
            failures: 0,
            stale_announced_at: None,
            next_fetch_at: Utc::now(),
        }
    }

    #[test]
    fn the_status_shows_the_url_without_credentials_or_query() {
        let s = status(
            &row("https://alice:s3cret@cal.example.com/a.ics?key=k3y#x"),
            Utc::now(),
        );
        assert_eq!(s.url, "https://cal.example.com/a.ics?…");
        let s = status(&row("https://cal.example.com/a.ics"), Utc::now());
        assert_eq!(s.url, "https://cal.example.com/a.ics");
    }

    #[test]
    fn an_audited_manifest_shows_each_feed_url_without_credentials_or_query() {
        let m = serde_json::json!({
            "apiVersion": "fleetgate.io/v1", "kind": "Gate",
            "metadata": {"name": "g"},
            "spec": {"windows": [
                {"name": "a", "calendar": {"url": "https://u:p@cal.example.com/a.ics?key=k"}},
                {"name": "b", "calendar": {"ics": "BEGIN:VCALENDAR"}},
                {"name": "c", "schedule": "0 9 * * 1-5"},
            ]},
        });
        let shown = manifest_for_audit(m.clone());
        assert_eq!(
            shown["spec"]["windows"][0]["calendar"]["url"],
            "https://cal.example.com/a.ics?…"
        );
        assert_eq!(shown["spec"]["windows"][1], m["spec"]["windows"][1]);
        assert_eq!(shown["spec"]["windows"][2], m["spec"]["windows"][2]);
        assert_eq!(
            manifest_for_audit(serde_json::json!(null)),
            serde_json::json!(null)
        );
    }
}
