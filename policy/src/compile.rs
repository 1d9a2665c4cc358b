//! Compiling a gate: validating every field and turning each window into a schedule that can
//! list its occurrences (start and end instants) in any range of time.

use std::sync::Arc;

use chrono::{DateTime, Duration, NaiveDateTime, Offset, Utc};
use chrono_tz::Tz;

use crate::cron::CronSchedule;
use crate::localtime::{ManifestTime, parse_zone, resolve_local, to_local};
use crate::recurrence::Recurrence;
use crate::validate::validate_structure;
use crate::{
    CalendarSource, Calendars, EventMatch, Gate, Occurrence, OnStale, PolicyError, Window,
    WindowKind, parse_duration, read_calendar,
};

/// A validated gate, ready to evaluate. Cheap to clone is not a goal; compile once, evaluate often.
#[derive(Debug, Clone)]
pub struct CompiledGate {
    pub(crate) gate: Gate,
    pub(crate) tz: Tz,
    pub(crate) windows: Vec<CompiledWindow>,
}

/// One window with its schedule resolved.
#[derive(Debug, Clone)]
pub(crate) struct CompiledWindow {
    pub(crate) name: String,
    pub(crate) kind: WindowKind,
    pub(crate) tz: Tz,
    pub(crate) schedule: Schedule,
}

#[derive(Debug, Clone)]
pub(crate) enum Schedule {
    Cron {
        cron: CronSchedule,
        source: String,
        duration: Duration,
    },
    Recurrence {
        rule: Box<Recurrence>,
        source: String,
        duration: Duration,
    },
    Dated {
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    },
    Calendar(Box<CalendarSchedule>),
}

/// A calendar window's occurrences over the compile horizon, and what a stale feed does.
#[derive(Debug, Clone)]
pub(crate) struct CalendarSchedule {
    /// Sorted by start.
    pub(crate) occurrences: Arc<[Occurrence]>,
    /// The longest occurrence: how far back one may start and still cover an instant.
    pub(crate) longest: Duration,
    pub(crate) source: CalendarSource,
    pub(crate) event_match: Option<EventMatch>,
    /// VEVENTs in the inline text (0 for a feed: the hub counts those).
    pub(crate) events: usize,
    /// When the feed's copy turns (or turned) stale; `None` for inline text.
    pub(crate) stale_at: Option<DateTime<Utc>>,
}

impl CalendarSchedule {
    /// From when the window closes the gate because its feed is stale (`onStale: closed`).
    pub(crate) fn closes_from(&self) -> Option<DateTime<Utc>> {
        (self.source.on_stale_or_default() == OnStale::Closed)
            .then_some(self.stale_at)
            .flatten()
    }

    /// The SUMMARY of the occurrence that covers `t` and lasts longest.
    pub(crate) fn summary_at(&self, t: DateTime<Utc>) -> Option<&str> {
        let from = self
            .occurrences
            .partition_point(|o| o.start < t - self.longest);
        self.occurrences[from..]
            .iter()
            .take_while(|o| o.start <= t)
            .filter(|o| o.end > t)
            .max_by_key(|o| o.end)
            .map(|o| &*o.summary)
    }
}

/// How far a wall-clock time may be from the local reading of the instant it maps to, beyond
/// the offset changes seen around the range: covers every ordinary DST shift (at most 2 h).
const WALL_SLACK: Duration = Duration::hours(3);

/// The wall-clock range to scan for starts in `[lo, hi]`: the local readings widened by the
/// spread of the zone's offsets around the range (24 h where a day was skipped, as in Apia).
fn wall_range(tz: Tz, lo: DateTime<Utc>, hi: DateTime<Utc>) -> (NaiveDateTime, NaiveDateTime) {
    let offsets = [lo - Duration::days(2), lo, hi, hi + Duration::days(2)]
        .map(|t| i64::from(t.with_timezone(&tz).offset().fix().local_minus_utc()));
    let spread = offsets.iter().max().unwrap_or(&0) - offsets.iter().min().unwrap_or(&0);
    let slack = WALL_SLACK + Duration::seconds(spread);
    (to_local(tz, lo) - slack, to_local(tz, hi) + slack)
}

