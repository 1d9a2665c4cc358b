//! Warnings about a valid gate: cron schedules whose meaning changed when fleetgate moved from
//! the Vixie cron day rule to Kubernetes CronJob's (robfig/cron v3). A gate stored before the
//! change is read the new way; people should hear which fields now mean something else.

use std::fmt;

use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};

use crate::Gate;
use crate::cron::{CronSchedule, Dialect};

/// Something valid but probably not what the author meant, tied to a manifest field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Warning {
    /// Field path such as `spec.windows[0].schedule`.
    pub path: String,
    /// What to look at, for people.
    pub message: String,
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl Gate {
    /// Warnings about fields that are valid but read differently than before: today, cron
    /// schedules whose days differ between the Kubernetes CronJob dialect and fleetgate's old
    /// Vixie-style one. Invalid fields are [`Gate::validate`]'s business and give no warning.
    pub fn warnings(&self) -> Vec<Warning> {
        self.spec
            .windows
            .iter()
            .enumerate()
            .filter_map(|(i, w)| {
                let message = cron_meaning_changed(w.schedule.as_deref()?)?;
                Some(Warning {
                    path: format!("spec.windows[{i}].schedule"),
                    message,
                })
            })
            .collect()
    }
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];

/// Why `expr` fires on other days now than under the old dialect, or `None` when both read it
/// the same (or either rejects it). Minutes, hours and months are read alike by both.
pub(crate) fn cron_meaning_changed(expr: &str) -> Option<String> {
    let new = CronSchedule::parse_as(expr, Dialect::Kubernetes).ok()?;
    let old = CronSchedule::parse_as(expr, Dialect::Legacy).ok()?;
    let either = |c: &CronSchedule| !(c.dom_star || c.dow_star);
    if new.days_of_week == old.days_of_week && either(&new) == either(&old) {
        // The same day sets combined the same way: nothing to compare day by day.
        return None;
    }
    // The Gregorian calendar repeats every 28 years between 1901 and 2099, so this is every
    // combination of month, day, weekday and leap year.
    let first = NaiveDate::from_ymd_opt(2000, 1, 1)?;
    let differs = first
        .iter_days()
        .take_while(|d| d.year() < 2028)
        .any(|d| new.months & (1 << d.month()) != 0 && new.day_matches(d) != old.day_matches(d));
    if !differs {
        return None;
    }
    let mut why = Vec::new();
    if either(&new) != either(&old) {
        why.push(if either(&new) {
            "a day field stepped like '*/2' now counts as restricted, so a day matches when day-of-month OR day-of-week matches (before: both had to)"
                .to_string()
        } else {
            "a day matches only when day-of-month AND day-of-week match (before: either)".to_string()
        });
    }
    if new.days_of_week != old.days_of_week {
        let dow = expr.split_whitespace().nth(4).unwrap_or(expr);
        why.push(format!(
            "day-of-week '{dow}' now means {} (before: {}); steps end on Saturday",
            day_names(new.days_of_week),
            day_names(old.days_of_week)
        ));
    }
    Some(format!(
        "cron '{expr}' fires on other days than before: fleetgate now reads cron like Kubernetes CronJob (robfig/cron v3); {}",
        why.join("; ")
    ))
}

fn day_names(bits: u8) -> String {
    (0..7)
        .filter(|d| bits & (1 << d) != 0)
        .map(|d| DAYS[d])
        .collect::<Vec<_>>()
        .join(",")
}
