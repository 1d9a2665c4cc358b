//! `fleetgate demo`: runs the `fleetgate-demo` program installed beside this
//! one, so the CLI itself links neither the hub, the spoke, the simulator nor
//! PostgreSQL helpers.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;

use crate::error::{Error, Result};

/// The demo program's file name.
pub const PROGRAM: &str = "fleetgate-demo";

/// Replaces this process with `fleetgate-demo ARGS…`, so signals (Ctrl-C,
/// SIGTERM) reach the demo directly; returns only when that fails.
pub fn exec(args: &[OsString]) -> Result<()> {
    let me = std::env::current_exe()
        .map_err(|e| Error::Other(format!("demo: finding this program: {e}")))?;
    let program = me.with_file_name(PROGRAM);
    if !program.is_file() {
        return Err(Error::Other(format!(
            "demo: `fleetgate demo` runs {PROGRAM}, which is not beside this program ({}); \
             run the demo with `cargo run --release --bin {PROGRAM}`, or build both with \
             `cargo build --release --bin fleetgate --bin {PROGRAM}`",
            program.display()
        )));
    }
    let err = std::process::Command::new(&program).args(args).exec();
    Err(Error::Other(format!(
        "demo: running {}: {err}",
        program.display()
    )))
}
