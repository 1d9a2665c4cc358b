//! Finds the workspace binaries the benchmark runs as real processes (hub,
//! spoke, simulator, and this benchmark's own floor server), building them
//! first when run through cargo so a stale binary is never measured.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Result};

/// Paths of the binaries a run starts.
#[derive(Debug, Clone)]
pub struct Bins {
    pub hub: PathBuf,
    pub spoke: PathBuf,
    pub sim: PathBuf,
    /// `fleetgate-bench` itself (its hidden `floor-server` subcommand).
    pub bench: PathBuf,
}

const PACKAGES: [&str; 3] = ["fleetgate-hub", "fleetgate-spoke", "fleetgate-sim"];

impl Bins {
    /// The binaries in the profile directory of the running executable
    /// (`target/<profile>/` or its `deps/`). Under cargo (`CARGO` is set) they
    /// are (re)built first with the same profile.
    pub fn locate(bench: PathBuf) -> Result<Self> {
        let exe = std::env::current_exe()?;
        let mut dir = exe
            .parent()
            .ok_or_else(|| Error::setup("executable has no directory"))?
            .to_path_buf();
        if dir.file_name().is_some_and(|n| n == "deps") {
            dir.pop();
        }
        if let Ok(cargo) = std::env::var("CARGO") {
            build(&cargo, &dir)?;
        }
        let find = |name: &str| -> Result<PathBuf> {
            let p = dir.join(name);
            if p.exists() {
                Ok(p)
            } else {
                Err(Error::setup(format!(
                    "{} not found; build it: cargo build --release -p {name}",
                    p.display()
                )))
            }
        };
        Ok(Self {
            hub: find("fleetgate-hub")?,
            spoke: find("fleetgate-spoke")?,
            sim: find("fleetgate-sim")?,
            bench,
        })
    }
}

fn build(cargo: &str, profile_dir: &Path) -> Result<()> {
    let mut cmd = Command::new(cargo);
    cmd.arg("build").arg("--quiet");
    for p in PACKAGES {
        cmd.args(["-p", p]);
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status()?;
    if !status.success() {
        return Err(Error::setup(format!("cargo build of {PACKAGES:?} failed")));
    }
    Ok(())
}
