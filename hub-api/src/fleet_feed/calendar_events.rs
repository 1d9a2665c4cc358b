//! Calendar feed events: the difference of two fleet views' `calendar.url` feeds. A feed's
//! content changed (its copy's hash moved: new occurrences reach spokes), or its state did
//! (`notFetched` → `ok`, `ok` → `failing` → `stale` and back). Comparing what PostgreSQL holds
//! makes every replica's watchers see a refresh whichever replica fetched it.

use chrono::{DateTime, Utc};
use fleetgate_api_types::records::CalendarFeedState;

use crate::service::fleet::{FeedBrief, FleetView};

/// A feed's content or state changed (initial events: every feed as it stands).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CalendarFeedChange {
    pub gate: String,
    /// The `calendar.url` window.
    pub window: String,
    pub url: String,
    pub state: CalendarFeedState,
    pub previous_state: Option<CalendarFeedState>,
    /// The copy's content changed (its occurrences were recomputed and sent to spokes).
    pub content_changed: bool,
    /// Occurrences of the copy now and before.
    pub occurrences: u32,
    pub previous_occurrences: u32,
    /// When the content last changed.
    pub changed_at: Option<DateTime<Utc>>,
    /// SHA-256 (hex) of the copy in use.
    pub sha256: Option<String>,
}

/// The feed changes from `prev` (None: the watcher's initial state) to `next`, of the gates
/// `wanted` lets through.
pub fn diff(
    prev: Option<&FleetView>,
    next: &FleetView,
    wanted: impl Fn(&str) -> bool,
) -> Vec<CalendarFeedChange> {
    let none = std::collections::BTreeMap::new();
    let before = prev.map_or(&none, |p| &p.calendar_feeds);
    let mut out = Vec::new();
    for ((gate, window), now) in &next.calendar_feeds {
        if !wanted(gate) {
            continue;
        }
        let was: Option<&FeedBrief> = before.get(&(gate.clone(), window.clone()));
        let content_changed = was.is_some_and(|w| w.sha256 != now.sha256)
            || (was.is_none() && prev.is_some() && now.sha256.is_some());
        let state_changed = was.is_none_or(|w| w.state != now.state);
        if !content_changed && !state_changed && prev.is_some() {
            continue;
        }
        out.push(CalendarFeedChange {
            gate: gate.clone(),
            window: window.clone(),
            url: now.url.clone(),
            state: now.state,
            previous_state: was.map(|w| w.state),
            content_changed,
            occurrences: now.occurrences,
            previous_occurrences: was.map_or(0, |w| w.occurrences),
            changed_at: now.changed_at,
            sha256: now.sha256.clone(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(feeds: &[(&str, CalendarFeedState, Option<&str>, u32)]) -> FleetView {
        let mut v = FleetView::default();
        for (window, state, sha, n) in feeds {
            v.calendar_feeds.insert(
                ("g".into(), (*window).into()),
                FeedBrief {
                    url: format!("https://cal.example/{window}.ics"),
                    state: *state,
                    sha256: sha.map(str::to_string),
                    occurrences: *n,
                    changed_at: None,
                },
            );
        }
        v
    }

    fn brief(c: &[CalendarFeedChange]) -> Vec<String> {
        c.iter()
            .map(|c| {
                format!(
                    "{} {:?}->{:?} content={} {}->{}",
                    c.window,
                    c.previous_state,
                    c.state,
                    c.content_changed,
                    c.previous_occurrences,
                    c.occurrences
                )
            })
            .collect()
    }

    #[test]
    fn content_and_state_changes_are_events_and_nothing_else() {
        use CalendarFeedState::*;
        let new = view(&[("cab", NotFetched, None, 0)]);
        // Initial: the feed as it stands, not fetched yet.
        assert_eq!(
            brief(&diff(None, &new, |_| true)),
            ["cab None->NotFetched content=false 0->0"]
        );
        let fetched = view(&[("cab", Ok, Some("aa"), 3)]);
        assert_eq!(
            brief(&diff(Some(&new), &fetched, |_| true)),
            ["cab Some(NotFetched)->Ok content=true 0->3"]
        );
        // Refetched, same bytes: nothing.
        assert!(diff(Some(&fetched), &fetched, |_| true).is_empty());
        // New content, same state.
        let changed = view(&[("cab", Ok, Some("bb"), 4)]);
        assert_eq!(
            brief(&diff(Some(&fetched), &changed, |_| true)),
            ["cab Some(Ok)->Ok content=true 3->4"]
        );
        // Failing then stale keeps the copy: state changes only.
        let failing = view(&[("cab", Failing, Some("bb"), 4)]);
        assert_eq!(
            brief(&diff(Some(&changed), &failing, |_| true)),
            ["cab Some(Ok)->Failing content=false 4->4"]
        );
        // Another gate's feed is not this watcher's.
        assert!(diff(Some(&fetched), &changed, |g| g != "g").is_empty());
        // A feed added to a gate already fetched (a later view): content and state.
        let empty = view(&[]);
        assert_eq!(
            brief(&diff(Some(&empty), &fetched, |_| true)),
            ["cab None->Ok content=true 0->3"]
        );
    }
}
