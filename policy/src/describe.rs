//! The rules of a compiled gate in words, for people: `deny 'no-deploy-friday': every Fri 00:00
//! for 72h (Europe/Berlin)`. Common cron shapes get prose; others are quoted as written.

use crate::compile::{CalendarSchedule, CompiledWindow, Schedule};
use crate::cron::CronSchedule;
use crate::{CompiledGate, OnStale, format_duration};

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

impl CompiledGate {
    /// One line per window in manifest order, then the default.
    pub fn describe(&self) -> Vec<String> {
        let mut lines: Vec<String> = self.windows.iter().map(describe_window).collect();
        let rest = if self.windows.is_empty() {
            "always"
        } else {
            "otherwise"
        };
        lines.push(format!("{rest} {} (default)", self.gate.spec.default));
        lines
    }
}

fn describe_window(w: &CompiledWindow) -> String {
    let when = match &w.schedule {
        Schedule::Cron {
            cron,
            source,
            duration,
        } => {
            format!(
                "{} for {}",
                cron_words(cron).unwrap_or_else(|| format!("at cron '{source}'")),
                format_duration(*duration)
            )
        }
        Schedule::Recurrence {
            rule,
            source,
            duration,
        } => format!(
            "rrule '{source}' from {} for {}",
            rule.dtstart.format("%Y-%m-%d %H:%M"),
            format_duration(*duration)
        ),
        Schedule::Dated { start, end } => format!(
            "from {} to {}",
            start.with_timezone(&w.tz).format("%a %Y-%m-%d %H:%M"),
            end.with_timezone(&w.tz).format("%a %Y-%m-%d %H:%M")
        ),
        Schedule::Calendar(c) => calendar_words(c),
    };
    format!("{} '{}': {when} ({})", w.kind, w.name, w.tz.name())
}

/// `every event of the inline calendar (12 events)`, `every event 'Freeze' of the calendar at
/// https://… (refreshed every 1h; if stale for 24h: keep)`.
fn calendar_words(c: &CalendarSchedule) -> String {
    let which = match &c.event_match {
        None => "every event".to_string(),
        Some(m) => {
            let mut parts = Vec::new();
            if let Some(s) = &m.summary {
                parts.push(format!("whose SUMMARY contains '{s}'"));
            }
            if !m.categories.is_empty() {
                parts.push(format!("in CATEGORIES {}", m.categories.join(",")));
            }
            format!("every event {}", parts.join(" and "))
        }
    };
    match &c.source.url {
        Some(url) => format!(
            "{which} of the calendar at {url} (refreshed every {}; if not fetched for {}: {})",
            format_duration(c.source.refresh_every()),
            format_duration(c.source.max_stale_after()),
            match c.source.on_stale_or_default() {
                OnStale::Keep => "keep the last copy",
                OnStale::Closed => "closed",
            }
        ),
        None => format!("{which} of the inline calendar ({} events)", c.events),
    }
}

/// Prose for the common shape `M H * * DOW-list`: `every Mon,Thu 08:00`, `every day 08:00`.
fn cron_words(c: &CronSchedule) -> Option<String> {
    let single = |bits: u64| (bits.count_ones() == 1).then(|| bits.trailing_zeros());
    let minute = single(c.minutes)?;
    let hour = single(u64::from(c.hours))?;
    if !c.dom_star || c.months != 0b1_1111_1111_1110 {
        return None;
    }
    let days = if c.days_of_week == 0x7f {
        "day".to_string()
    } else {
        let names: Vec<&str> = (0..7)
            .filter(|d| c.days_of_week & (1 << d) != 0)
            .map(|d| DAYS[d])
            .collect();
        names.join(",")
    };
    if c.days_of_month != 0xffff_fffe {
        return None;
    }
    Some(format!("every {days} {hour:02}:{minute:02}"))
}