impl CompiledWindow {
    /// Occurrences `(start, end)` whose start lies in `[lo, hi]`, sorted by start, deduplicated.
    pub(crate) fn occurrences(
        &self,
        lo: DateTime<Utc>,
        hi: DateTime<Utc>,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let (wall_lo, wall_hi) = wall_range(self.tz, lo, hi);
        let (walls, duration) = match &self.schedule {
            Schedule::Cron { cron, duration, .. } => {
                (cron.matches_between(wall_lo, wall_hi), *duration)
            }
            Schedule::Recurrence { rule, duration, .. } => {
                (rule.between(wall_lo, wall_hi), *duration)
            }
            Schedule::Dated { start, end } => {
                return if lo <= *start && *start <= hi {
                    vec![(*start, *end)]
                } else {
                    vec![]
                };
            }
            Schedule::Calendar(c) => {
                let first = c.occurrences.partition_point(|o| o.start < lo);
                return c.occurrences[first..]
                    .iter()
                    .take_while(|o| o.start <= hi)
                    .map(|o| (o.start, o.end))
                    .collect();
            }
        };
        // Wall times map to instants monotonically except around DST gaps, so sort afterwards.
        let mut starts: Vec<DateTime<Utc>> = walls
            .into_iter()
            .map(|w| resolve_local(self.tz, w))
            .filter(|t| lo <= *t && *t <= hi)
            .collect();
        starts.sort_unstable();
        starts.dedup();
        starts.into_iter().map(|s| (s, s + duration)).collect()
    }

    /// How far before an instant an occurrence may start and still cover it.
    pub(crate) fn lookback(&self) -> Duration {
        match &self.schedule {
            Schedule::Cron { duration, .. } | Schedule::Recurrence { duration, .. } => *duration,
            Schedule::Dated { start, end } => *end - *start,
            Schedule::Calendar(c) => c.longest,
        }
    }

    /// The calendar behind a calendar window.
    pub(crate) fn calendar(&self) -> Option<&CalendarSchedule> {
        match &self.schedule {
            Schedule::Calendar(c) => Some(c),
            _ => None,
        }
    }
}

impl Gate {
    /// Checks the whole manifest; the error names the first offending field's path.
    /// Every string must be storable ([`crate::text`]), whatever the manifest's source.
    pub fn validate(&self) -> Result<(), PolicyError> {
        crate::text::check_serialize(self)?;
        self.compile().map(|_| ())
    }

    /// Validates and compiles the gate for evaluation. Calendar windows are expanded around
    /// the current time ([`Calendars::at`]); feeds (`calendar.url`) count as never fetched. Use
    /// [`Gate::compile_with`] to give the instant and the feeds' occurrences.
    pub fn compile(&self) -> Result<CompiledGate, PolicyError> {
        self.compile_with(&Calendars::at(Utc::now()))
    }

    /// The state at `from` and every change until `to`, calendars expanded over the whole
    /// range (plus the default horizon around `now`) with `feeds`' occurrences: the one preview
    /// the hub answers and the CLI computes offline from a file.
    pub fn preview_over(
        &self,
        now: DateTime<Utc>,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        feeds: Vec<crate::FeedOccurrences>,
        overrides: &[crate::Override],
    ) -> Result<crate::Preview, PolicyError> {
        let calendars = Calendars::at(now).covering(from, to).with_feeds(feeds);
        Ok(self.compile_with(&calendars)?.preview(from, to, overrides))
    }

