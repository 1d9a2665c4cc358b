//! `spec.rollout`: a gate that opens its clusters progressively, in ordered waves, with a soak
//! time between waves and a health-based halt. The manifest types, their validation (errors
//! name the field path) and the parsed durations/amounts the hub's rollout driver uses.

use std::fmt;

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::{ClusterScope, PolicyError};

/// How long a released wave may take to become healthy when `healthTimeout` is not set. Always
/// finite: a wave that waits for health forever halts nothing and blocks everything.
pub const DEFAULT_HEALTH_TIMEOUT: Duration = Duration::minutes(30);
/// How long an object may be Ready=False (or Stalled) at the new revision before its cluster
/// counts as failed, when `failureGrace` is not set: Flux reports Ready=False for a moment
/// while a new revision applies.
pub const DEFAULT_FAILURE_GRACE: Duration = Duration::seconds(60);
/// The longest `healthTimeout` and `soak`.
pub const MAX_ROLLOUT_DURATION: Duration = Duration::days(7);
/// The most waves a rollout may have.
pub const MAX_WAVES: usize = 50;

/// `spec.rollout`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rollout {
    /// The waves, in release order; the last one also takes every in-scope cluster no earlier
    /// wave placed.
    pub waves: Vec<Wave>,
    /// A cluster label ordering clusters before their name when a wave takes a `count` or
    /// `percent` of the clusters not yet placed (numbers numerically, before other values;
    /// clusters without it last).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort_label: Option<String>,
    /// After a wave is healthy, how long to wait before releasing the next. None: no wait.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak: Option<String>,
    /// How long a released wave may take to become healthy; [`DEFAULT_HEALTH_TIMEOUT`] if unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_timeout: Option<String>,
    /// How long an object may be Ready=False or Stalled at the new revision before its
    /// cluster counts as failed; [`DEFAULT_FAILURE_GRACE`] if unset. Shorter than the
    /// health timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_grace: Option<String>,
    /// How many clusters of a wave may fail before the rollout stops (count or `"N%"` of the
    /// wave, rounded down); 0 when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failures: Option<Amount>,
    /// What a stopped rollout does.
    #[serde(default)]
    pub on_failure: OnFailure,
}

/// One wave: clusters by name or selector, or a `count` / `percent` of the in-scope clusters
/// no earlier wave placed. The last wave may leave all of them out (it takes the rest).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Wave {
    /// Shown on every surface; `wave-N` (1-based) when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Clusters by name and/or label selector (among the gate's clusters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clusters: Option<ClusterScope>,
    /// This many of the clusters not yet placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// This share (1–100, rounded up) of the clusters not yet placed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent: Option<u32>,
    /// An operator releases this wave (`rollout release-next`); the previous wave must be
    /// healthy and soaked first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval: bool,
}

/// A count or a percentage (`3` or `"25%"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Amount {
    Count(u32),
    Percent(u32),
}

impl Amount {
    /// The allowed number out of `of` (a percentage rounds down, so `10%` of 5 is 0).
    pub fn of(&self, of: usize) -> usize {
        match *self {
            Amount::Count(n) => n as usize,
            Amount::Percent(p) => of * p as usize / 100,
        }
    }
}

impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Amount::Count(n) => write!(f, "{n}"),
            Amount::Percent(p) => write!(f, "{p}%"),
        }
    }
}

