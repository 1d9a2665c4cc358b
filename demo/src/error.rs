//! The demo's errors: the CLI's error type, with what the demo was doing.

use fleetgate::error::Error;

pub(crate) fn other(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("demo: {what}: {e}"))
}