    /// Validates and compiles the gate, expanding calendar windows over `calendars`' horizon
    /// and taking feed windows' occurrences from it.
    pub fn compile_with(&self, calendars: &Calendars) -> Result<CompiledGate, PolicyError> {
        validate_structure(self)?;
        let tz = match &self.spec.time_zone {
            Some(name) => parse_zone(name).map_err(|e| e.within("spec.timeZone"))?,
            None => Tz::UTC,
        };
        let windows = self
            .spec
            .windows
            .iter()
            .enumerate()
            .map(|(i, w)| {
                compile_window(w, tz, calendars)
                    .map_err(|e| e.within(&format!("spec.windows[{i}]")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // Inline calendars together (a feed's occurrences are budgeted when the hub takes a
        // copy: a feed past the gate's budget is refused there, never here).
        let inline: usize = self
            .spec
            .windows
            .iter()
            .zip(&windows)
            .filter(|(w, _)| w.calendar.as_ref().is_some_and(|c| c.ics.is_some()))
            .filter_map(|(_, c)| c.calendar().map(|c| c.occurrences.len()))
            .sum();
        if inline > crate::budgets::GATE_MAX_OCCURRENCES {
            return Err(PolicyError::new(
                "spec.windows",
                format!(
                    "the inline calendars expand to {inline} occurrences in the horizon together, over the budget of {}",
                    crate::budgets::GATE_MAX_OCCURRENCES
                ),
            ));
        }
        Ok(CompiledGate {
            gate: self.clone(),
            tz,
            windows,
        })
    }
}

/// Compiles one window; error paths are relative to the window.
fn compile_window(
    w: &Window,
    gate_tz: Tz,
    calendars: &Calendars,
) -> Result<CompiledWindow, PolicyError> {
    let tz = match &w.time_zone {
        Some(name) => parse_zone(name).map_err(|e| e.within("timeZone"))?,
        None => gate_tz,
    };
    let shape = (
        w.schedule.is_some(),
        w.rrule.is_some(),
        w.start.is_some() || w.end.is_some(),
        w.calendar.is_some(),
    );
    if w.event_match.is_some() && w.calendar.is_none() {
        return Err(PolicyError::new("match", "only allowed with calendar"));
    }
    let schedule = match shape {
        (false, false, false, true) => {
            if w.duration.is_some() {
                return Err(PolicyError::new(
                    "duration",
                    "not allowed with calendar (each event lasts as long as the calendar says)",
                ));
            }
            compile_calendar(w, tz, calendars)?
        }
        (true, false, false, false) => {
            let source = w.schedule.clone().unwrap_or_default();
            let cron = CronSchedule::parse(&source).map_err(|e| e.within("schedule"))?;
            let duration = required_duration(w)?;
            // A calendar repeats within 28 years, so no match in 2000–2028 means never.
            let epoch = chrono::NaiveDate::from_ymd_opt(2000, 1, 1)
                .unwrap_or_default()
                .and_time(chrono::NaiveTime::MIN);
            if cron
                .next_at_or_after(epoch, epoch + Duration::days(366 * 29))
                .is_none()
            {
                return Err(PolicyError::new(
                    "schedule",
                    format!("cron expression '{source}' never matches"),
                ));
            }
            Schedule::Cron {
                cron,
                source,
                duration,
            }
        }
        (false, true, false, false) => {
            let source = w.rrule.clone().unwrap_or_default();
            let dtstart = match &w.dtstart {
                None => {
                    return Err(PolicyError::new(
                        "dtstart",
                        "required with rrule (local wall-clock time, e.g. 2026-01-01T22:00:00)",
                    ));
                }
                Some(s) => match ManifestTime::parse(s).map_err(|e| e.within("dtstart"))? {
                    ManifestTime::Local(t) => t,
                    ManifestTime::Absolute(_) => {
                        return Err(PolicyError::new(
                            "dtstart",
                            "must be local wall-clock time without an offset (the zone is timeZone)",
                        ));
                    }
                },
            };
            let rule = Recurrence::parse(&source, dtstart).map_err(|e| e.within("rrule"))?;
            let duration = required_duration(w)?;
            Schedule::Recurrence {
                rule: Box::new(rule),
                source,
                duration,
            }
        }
        (false, false, true, false) => {
            if w.duration.is_some() {
                return Err(PolicyError::new(
                    "duration",
                    "not allowed with start/end (the window lasts from start to end)",
                ));
            }
            let start = w
                .start
                .as_deref()
                .ok_or_else(|| PolicyError::new("start", "required with end"))?;
            let end = w
                .end
                .as_deref()
                .ok_or_else(|| PolicyError::new("end", "required with start"))?;
            let start = ManifestTime::parse(start)
                .map_err(|e| e.within("start"))?
                .instant(tz);
            let end = ManifestTime::parse(end)
                .map_err(|e| e.within("end"))?
                .instant(tz);
            if start >= end {
                return Err(PolicyError::new("end", "must be after start"));
            }
            Schedule::Dated { start, end }
        }
        _ => {
            return Err(PolicyError::new(
                "",
                "give exactly one of: schedule + duration (cron), rrule + dtstart + duration, start + end, or calendar",
            ));
        }
    };
    if w.dtstart.is_some() && !matches!(schedule, Schedule::Recurrence { .. }) {
        return Err(PolicyError::new("dtstart", "only allowed with rrule"));
    }
    Ok(CompiledWindow {
        name: w.name.clone(),
        kind: w.kind,
        tz,
        schedule,
    })
}

/// A calendar window: inline text expanded over the horizon (strict: any event that cannot be
/// read fails validation, naming its line and property), or a feed's occurrences as given.
fn compile_calendar(w: &Window, tz: Tz, calendars: &Calendars) -> Result<Schedule, PolicyError> {
    let source = w.calendar.clone().unwrap_or_default();
    source.validate().map_err(|e| e.within("calendar"))?;
    if let Some(m) = &w.event_match
        && m.summary.as_deref().is_some_and(|s| s.trim().is_empty())
    {
        return Err(PolicyError::new("match.summary", "must not be empty"));
    }
    let (occurrences, events, stale_at) = match &source.ics {
        Some(text) => {
            // The same reading (and budgets) as a fetched feed: any problem refuses the text.
            let expanded = read_calendar(
                text.as_bytes(),
                tz,
                w.event_match.as_ref(),
                calendars.from,
                calendars.to,
            )
            .map_err(|e| PolicyError::new("calendar.ics", e.to_string()))?;
            (expanded.occurrences, expanded.events, None)
        }
        None => match calendars.feeds.iter().find(|f| f.window == w.name) {
            Some(feed) => (feed.occurrences.clone(), 0, feed.stale_at),
            // Never fetched: stale from the start.
            None => (Vec::new(), 0, Some(DateTime::<Utc>::UNIX_EPOCH)),
        },
    };
    let longest = occurrences
        .iter()
        .map(|o| o.end - o.start)
        .max()
        .unwrap_or_else(Duration::zero);
    Ok(Schedule::Calendar(Box::new(CalendarSchedule {
        occurrences: occurrences.into(),
        longest,
        source,
        event_match: w.event_match.clone(),
        events,
        stale_at,
    })))
}

fn required_duration(w: &Window) -> Result<Duration, PolicyError> {
    let text = w
        .duration
        .as_deref()
        .ok_or_else(|| PolicyError::new("duration", "required (Go-style, e.g. 81h, 1h30m)"))?;
    parse_duration(text).map_err(|e| e.within("duration"))
}

impl CompiledGate {
    /// The manifest this was compiled from.
    pub fn gate(&self) -> &Gate {
        &self.gate
    }

    /// The gate's name.
    pub fn name(&self) -> &str {
        self.gate.name()
    }

    /// The gate's zone (`spec.timeZone`, UTC when absent).
    pub fn time_zone(&self) -> Tz {
        self.tz
    }

    /// Whether a calendar window has an edge at `t`: one of its occurrences starts or ends
    /// then, or its feed turns stale then with `onStale: closed`. The hub names such a
    /// transition's cause `calendar` (rather than `window`).
    pub fn calendar_edge_at(&self, t: DateTime<Utc>) -> bool {
        self.windows.iter().filter_map(|w| w.calendar()).any(|c| {
            c.closes_from() == Some(t) || c.occurrences.iter().any(|o| o.start == t || o.end == t)
        })
    }
}
