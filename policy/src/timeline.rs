//! The sweep behind evaluation and transitions: each window's occurrences in a range are merged
//! into spans, overrides become spans too, and the rule (override › deny › allow › default) is
//! applied only at span edges, so cost follows the number of edges, not the length of the range.

use chrono::{DateTime, Duration, Utc};

use crate::compile::{CompiledGate, CompiledWindow};
use crate::eval::active_override;
use crate::localtime::format_until;
use crate::{GateState, Override, WindowKind};

/// A window's continuous activity: `[start, end)`; `end: None` means it lasts past the look-ahead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: DateTime<Utc>,
    end: Option<DateTime<Utc>>,
}

/// How far past the range a window's span is followed to name when it ends. Chains of
/// overlapping occurrences longer than this are in effect "always active".
const EXTEND_CAP: Duration = Duration::days(8);

/// The state and reason at one instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Decision {
    pub(crate) state: GateState,
    pub(crate) reason: String,
}

/// The outcome of a sweep over `[from, to]`.
pub(crate) struct Sweep {
    /// The decision at `from`.
    pub(crate) initial: Decision,
    /// Every change of state in `(from, to]`.
    pub(crate) changes: Vec<(DateTime<Utc>, Decision)>,
    /// How many window occurrences were expanded: the cost, to bound look-ahead.
    pub(crate) occurrences: usize,
}

/// The decision at `from` and every change of state in `(from, to]`.
pub(crate) fn sweep(
    gate: &CompiledGate,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    overrides: &[Override],
) -> Sweep {
    let to = to.max(from);
    let mut occurrences = 0;
    let spans: Vec<Vec<Span>> = gate
        .windows
        .iter()
        .map(|w| window_spans(w, from, to, &mut occurrences))
        .collect();
    let name = gate.name();
    let overrides: Vec<&Override> = overrides
        .iter()
        .filter(|o| o.applies_to_gate(name))
        .collect();

    let mut edges: Vec<DateTime<Utc>> = Vec::new();
    for span in spans.iter().flatten() {
        edges.push(span.start);
        edges.extend(span.end);
    }
    for o in &overrides {
        edges.push(o.starts_at);
        edges.extend(o.expires_at);
    }
    // A stale feed with `onStale: closed` closes from the instant it turns stale.
    edges.extend(
        gate.windows
            .iter()
            .filter_map(|w| w.calendar().and_then(|c| c.closes_from())),
    );
    edges.retain(|t| from < *t && *t <= to);
    edges.sort_unstable();
    edges.dedup();

    let mut cursor = Cursor {
        gate,
        spans: &spans,
        next: vec![0; spans.len()],
        overrides: &overrides,
    };
    let initial = cursor.decide(from);
    let mut state = initial.state;
    let mut changes = Vec::new();
    for t in edges {
        let decision = cursor.decide(t);
        if decision.state != state {
            state = decision.state;
            changes.push((t, decision));
        }
    }
    Sweep {
        initial,
        changes,
        occurrences,
    }
}

/// Walks the spans forward in time; `decide` must be called with non-decreasing instants.
struct Cursor<'a> {
    gate: &'a CompiledGate,
    spans: &'a [Vec<Span>],
    next: Vec<usize>,
    overrides: &'a [&'a Override],
}

