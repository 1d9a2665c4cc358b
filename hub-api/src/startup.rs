//! Startup phases of `fleetgate-hub serve`, logged as `startup` lines with the
//! milliseconds since the process began serving (`phase=… ms=…`), so a slow
//! start shows where its time went (fleetgate-bench prints them in its storm).
//! The drain after SIGTERM is logged the same way ([`crate::drain`]).

use std::sync::OnceLock;
use std::time::Instant;

/// A log of named phases, each with the milliseconds since [`Phases::begin`].
pub(crate) struct Phases {
    /// The log line's message (`startup`, `drain`).
    what: &'static str,
    began: OnceLock<Instant>,
}

impl Phases {
    pub(crate) const fn new(what: &'static str) -> Self {
        Self {
            what,
            began: OnceLock::new(),
        }
    }

    /// Marks the start (the first call wins) and logs phase `begin`.
    pub(crate) fn begin(&self) {
        let _ = self.began.set(Instant::now());
        self.phase("begin");
    }

    /// Logs that `name` (one word, snake_case) is done.
    pub(crate) fn phase(&self, name: &str) {
        let began = self.began.get_or_init(Instant::now);
        let ms = began.elapsed().as_secs_f64() * 1e3;
        tracing::info!(phase = name, ms = format!("{ms:.1}"), "{}", self.what);
    }
}

static STARTUP: Phases = Phases::new("startup");

/// Marks the start (the first call wins) and logs phase `begin`.
pub fn begin() {
    STARTUP.begin();
}

/// Logs that `name` (one word, snake_case) is done.
pub fn phase(name: &str) {
    STARTUP.phase(name);
}
