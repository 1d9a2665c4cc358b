//! Helpers to run the workspace's binaries as real processes in tests.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::Mutex;

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("binding a free port")
}

static BUILD_LOCK: Mutex<()> = Mutex::new(());

/// Path of a workspace binary (e.g. `fleetgate-hub`) in the same target
/// directory as the running test, building it with cargo if it is missing
/// (as when only one package's tests were asked for).
pub fn bin_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("current_exe");
    // target/<profile>/deps/<test> → target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .to_path_buf();
    let path = profile_dir.join(name);
    if path.exists() {
        return path;
    }
    let _guard = BUILD_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    if !path.exists() {
        let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cmd.args(["build", "--bin", name]);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            cmd.arg("--release");
        }
        let st = cmd.status().expect("running cargo build");
        assert!(st.success(), "cargo build --bin {name} failed");
    }
    path
}

/// Kills (SIGKILL) and reaps the child when dropped, so a failing test leaves
/// no stray process behind.
#[derive(Debug)]
pub struct ChildGuard(pub Child);

impl ChildGuard {
    /// Sends SIGTERM (graceful shutdown) via `kill`.
    pub fn terminate(&self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.0.id().to_string()])
            .status();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
