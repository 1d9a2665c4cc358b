//! Finds the workspace binaries the benchmark runs as real processes (hub,
//! spoke, simulator, and this benchmark's own floor server), building them
//! first when run through cargo so a stale binary is never measured.

use std::path::PathBuf;
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

/// The profile of the spoke's image (Dockerfile.spoke).
const SPOKE_PROFILE: &str = "dist-spoke";

impl Bins {
    /// The binaries in the profile directory of the running executable
    /// (`target/<profile>/` or its `deps/`). Under cargo (`CARGO` is set) they
    /// are (re)built first with the same profile. In release the spoke comes
    /// from profile `dist-spoke` (`target/dist-spoke/`), what its container
    /// image ships.
    pub fn locate(bench: PathBuf) -> Result<Self> {
        let exe = std::env::current_exe()?;
        let mut dir = exe
            .parent()
            .ok_or_else(|| Error::setup("executable has no directory"))?
            .to_path_buf();
        if dir.file_name().is_some_and(|n| n == "deps") {
            dir.pop();
        }
        let release = dir.file_name().is_some_and(|n| n == "release");
        if let Ok(cargo) = std::env::var("CARGO") {
            build(&cargo, release)?;
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
        // The spoke is measured as its image ships it (profile `dist-spoke`,
        // see Dockerfile.spoke) when the benchmark runs in release.
        let dist_spoke = dir
            .parent()
            .map(|target| target.join(SPOKE_PROFILE).join("fleetgate-spoke"));
        let spoke = match dist_spoke {
            Some(p) if release && p.exists() => p,
            _ => find("fleetgate-spoke")?,
        };
        // FLEETGATE_BENCH_HUB measures another hub build (e.g. one with a
        // dependency pinned back) against the same benchmark.
        let hub = match std::env::var_os("FLEETGATE_BENCH_HUB") {
            Some(p) => PathBuf::from(p),
            None => find("fleetgate-hub")?,
        };
        Ok(Self {
            hub,
            spoke,
            sim: find("fleetgate-sim")?,
            bench,
        })
    }
}

/// Builds the binaries in the running profile (and in release the spoke also
/// in its image's profile).
fn build(cargo: &str, release: bool) -> Result<()> {
    let mut args = vec!["build", "--quiet"];
    for p in PACKAGES {
        args.extend(["-p", p]);
    }
    if release {
        args.push("--release");
    }
    cargo_build(cargo, &args)?;
    if release {
        cargo_build(
            cargo,
            &[
                "build",
                "--quiet",
                "--profile",
                SPOKE_PROFILE,
                "-p",
                "fleetgate-spoke",
            ],
        )?;
    }
    Ok(())
}

fn cargo_build(cargo: &str, args: &[&str]) -> Result<()> {
    let status = Command::new(cargo).args(args).status()?;
    if !status.success() {
        return Err(Error::setup(format!("cargo {} failed", args.join(" "))));
    }
    Ok(())
}