impl Cursor<'_> {
    fn decide(&mut self, t: DateTime<Utc>) -> Decision {
        let mut deny: Option<(usize, Option<DateTime<Utc>>)> = None;
        let mut allow: Option<(usize, Option<DateTime<Utc>>)> = None;
        let mut stale: Option<(usize, DateTime<Utc>)> = None;
        for (i, window) in self.gate.windows.iter().enumerate() {
            if let Some(since) = window.calendar().and_then(|c| c.closes_from())
                && since <= t
                && stale.is_none()
            {
                stale = Some((i, since));
            }
            let spans = &self.spans[i];
            let k = &mut self.next[i];
            while *k < spans.len() && spans[*k].end.is_some_and(|e| e <= t) {
                *k += 1;
            }
            let Some(span) = spans.get(*k).filter(|s| s.start <= t) else {
                continue;
            };
            let slot = match window.kind {
                WindowKind::Deny => &mut deny,
                WindowKind::Allow => &mut allow,
            };
            // Cite the window that holds the state longest; `None` (no end in sight) is longest.
            let longer = match slot {
                None => true,
                Some((_, best)) => match (span.end, *best) {
                    (None, Some(_)) => true,
                    (Some(a), Some(b)) => a > b,
                    _ => false,
                },
            };
            if longer {
                *slot = Some((i, span.end));
            }
        }

        if let Some(o) = active_override(self.overrides.iter().copied(), self.gate.name(), t) {
            let until = match o.expires_at {
                Some(e) => format!("until {}", format_until(self.gate.tz, e, t)),
                None => "until cancelled".to_string(),
            };
            let why = if o.reason.is_empty() {
                String::new()
            } else {
                format!(": {}", o.reason)
            };
            let by = if o.actor.is_empty() {
                String::new()
            } else {
                format!(" by {}", o.actor)
            };
            let reason = if o.is_freeze() {
                o.freeze_reason(self.gate.tz, t)
            } else {
                format!("override {}{by} {until}{why}", o.state)
            };
            return Decision {
                state: o.state,
                reason,
            };
        }
        if let Some((i, since)) = stale {
            let w: &CompiledWindow = &self.gate.windows[i];
            let since = if since == DateTime::<Utc>::UNIX_EPOCH {
                "never fetched".to_string()
            } else {
                format!("stale since {}", format_until(w.tz, since, t))
            };
            return Decision {
                state: GateState::Closed,
                reason: format!(
                    "deny window '{}': calendar feed {since} (onStale: closed)",
                    w.name
                ),
            };
        }
        let window_reason = |(i, end): (usize, Option<DateTime<Utc>>)| {
            let w: &CompiledWindow = &self.gate.windows[i];
            let event = w
                .calendar()
                .and_then(|c| c.summary_at(t))
                .filter(|s| !s.is_empty())
                .map(|s| format!(" ({s})"))
                .unwrap_or_default();
            match end {
                Some(e) => format!(
                    "{} window '{}'{event} until {}",
                    w.kind,
                    w.name,
                    format_until(w.tz, e, t)
                ),
                None => format!(
                    "{} window '{}'{event} (no end within {} days)",
                    w.kind,
                    w.name,
                    EXTEND_CAP.num_days()
                ),
            }
        };
        if let Some(d) = deny {
            return Decision {
                state: GateState::Closed,
                reason: window_reason(d),
            };
        }
        if let Some(a) = allow {
            return Decision {
                state: GateState::Open,
                reason: window_reason(a),
            };
        }
        let state = self.gate.gate.spec.default;
        Decision {
            state,
            reason: format!("default ({state})"),
        }
    }
}

/// The window's activity as merged spans that touch `[from, to]`; the last span is followed
/// past `to` (up to [`EXTEND_CAP`]) so its end is known.
fn window_spans(
    w: &CompiledWindow,
    from: DateTime<Utc>,
    to: DateTime<Utc>,
    occurrences: &mut usize,
) -> Vec<Span> {
    let mut spans: Vec<Span> = Vec::new();
    let mut ends: Vec<DateTime<Utc>> = Vec::new();
    let mut all: Vec<_> = latest_at_or_before(w, from, occurrences)
        .into_iter()
        .collect();
    let later = w.occurrences(from + Duration::nanoseconds(1), to);
    *occurrences += later.len();
    all.extend(later);
    for (start, end) in all {
        if end <= from {
            continue;
        }
        match ends.last_mut() {
            // Overlapping or touching occurrences form one continuous span.
            Some(last_end) if start <= *last_end => *last_end = (*last_end).max(end),
            _ => {
                spans.push(Span { start, end: None });
                ends.push(end);
            }
        }
    }
    for (span, end) in spans.iter_mut().zip(&ends) {
        span.end = Some(*end);
    }
    if let Some(last) = spans.last_mut() {
        last.end = follow_span(w, last.end.unwrap_or(to), to, occurrences);
    }
    spans
}

/// The occurrence with the latest start at or before `from`, if one started within the window's
/// duration. All occurrences of a window last equally long, so it is the one reaching furthest;
/// searching back in growing steps keeps dense schedules with long durations cheap.
fn latest_at_or_before(
    w: &CompiledWindow,
    from: DateTime<Utc>,
    occurrences: &mut usize,
) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let lookback = w.lookback();
    if w.calendar().is_some() {
        // Calendar occurrences differ in length: the one reaching furthest may have started
        // before a shorter, later one. The list is in memory, so look at the whole lookback.
        let found = w.occurrences(from - lookback, from);
        *occurrences += found.len();
        return found.into_iter().max_by_key(|(_, end)| *end);
    }
    let mut step = lookback.min(Duration::hours(6));
    loop {
        let found = w.occurrences(from - step, from);
        *occurrences += found.len();
        if let Some(last) = found.last() {
            return Some(*last);
        }
        if step >= lookback {
            return None;
        }
        step = (step * 4).min(lookback);
    }
}

/// Follows a span ending at `end` (occurrences scanned up to `scanned`) through any further
/// occurrences that start before it ends. `None` if it is still going at the cap.
fn follow_span(
    w: &CompiledWindow,
    mut end: DateTime<Utc>,
    mut scanned: DateTime<Utc>,
    occurrences: &mut usize,
) -> Option<DateTime<Utc>> {
    let cap = scanned + EXTEND_CAP;
    while end > scanned {
        if scanned >= cap {
            return None;
        }
        let hi = end.max(scanned + Duration::days(1)).min(cap);
        let more = w.occurrences(scanned + Duration::nanoseconds(1), hi);
        *occurrences += more.len();
        for (start, e) in more {
            if start > end {
                return Some(end);
            }
            end = end.max(e);
        }
        scanned = hi;
    }
    Some(end)
}
