//! The hub's built-in jemalloc options (`MALLOC_CONF` in `src/main.rs`) are in
//! force, and `_RJEM_MALLOC_CONF` still overrides them at run time. jemalloc's
//! `stats_print` lists the options in force when the process exits.

use std::process::Command;

fn options_in_force(env: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_fleetgate-hub"))
        .arg("--version")
        .env("_RJEM_MALLOC_CONF", env)
        .output()
        .expect("run fleetgate-hub --version");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout)
}

#[test]
fn built_in_options_apply() {
    let s = options_in_force("stats_print:true");
    assert!(s.contains("opt.dirty_decay_ms: 0 "), "{s}");
    assert!(s.contains("opt.muzzy_decay_ms: 0 "), "{s}");
    // The thread caches and the background threads of `.cargo/config.toml` stay.
    assert!(s.contains("opt.tcache: true"), "{s}");
    assert!(s.contains("opt.background_thread: true"), "{s}");
}

#[test]
fn the_environment_overrides_them() {
    let s = options_in_force("stats_print:true,dirty_decay_ms:1000");
    assert!(s.contains("opt.dirty_decay_ms: 1000 "), "{s}");
}
