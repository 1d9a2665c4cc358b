//! When a spoke counts as connected: its stream is recorded open *and* the
//! replica serving it refreshed `last_seen_at` recently. A crashed replica
//! stops refreshing, so its spokes read as disconnected after a grace period.

use chrono::{DateTime, Duration, Utc};

use crate::db::clusters::ClusterRow;

/// How fresh `last_seen_at` must be for `connected` to count: the stamps of a
/// live stream are at most ~60 s apart ([`STAMP_EVERY`](crate::db::reports::STAMP_EVERY) on the 15 s keepalive
/// grid), so 120 s tolerates a stalled minute without flapping.
pub const CONNECTED_WITHIN: Duration = Duration::seconds(120);

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
