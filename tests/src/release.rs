//! The binaries of an earlier release, for the version-skew tests: the
//! release's commit (recorded in `fleetgate_api_types::version::RELEASES`) is
//! extracted with `git archive` under the target directory
//! (`target/releases/VERSION/src`), and built there with its own lockfile into
//! its own target directory (`target/releases/VERSION/target`). The build
//! directory (compiled dependencies, `build.build-dir`) is today's, so only
//! the release's own crates compile; both stay between runs, so a second run
//! builds nothing.
//!
//! `git archive` rather than `git worktree add`: nothing is registered in the
//! repository, and deleting `target/` leaves no stale worktree behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use fleetgate_api_types::version::Release;

/// `fleetgate-hub` and `fleetgate-spoke` of one release.
#[derive(Debug, Clone)]
pub struct ReleaseBins {
    pub version: &'static str,
    pub hub: PathBuf,
    pub spoke: PathBuf,
}

/// One build at a time (tests of one process may ask at once).
static BUILD: Mutex<()> = Mutex::new(());

/// Builds (or finds built) the hub and spoke of `release`; panics with the
/// reason when the commit is not in this clone's history or the build fails.
/// Call it before a test's own time bound starts: the first build takes
/// minutes.
pub fn release_binaries(release: &Release) -> ReleaseBins {
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let (profile_dir, base) = dirs(release);
    let target = profile_dir.parent().expect("target dir");
    let profile = profile_dir.file_name().expect("profile name");
    let src = base.join("src");
    extract(release, &src);
    let out = base.join("target");
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cmd.current_dir(&src)
        .args(["build", "--locked", "--bin", "fleetgate-hub"])
        .args(["--bin", "fleetgate-spoke"])
        .env("CARGO_TARGET_DIR", &out)
        .env("CARGO_BUILD_BUILD_DIR", target);
    if profile == "release" {
        cmd.arg("--release");
    }
    let st = cmd.status().expect("running cargo build");
    assert!(
        st.success(),
        "building release {} at {} failed",
        release.version,
        release.commit
    );
    let bins = out.join(profile);
    ReleaseBins {
        version: release.version,
        hub: bins.join("fleetgate-hub"),
        spoke: bins.join("fleetgate-spoke"),
    }
}

/// The release's source tree (its files at its commit), extracted under the
/// target directory if it is not there yet.
pub fn release_source(release: &Release) -> PathBuf {
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let src = dirs(release).1.join("src");
    extract(release, &src);
    src
}

/// `target/<profile>` of the running test and `target/releases/VERSION`.
fn dirs(release: &Release) -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe.parent().and_then(Path::parent).expect("profile dir");
    let target = profile_dir.parent().expect("target dir");
    (
        profile_dir.to_path_buf(),
        target.join("releases").join(release.version),
    )
}

/// The release's files at `src` (kept when a marker names the same commit).
fn extract(release: &Release, src: &Path) {
    let marker = src.join(".fleetgate-release");
    if std::fs::read_to_string(&marker).is_ok_and(|c| c == release.commit) {
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root");
    let tmp = src.with_extension("tmp");
    let _ = std::fs::remove_dir_all(&tmp);
    let _ = std::fs::remove_dir_all(src);
    std::fs::create_dir_all(&tmp).expect("creating the release's directory");
    let mut archive = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["archive", "--format=tar", release.commit])
        .stdout(Stdio::piped())
        .spawn()
        .expect("running git archive");
    let tar = Command::new("tar")
        .arg("-x")
        .arg("-C")
        .arg(&tmp)
        .stdin(archive.stdout.take().expect("git's stdout"))
        .status()
        .expect("running tar");
    let git = archive.wait().expect("waiting for git archive");
    assert!(
        git.success() && tar.success(),
        "extracting release {} ({}): is the commit in this clone's history? \
         (a shallow clone lacks it: fetch with --unshallow)",
        release.version,
        release.commit
    );
    std::fs::write(tmp.join(".fleetgate-release"), release.commit).expect("writing the marker");
    std::fs::rename(&tmp, src).expect("moving the release's files in place");
}
