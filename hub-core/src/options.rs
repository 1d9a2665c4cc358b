//! What every component's options type shares: parsing the Go-style durations its flags take.
//! Each component owns its options (`EgressOptions`, `NotifyOptions`, `CalendarOptions`, ...);
//! the binary's configuration assembles them, and nothing here imports it.

use std::time::Duration;

/// A Go-style duration ("15s", "30m") as a std duration.
pub fn parse_std_duration(s: &str) -> std::result::Result<Duration, String> {
    fleetgate_policy::parse_duration(s)
        .map_err(|e| e.message)?
        .to_std()
        .map_err(|e| e.to_string())
}
