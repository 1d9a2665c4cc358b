//! When a spoke counts as connected: its stream is recorded open *and* the
//! replica serving it still holds its lease (`replica_leases`, renewed every
//! [`LEASE_EVERY`] by each running replica). Liveness costs one row write per
//! replica every few seconds, not one per cluster: an idle stream writes
//! nothing. A crashed replica stops renewing, so its spokes read as
//! disconnected once its lease expires ([`LEASE_TTL`] after its last renewal).

use chrono::{DateTime, Duration, Utc};

/// How often a replica renews its lease (the default; `--replica-lease-every`).
pub const LEASE_EVERY: std::time::Duration = std::time::Duration::from_secs(5);

/// How long a lease holds after a renewal, in renewal intervals: six, so a
/// replica whose database round-trips stall for half a minute does not flap
/// its spokes to disconnected.
pub const LEASE_RENEWALS: i32 = 6;

/// The lease time of a replica renewing every `every`.
pub fn lease_ttl(every: std::time::Duration) -> Duration {
    Duration::from_std(every * LEASE_RENEWALS as u32).unwrap_or(Duration::MAX)
}

/// The default lease time ([`LEASE_EVERY`] × [`LEASE_RENEWALS`]: 30 s).
pub const LEASE_TTL: Duration = Duration::seconds(30);

/// For streams recorded by a replica of a release without leases (during a
/// rolling upgrade): how fresh the `last_seen_at` it stamps must be.
pub const CONNECTED_WITHIN: Duration = Duration::seconds(120);

/// Whether a spoke is connected at `now`: its stream is recorded open
/// (`recorded_open`) and it was seen — connected, a report written, or its
/// replica's lease renewed (`last_seen_at` is the latest of these) — within
/// the replica's lease time (`lease_ttl_ms`; [`CONNECTED_WITHIN`] for a
/// replica without a lease).
pub fn is_connected(
    recorded_open: bool,
    last_seen_at: Option<DateTime<Utc>>,
    lease_ttl_ms: Option<i64>,
    now: DateTime<Utc>,
) -> bool {
    if !recorded_open {
        return false;
    }
    let within = lease_ttl_ms.map_or(CONNECTED_WITHIN, Duration::milliseconds);
    last_seen_at.is_some_and(|seen| now - seen <= within)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_ttl_is_six_renewals() {
        assert_eq!(lease_ttl(LEASE_EVERY), LEASE_TTL);
    }
}
