//! The manifest shape of a calendar window (`calendar: {ics: …}` or `calendar: {url: …}`, and
//! `match`), its defaults and its validation.

use chrono::Duration;
use serde::{Deserialize, Serialize};

use crate::{PolicyError, parse_duration};

/// How often the hub re-fetches a feed when `refresh` is not set.
pub const DEFAULT_REFRESH: Duration = Duration::hours(1);
/// The shortest `refresh`: feeds are other people's servers.
pub const MIN_REFRESH: Duration = Duration::minutes(1);
/// How long a feed may go unfetched before `onStale` applies, when `maxStale` is not set.
pub const DEFAULT_MAX_STALE: Duration = Duration::hours(24);
/// The largest inline `ics` text accepted.
pub const MAX_ICS_BYTES: usize = crate::budgets::INLINE_ICS_MAX_BYTES;

/// Where a calendar window's events come from: inline iCalendar text, or a feed URL the hub
/// fetches. Exactly one of `ics` and `url`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CalendarSource {
    /// RFC 5545 text (`BEGIN:VCALENDAR` … `END:VCALENDAR`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ics: Option<String>,
    /// An `https://` (or, where the hub allows it, `http://`) iCalendar feed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// How often the hub re-fetches `url` (Go-style duration, default 1h, at least 1m). A feed's
    /// own REFRESH-INTERVAL or X-PUBLISHED-TTL is a lower bound on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<String>,
    /// How long after the last successful fetch the copy counts as stale (default 24h).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_stale: Option<String>,
    /// What a stale feed does to the window (default `keep`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_stale: Option<OnStale>,
    /// An `Authorization` header for a private feed, from a secret the hub holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<CalendarAuth>,
}

/// What a calendar window does once its feed is stale (not fetched for `maxStale`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OnStale {
    /// Keep applying the last good copy (a warning is raised).
    #[default]
    Keep,
    /// Close the gate while the feed is stale, whatever the window's kind (fail safe).
    Closed,
}

impl OnStale {
    /// The manifest spelling.
    pub fn as_str(&self) -> &'static str {
        match self {
            OnStale::Keep => "keep",
            OnStale::Closed => "closed",
        }
    }
}

/// A private feed's credentials: the hub reads the secret named `secretRef.name` and sends its
/// content as the `Authorization` header value (`Bearer …`, `Basic …`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CalendarAuth {
    pub secret_ref: SecretRef,
}

/// The name of a secret the hub holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretRef {
    pub name: String,
}

/// Which events of a calendar count (`match`): every given criterion must hold; none given
/// takes every event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventMatch {
    /// The event's SUMMARY contains this text (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// The event has at least one of these CATEGORIES (case-insensitive).
    #[serde(
        default,
        deserialize_with = "crate::manifest::null_as_empty",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub categories: Vec<String>,
}

impl EventMatch {
    /// Whether an event with `summary` and `categories` is taken.
    pub fn matches(&self, summary: &str, categories: &[String]) -> bool {
        let summary_ok = self
            .summary
            .as_ref()
            .is_none_or(|s| summary.to_lowercase().contains(&s.to_lowercase()));
        let categories_ok = self.categories.is_empty()
            || self.categories.iter().any(|want| {
                categories
                    .iter()
                    .any(|c| c.eq_ignore_ascii_case(want.trim()))
            });
        summary_ok && categories_ok
    }
}

impl CalendarSource {
    /// `refresh`, or the default. Call after validation.
    pub fn refresh_every(&self) -> Duration {
        self.refresh
            .as_deref()
            .and_then(|r| parse_duration(r).ok())
            .unwrap_or(DEFAULT_REFRESH)
    }

    /// `maxStale`, or the default. Call after validation.
    pub fn max_stale_after(&self) -> Duration {
        self.max_stale
            .as_deref()
            .and_then(|r| parse_duration(r).ok())
            .unwrap_or(DEFAULT_MAX_STALE)
    }

    /// `onStale`, or the default (`keep`).
    pub fn on_stale_or_default(&self) -> OnStale {
        self.on_stale.unwrap_or_default()
    }

    /// Checks the fields that do not need the calendar's text; paths are relative to
    /// `calendar`.
    pub(crate) fn validate(&self) -> Result<(), PolicyError> {
        match (&self.ics, &self.url) {
            (Some(_), Some(_)) | (None, None) => {
                return Err(PolicyError::new(
                    "",
                    "give exactly one of: ics (inline iCalendar text) or url (a feed the hub fetches)",
                ));
            }
            (Some(ics), None) => {
                if ics.len() > MAX_ICS_BYTES {
                    return Err(PolicyError::new(
                        "ics",
                        format!("longer than {MAX_ICS_BYTES} bytes; serve it as a feed (url)"),
                    ));
                }
                for (field, set) in [
                    ("refresh", self.refresh.is_some()),
                    ("maxStale", self.max_stale.is_some()),
                    ("onStale", self.on_stale.is_some()),
                    ("auth", self.auth.is_some()),
                ] {
                    if set {
                        return Err(PolicyError::new(field, "only allowed with url"));
                    }
                }
            }
            (None, Some(url)) => validate_url(url).map_err(|e| e.within("url"))?,
        }
        if let Some(refresh) = &self.refresh {
            let d = parse_duration(refresh).map_err(|e| e.within("refresh"))?;
            if d < MIN_REFRESH {
                return Err(PolicyError::new(
                    "refresh",
                    format!("must be at least 1m, got '{refresh}'"),
                ));
            }
        }
        if let Some(max_stale) = &self.max_stale {
            let d = parse_duration(max_stale).map_err(|e| e.within("maxStale"))?;
            if d < self.refresh_every() {
                return Err(PolicyError::new(
                    "maxStale",
                    format!(
                        "must be at least refresh ({}), got '{max_stale}'",
                        crate::format_duration(self.refresh_every())
                    ),
                ));
            }
        }
        if let Some(auth) = &self.auth {
            crate::validate::dns_label(&auth.secret_ref.name)
                .map_err(|e| e.within("auth.secretRef.name"))?;
        }
        Ok(())
    }
}

/// An absolute `https://`, `webcal://` (fetched as https) or `http://` URL with a host and without credentials in it.
fn validate_url(url: &str) -> Result<(), PolicyError> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))
        .or_else(|| url.strip_prefix("webcal://"))
        .ok_or_else(|| {
            PolicyError::new("", format!("'{url}' is not an https:// (or webcal://) URL"))
        })?;
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    if authority.is_empty() {
        return Err(PolicyError::new("", format!("'{url}' has no host")));
    }
    if authority.contains('@') {
        return Err(PolicyError::new(
            "",
            "credentials in the URL are stored in plain text; use auth.secretRef",
        ));
    }
    if url.chars().any(char::is_whitespace) || url.len() > 2048 {
        return Err(PolicyError::new(
            "",
            "must be at most 2048 characters, without spaces",
        ));
    }
    Ok(())
}
