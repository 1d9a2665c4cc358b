//! Drain phases of `fleetgate-hub serve` after SIGTERM/SIGINT, logged as
//! `drain` lines with the milliseconds since the shutdown began (`phase=…
//! ms=…`), like the startup phases: a slow drain shows where its time went
//! (fleetgate-bench prints them in its storm). Every spoke of a hub without
//! another replica waits for the whole drain.

use crate::startup::Phases;

static DRAIN: Phases = Phases::new("drain");

/// Marks the start of the drain (the first call wins) and logs phase `begin`.
pub fn begin() {
    DRAIN.begin();
}

/// Logs that `name` (one word, snake_case) is done.
pub fn phase(name: &str) {
    DRAIN.phase(name);
}
