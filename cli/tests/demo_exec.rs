//! `fleetgate demo` runs the `fleetgate-demo` program installed beside the
//! CLI with every argument, and says how to get it when it is missing. (The
//! demo itself is tested in `demo/tests/demo_smoke.rs`.)

use std::path::PathBuf;
use std::process::Command;

/// A directory holding (a hard link to) the CLI and nothing else; inside the
/// target dir, so the link stays on one file system. Links, not copies: an
/// executable written while other test threads fork can fail with ETXTBSY.
fn lone_cli() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let cli = dir.path().join("fleetgate");
    std::fs::hard_link(env!("CARGO_BIN_EXE_fleetgate"), &cli).unwrap();
    (dir, cli)
}

#[test]
fn demo_without_its_program_beside_the_cli_says_how_to_get_it() {
    let (_dir, cli) = lone_cli();
    let out = Command::new(&cli)
        .args(["demo", "--clusters", "3"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fleetgate-demo") && err.contains("cargo run --release --bin fleetgate-demo"),
        "{err}"
    );
}

#[test]
fn demo_passes_every_argument_to_its_program() {
    let (dir, cli) = lone_cli();
    // A stand-in demo program that prints its arguments.
    std::os::unix::fs::symlink("/bin/echo", dir.path().join("fleetgate-demo")).unwrap();
    let out = Command::new(&cli)
        .args(["demo", "--clusters", "3", "--objects-per-cluster", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "--clusters 3 --objects-per-cluster 2\n"
    );
}
