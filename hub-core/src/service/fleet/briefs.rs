//! What the change streams compare of a cluster's report problems, a calendar feed and a
//! cluster's snapshot state ([`ReportProblemBrief`], [`FeedBrief`], [`SnapshotBrief`]). A
//! leaf of `service/fleet/`.

use chrono::{DateTime, Utc};

/// How a cluster's latest report was stored, when not cleanly: objects stored
/// repaired or left out (`total`), or the whole report refused (`write_error`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportProblemBrief {
    pub total: u32,
    pub write_error: Option<String>,
}

/// A `calendar.url` window's feed as the change streams compare it: its state and the
/// hash of the copy in use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedBrief {
    pub url: String,
    pub state: fleetgate_api_types::records::CalendarFeedState,
    /// SHA-256 (hex) of the last good copy; `None` before the first good fetch.
    pub sha256: Option<String>,
    pub occurrences: u32,
    pub changed_at: Option<DateTime<Utc>>,
}

/// A feed row as the change streams compare it.
pub fn brief(row: &crate::db::calendar_feeds::FeedRow, now: DateTime<Utc>) -> FeedBrief {
    let s = crate::service::calendars::feeds::status(row, now);
    FeedBrief {
        url: s.url,
        state: s.state,
        sha256: row.body_sha256.as_deref().map(hex::encode),
        occurrences: u32::try_from(s.occurrences).unwrap_or(u32::MAX),
        changed_at: row.changed_at,
    }
}

/// A cluster's snapshot state as the change streams compare it: what its spoke last
/// reported of the snapshot it persists in the cluster, and whether the hub holds it closed
/// because its snapshot is over its budget (the cluster's `snapshotPersistence` and
/// `snapshotOverBudget`). Both are a spoke's state, not a person's action: the streams
/// announce them, the audit log does not (as a spoke's connection or report problems).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotBrief {
    pub persistence: Option<fleetgate_api_types::SnapshotPersistence>,
    pub over_budget: Option<fleetgate_api_types::SnapshotOverBudget>,
}

impl SnapshotBrief {
    /// What a change is announced for: the persistence state (`persisted`, `failing`,
    /// `none`; `None`: never reported) and whether the cluster is over its budget. A new
    /// persisted revision, another error while failing or another size while over its
    /// budget are not announced (they come with every new snapshot).
    pub fn announced(&self) -> (Option<&str>, bool) {
        (
            self.persistence.as_ref().map(|p| p.state.as_str()),
            self.over_budget.is_some(),
        )
    }
}
