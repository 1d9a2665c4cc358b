//! The test OpenID provider's npm packages, installed by the tests themselves from the
//! committed lockfile: the first test process of a run that needs them runs `npm ci` under a
//! file lock (so parallel test binaries install once), preferring npm's cache to the network;
//! the others wait for the lock and find them installed. A fresh clone's `cargo test` needs no
//! manual step.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

/// Directories this process has installed or found installed.
static INSTALLED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Whether `dir/node_modules` holds what `dir/package-lock.json` locks: npm writes
/// `node_modules/.package-lock.json` when an install completes; an older one (the lockfile
/// changed since) is stale.
pub fn installed(dir: &Path) -> bool {
    let modified = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    match (
        modified(dir.join("node_modules/.package-lock.json")),
        modified(dir.join("package-lock.json")),
    ) {
        (Some(done), Some(locked)) => done >= locked,
        _ => false,
    }
}

/// Installs `dir`'s packages from its lockfile unless they are installed already
/// (`npm ci --prefer-offline`, under the lock file `dir/.install.lock`).
pub fn ensure_installed(dir: &Path) -> Result<(), String> {
    let mut done = INSTALLED.lock().unwrap_or_else(|e| e.into_inner());
    if done.contains(dir) {
        return Ok(());
    }
    let lock_path = dir.join(".install.lock");
    let lock = File::create(&lock_path).map_err(|e| format!("{}: {e}", lock_path.display()))?;
    lock.lock()
        .map_err(|e| format!("locking {}: {e}", lock_path.display()))?;
    if !installed(dir) {
        let out = Command::new("npm")
            .args(["ci", "--prefer-offline", "--no-audit", "--no-fund"])
            .args(["--loglevel=error"])
            .current_dir(dir)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("running npm (install Node.js and npm): {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "npm ci in {} failed ({}): {}",
                dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    done.insert(dir.to_path_buf());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of the provider's package without `node_modules` gets them from its lockfile,
    /// once.
    #[test]
    fn a_missing_node_modules_is_installed_from_the_lockfile() {
        let tmp = tempfile::tempdir().unwrap();
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("oidc");
        for f in ["package.json", "package-lock.json", "provider.mjs"] {
            std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
        }
        assert!(!installed(tmp.path()));
        ensure_installed(tmp.path()).unwrap();
        assert!(installed(tmp.path()));
        assert!(tmp.path().join("node_modules/oidc-provider").is_dir());
        // Installed: the next call runs nothing (npm ci would rewrite node_modules).
        let marker = tmp.path().join("node_modules/.package-lock.json");
        let before = std::fs::metadata(&marker).unwrap().modified().unwrap();
        INSTALLED.lock().unwrap().clear();
        ensure_installed(tmp.path()).unwrap();
        assert_eq!(
            std::fs::metadata(&marker).unwrap().modified().unwrap(),
            before
        );
        // A lockfile newer than the install is installed again.
        let lockfile = File::options()
            .append(true)
            .open(tmp.path().join("package-lock.json"))
            .unwrap();
        lockfile
            .set_modified(before + std::time::Duration::from_secs(1))
            .unwrap();
        assert!(!installed(tmp.path()));
    }
}