impl Serialize for Amount {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Amount::Count(n) => s.serialize_u32(*n),
            Amount::Percent(_) => s.serialize_str(&self.to_string()),
        }
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Amount;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a count (3) or a percentage ('25%')")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Amount, E> {
                u32::try_from(v)
                    .map(Amount::Count)
                    .map_err(|_| E::custom(format!("{v} is too large")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Amount, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v} is negative")))
                    .and_then(|v| self.visit_u64(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Amount, E> {
                let text = v.trim();
                if let Some(p) = text.strip_suffix('%') {
                    return p.trim().parse().map(Amount::Percent).map_err(|_| {
                        E::custom(format!("'{v}' is not a count or a percentage like '10%'"))
                    });
                }
                text.parse().map(Amount::Count).map_err(|_| {
                    E::custom(format!("'{v}' is not a count or a percentage like '10%'"))
                })
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// What happens when a wave has more failed clusters than `maxFailures`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum OnFailure {
    /// The remaining waves stay closed; released clusters stay open.
    #[default]
    Halt,
    /// As `halt`, and the wave that failed is closed again.
    Close,
}

impl OnFailure {
    /// The manifest spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            OnFailure::Halt => "halt",
            OnFailure::Close => "close",
        }
    }
}

impl Rollout {
    /// The soak between waves (zero when unset). Call after validation.
    pub fn soak(&self) -> Duration {
        self.soak
            .as_deref()
            .and_then(|s| crate::parse_duration(s).ok())
            .unwrap_or_else(Duration::zero)
    }

    /// The health timeout of a released wave. Call after validation.
    pub fn health_timeout(&self) -> Duration {
        self.health_timeout
            .as_deref()
            .and_then(|s| crate::parse_duration(s).ok())
            .unwrap_or(DEFAULT_HEALTH_TIMEOUT)
    }

    /// How long a failing object is given before its cluster counts as failed. Call after
    /// validation.
    pub fn failure_grace(&self) -> Duration {
        self.failure_grace
            .as_deref()
            .and_then(|s| crate::parse_duration(s).ok())
            .unwrap_or(DEFAULT_FAILURE_GRACE)
    }

    /// How many failed clusters a wave of `size` tolerates.
    pub fn max_failures(&self, size: usize) -> usize {
        self.max_failures.map_or(0, |a| a.of(size))
    }

    /// The display name of wave `i` (0-based).
    pub fn wave_name(&self, i: usize) -> String {
        self.waves
            .get(i)
            .and_then(|w| w.name.clone())
            .unwrap_or_else(|| format!("wave-{}", i + 1))
    }

    /// One line per wave and one for the settings, for people (`gate validate`, preview).
    pub fn describe(&self) -> Vec<String> {
        let last = self.waves.len().saturating_sub(1);
        let mut lines: Vec<String> = self
            .waves
            .iter()
            .enumerate()
            .map(|(i, w)| {
                let who = if let Some(scope) = &w.clusters {
                    let mut parts = Vec::new();
                    if !scope.names.is_empty() {
                        parts.push(format!("clusters {}", scope.names.join(", ")));
                    }
                    if let Some(sel) = &scope.selector {
                        let sel = serde_json::to_string(sel).unwrap_or_default();
                        parts.push(format!("selector {sel}"));
                    }
                    parts.join(" or ")
                } else if let Some(n) = w.count {
                    format!("{n} of the clusters not yet placed")
                } else if let Some(p) = w.percent {
                    format!("{p}% of the clusters not yet placed")
                } else {
                    String::new()
                };
                let rest = match (i == last, who.is_empty()) {
                    (true, true) => "the rest".to_string(),
                    (true, false) => format!("{who}, and the rest"),
                    (false, _) => who,
                };
                let approval = if w.approval { " (after approval)" } else { "" };
                format!("wave {} '{}': {rest}{approval}", i + 1, self.wave_name(i))
            })
            .collect();
        lines.push(format!(
            "soak {}, healthTimeout {}, failureGrace {}, maxFailures {} per wave, onFailure {}",
            crate::format_duration(self.soak()),
            crate::format_duration(self.health_timeout()),
            crate::format_duration(self.failure_grace()),
            self.max_failures.unwrap_or(Amount::Count(0)),
            self.on_failure.as_str()
        ));
        lines
    }

    /// Checks every field; errors are relative to `spec.rollout`.
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        if self.waves.is_empty() {
            return Err(PolicyError::new("waves", "give at least one wave"));
        }
        if self.waves.len() > MAX_WAVES {
            return Err(PolicyError::new(
                "waves",
                format!("at most {MAX_WAVES} waves, got {}", self.waves.len()),
            ));
        }
        let last = self.waves.len() - 1;
        let mut names = std::collections::BTreeSet::new();
        for (i, wave) in self.waves.iter().enumerate() {
            wave.validate(i == last)
                .map_err(|e| e.within(&format!("waves[{i}]")))?;
            if !names.insert(self.wave_name(i)) {
                return Err(PolicyError::new(
                    format!("waves[{i}].name"),
                    format!("duplicate wave name '{}'", self.wave_name(i)),
                ));
            }
        }
        if let Some(label) = &self.sort_label
            && label.trim().is_empty()
        {
            return Err(PolicyError::new("sortLabel", "must not be empty"));
        }
        bounded(self.soak.as_deref(), "soak")?;
        bounded(self.health_timeout.as_deref(), "healthTimeout")?;
        bounded(self.failure_grace.as_deref(), "failureGrace")?;
        // A grace as long as the timeout would turn every failing object into a timeout:
        // the failure's own Ready message would never be what halts the wave.
        if let Some(text) = self.failure_grace.as_deref()
            && self.failure_grace() >= self.health_timeout()
        {
            return Err(PolicyError::new(
                "failureGrace",
                format!(
                    "must be shorter than healthTimeout ({}), got '{text}'",
                    crate::format_duration(self.health_timeout())
                ),
            ));
        }
        if let Some(Amount::Percent(p)) = self.max_failures
            && p > 100
        {
            return Err(PolicyError::new(
                "maxFailures",
                format!("a percentage is at most 100%, got {p}%"),
            ));
        }
        Ok(())
    }
}

impl Wave {
    fn validate(&self, last: bool) -> Result<(), PolicyError> {
        if let Some(name) = &self.name {
            crate::dns::dns_label(name).map_err(|e| e.within("name"))?;
        }
        let chosen = [
            self.clusters.is_some(),
            self.count.is_some(),
            self.percent.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if chosen > 1 {
            return Err(PolicyError::new(
                "",
                "give one of clusters, count or percent",
            ));
        }
        if chosen == 0 && !last {
            return Err(PolicyError::new(
                "",
                "give clusters, count or percent (only the last wave may take the rest)",
            ));
        }
        if let Some(scope) = &self.clusters {
            if scope.names.is_empty() && scope.selector.is_none() {
                return Err(PolicyError::new(
                    "clusters",
                    "give cluster names, a selector, or both",
                ));
            }
            for (i, n) in scope.names.iter().enumerate() {
                if n.trim().is_empty() {
                    return Err(PolicyError::new(
                        format!("clusters.names[{i}]"),
                        "must not be empty",
                    ));
                }
            }
            if let Some(selector) = &scope.selector {
                selector
                    .validate()
                    .map_err(|e| e.within("clusters.selector"))?;
            }
        }
        if self.count == Some(0) {
            return Err(PolicyError::new("count", "must be at least 1"));
        }
        if let Some(p) = self.percent
            && !(1..=100).contains(&p)
        {
            return Err(PolicyError::new(
                "percent",
                format!("must be 1 to 100, got {p}"),
            ));
        }
        Ok(())
    }
}

fn bounded(text: Option<&str>, path: &str) -> Result<(), PolicyError> {
    let Some(text) = text else { return Ok(()) };
    let d = crate::parse_duration(text).map_err(|e| e.within(path))?;
    if d > MAX_ROLLOUT_DURATION {
        return Err(PolicyError::new(
            path,
            format!(
                "at most {}, got '{text}'",
                crate::format_duration(MAX_ROLLOUT_DURATION)
            ),
        ));
    }
    Ok(())
}
