//! Startup phases of `fleetgate-hub serve`, logged as `startup` lines with the
//! milliseconds since the process began serving (`phase=… ms=…`), so a slow
//! start shows where its time went (fleetgate-bench prints them in its storm).

use std::sync::OnceLock;
use std::time::Instant;

static BEGAN: OnceLock<Instant> = OnceLock::new();

/// Marks the start (the first call wins) and logs phase `begin`.
pub fn begin() {
    let _ = BEGAN.set(Instant::now());
    phase("begin");
}

/// Logs that `name` (one word, snake_case) is done.
pub fn phase(name: &str) {
    let began = BEGAN.get_or_init(Instant::now);
    let ms = began.elapsed().as_secs_f64() * 1e3;
    tracing::info!(phase = name, ms = format!("{ms:.1}"), "startup");
}
