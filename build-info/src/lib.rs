//! Used by the build scripts of the shipped binaries (hub, spoke, CLI): sets
//! `FLEETGATE_COMMIT` for the crate being built to the commit it is built
//! from, so `env!("FLEETGATE_COMMIT")` names it beside `CARGO_PKG_VERSION`.
//!
//! The commit is, in order: the `FLEETGATE_COMMIT` environment variable (the
//! Dockerfiles' build argument: an image is built from a copy without `.git`),
//! `git rev-parse HEAD` of the checkout, else `unknown`. With git, the build
//! script runs again when HEAD moves (a commit or a checkout), so a binary
//! never names an older commit than the one it was built from.
#![forbid(unsafe_code)]

use std::path::Path;
use std::process::Command;

/// What a binary built without git and without `FLEETGATE_COMMIT` reports.
pub const UNKNOWN: &str = "unknown";

/// Prints the `cargo::` lines that set `FLEETGATE_COMMIT` (call from `build.rs`).
pub fn emit_commit() {
    println!("cargo::rerun-if-env-changed=FLEETGATE_COMMIT");
    let commit = match std::env::var("FLEETGATE_COMMIT") {
        Ok(c) if !c.trim().is_empty() => c.trim().to_owned(),
        _ => git_head().unwrap_or_else(|| UNKNOWN.to_owned()),
    };
    println!("cargo::rustc-env=FLEETGATE_COMMIT={commit}");
}

/// HEAD's commit, watching the files that change when it moves.
fn git_head() -> Option<String> {
    let dir = std::env::var("CARGO_MANIFEST_DIR").ok()?;
    let dir = Path::new(&dir);
    let commit = git(dir, &["rev-parse", "--verify", "HEAD"])?;
    // HEAD itself moves on a checkout; the branch it names moves on a commit
    // (a loose ref, or packed-refs once git packed it).
    let mut watched = vec!["HEAD".to_owned(), "packed-refs".to_owned()];
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(branch);
    }
    for name in watched {
        if let Some(path) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &name],
        ) && Path::new(&path).exists()
        {
            println!("cargo::rerun-if-changed={path}");
        }
    }
    Some(commit)
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
