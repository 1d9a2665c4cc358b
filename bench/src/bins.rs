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
    /// are (re)built first with the same profile. In release the spoke comes
    /// from profile `dist` (`target/dist/`), what its container image ships.
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
        // The spoke is measured as its image ships it (profile `dist`, see
        // Dockerfile.spoke) when the benchmark runs in release.
        let dist_spoke = dir
            .parent()
            .map(|target| target.join("dist").join("fleetgate-spoke"));
        let spoke = match dist_spoke {
            Some(p) if dir.file_name().is_some_and(|n| n == "release") && p.exists() => p,
            _ => find("fleetgate-spoke")?,
        };
        Ok(Self {
            hub: find("fleetgate-hub")?,
            spoke,
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
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        let status = Command::new(cargo)
            .args([
                "build",
                "--quiet",
                "--profile",
                "dist",
                "-p",
                "fleetgate-spoke",
            ])
            .status()?;
        if !status.success() {
            return Err(Error::setup(
                "cargo build --profile dist of fleetgate-spoke failed",
            ));
        }
    }
    Ok(())
}
