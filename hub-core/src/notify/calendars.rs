//! `calendar.failing` and `calendar.recovered`: a calendar feed started failing (a fetch
//! failed or its copy was refused, and the last good copy stays in force) or fetched well
//! again. Announced once per transition, not per failed fetch, in the transaction that records
//! the fetch ([`fetch_recorded`]); the same transaction tells every replica's watchers
//! (WatchFleet, the dashboard's event stream) to read the feed's new state at once, though no
//! snapshot changed. `calendar.stale` (the copy in force is too old) is announced by the
//! refresher's sweep. Guide: `docs/notifications.md`, `docs/calendars.md`.

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::PgConnection;

use super::event::NewEvent;
use crate::db::calendar_feeds::FetchRecorded;
use crate::db::revision;

/// A feed URL as notifications show it: without the user and password, the query (feeds often
/// carry their access key there: `?key=…`, `/private-…/basic.ics?token=…`) and the fragment;
/// `?…` says a query was cut.
pub fn display_url(url: &str) -> String {
    let (rest, had_query) = match url.find(['?', '#']) {
        Some(i) => (&url[..i], url[i..].starts_with('?')),
        None => (url, false),
    };
    let (scheme, after) = match rest.split_once("://") {
        Some((s, a)) => (Some(s), a),
        None => (None, rest),
    };
    let (authority, path) = match after.find('/') {
        Some(i) => after.split_at(i),
        None => (after, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let mut out = match scheme {
        Some(s) => format!("{s}://{host}{path}"),
        None => format!("{host}{path}"),
    };
    if had_query {
        out.push_str("?…");
    }
    out
}

/// The feed a fetch was recorded for.
#[derive(Debug, Clone, Copy)]
pub struct Feed<'a> {
    pub gate: &'a str,
    pub window: &'a str,
    pub url: &'a str,
}

/// The event a recorded fetch announces, if it changed whether the feed is failing:
/// `calendar.failing` with `error` as the reason, or `calendar.recovered`.
pub fn event(
    feed: Feed<'_>,
    recorded: &FetchRecorded,
    error: Option<&str>,
    at: DateTime<Utc>,
) -> Option<NewEvent> {
    let instant = at.to_rfc3339_opts(SecondsFormat::Millis, true);
    let (event_type, data) = if recorded.started_failing() {
        (
            "calendar.failing",
            serde_json::json!({
                "gate": feed.gate,
                "window": feed.window,
                "url": display_url(feed.url),
                "reason": error.unwrap_or_default(),
                "failures": recorded.failures,
                "lastGoodAt": recorded.last_good_at,
                "at": at,
            }),
        )
    } else if recorded.recovered() {
        (
            "calendar.recovered",
            serde_json::json!({
                "gate": feed.gate,
                "window": feed.window,
                "url": display_url(feed.url),
                "failures": recorded.failures_before,
                "lastGoodAt": recorded.last_good_at,
                "at": at,
            }),
        )
    } else {
        return None;
    };
    Some(NewEvent {
        event_type: event_type.into(),
        subject: format!("gate/{}", feed.gate),
        dedup_key: Some(format!(
            "{event_type}/{}/{}/{instant}",
            feed.gate, feed.window
        )),
        occurred_at: at,
        gate: Some(feed.gate.to_string()),
        clusters: Vec::new(),
        data,
    })
}

/// Announces what recording a fetch of `feed` at `at` changed (in the recording's
/// transaction): on a transition into or out of failing, the event and a change notification
/// for the watchers. `recorded`: what the store's `record_failure`/`record_success` returned
/// (`None`: the row is gone). Returns whether it announced anything.
pub async fn fetch_recorded(
    conn: &mut PgConnection,
    feed: Feed<'_>,
    recorded: Option<&FetchRecorded>,
    error: Option<&str>,
    at: DateTime<Utc>,
) -> crate::Result<bool> {
    let Some(ev) = recorded.and_then(|r| event(feed, r, error, at)) else {
        return Ok(false);
    };
    super::enqueue(&mut *conn, &ev).await?;
    revision::nudge(&mut *conn).await?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_lose_credentials_query_and_fragment() {
        for (url, shown) in [
            (
                "https://calendar.example.com/holidays.ics",
                "https://calendar.example.com/holidays.ics",
            ),
            (
                "https://alice:s3cret@cal.example.com:8443/a/b.ics?key=abc&x=1#frag",
                "https://cal.example.com:8443/a/b.ics?…",
            ),
            ("webcal://token@cal.example.com", "webcal://cal.example.com"),
            (
                "http://cal.example.com/x.ics#top",
                "http://cal.example.com/x.ics",
            ),
            (
                "https://cal.example.com/x.ics?u=a@b.c",
                "https://cal.example.com/x.ics?…",
            ),
        ] {
            assert_eq!(display_url(url), shown, "{url}");
        }
    }

    fn recorded(was_failing: bool, before: i32, now: i32) -> FetchRecorded {
        FetchRecorded {
            was_failing,
            failures_before: before,
            failures: now,
            last_good_at: None,
        }
    }

    #[test]
    fn only_transitions_are_announced() {
        let feed = Feed {
            gate: "g",
            window: "w",
            url: "https://u:p@cal.example.com/f.ics?key=k",
        };
        let at = Utc::now();
        let failing = event(feed, &recorded(false, 0, 1), Some("HTTP 503"), at).unwrap();
        assert_eq!(failing.event_type, "calendar.failing");
        assert_eq!(failing.data["reason"], "HTTP 503");
        assert_eq!(failing.data["failures"], 1);
        assert_eq!(failing.data["url"], "https://cal.example.com/f.ics?…");
        assert!(event(feed, &recorded(true, 1, 2), Some("HTTP 503"), at).is_none());
        let back = event(feed, &recorded(true, 3, 0), None, at).unwrap();
        assert_eq!(back.event_type, "calendar.recovered");
        assert_eq!(back.data["failures"], 3);
        assert!(event(feed, &recorded(false, 0, 0), None, at).is_none());
    }
}
