//! When a spoke counts as connected: its stream is recorded open *and* the
//! replica serving it refreshed `last_seen_at` recently. A crashed replica
//! stops refreshing, so its spokes read as disconnected after a grace period.

use chrono::{DateTime, Duration, Utc};

use crate::db::clusters::ClusterRow;

/// How fresh `last_seen_at` must be for `connected` to count. The serving
/// replica refreshes it on every stream keepalive (15 s by default, see
/// `--spoke-keepalive`) and every spoke report (heartbeat 30 s by default),
/// so 90 s tolerates several missed refreshes without flapping.
pub const CONNECTED_WITHIN: Duration = Duration::seconds(90);

/// Whether `row`'s spoke is connected at `now`.
pub fn is_connected(row: &ClusterRow, now: DateTime<Utc>) -> bool {
    row.connected
        && row
            .last_seen_at
            .is_some_and(|seen| now - seen <= CONNECTED_WITHIN)
}

/// `row` with `connected` as derived at `now` (everything shown to clients
/// goes through this, so a crashed replica's stale flag never leaks).
pub fn at(mut row: ClusterRow, now: DateTime<Utc>) -> ClusterRow {
    row.connected = is_connected(&row, now);
    row
}
