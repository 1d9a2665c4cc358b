//! The commit this spoke is built from: sent in its Hello, exported as
//! `fleetgate_spoke_build_info`.
//!
//! The spoke is a PIE by default. On x86-64 Linux with glibc 2.36 or later the
//! PIE is linked with packed relative relocations (DT_RELR): its relocation
//! table, read whole at every start and so resident, shrinks from 1.27 MB to
//! 22 KB (profile dist). A binary linked so does not start on an older glibc, so
//! the build machine's glibc decides (`ldd --version`; an unknown one keeps the
//! usual relocations).
//!
//! `FLEETGATE_SPOKE_PIE=0` at build time links it position-dependent (`-no-pie`)
//! on x86-64 glibc instead: its absolute addresses are fixed at link time, so the
//! loader writes none of `.data.rel.ro` (1.4 MB in profile dist-spoke) and those
//! pages stay clean file pages, ~1 MiB less resident. The cost is the binary's own
//! code and data at a fixed address (the stack, heap, mmaps and shared libraries
//! are still randomised), so it is a choice for memory-tight fleets, not the
//! default. docs/performance.md, the spoke's resident memory, has the measurements.

fn main() {
    fleetgate_build_info::emit_commit();
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=FLEETGATE_SPOKE_PIE");
    let target = std::env::var("TARGET").ok();
    let x86_64_gnu = target.as_deref() == Some("x86_64-unknown-linux-gnu");
    let pie = std::env::var("FLEETGATE_SPOKE_PIE").map_or(true, |v| v != "0");
    if x86_64_gnu && !pie {
        println!("cargo::rustc-link-arg-bins=-no-pie");
        return;
    }
    let native = target == std::env::var("HOST").ok();
    if x86_64_gnu && native && glibc_at_least(2, 36) {
        println!("cargo::rustc-link-arg-bins=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether the build machine's glibc (`ldd --version`: "ldd (… GLIBC 2.36-9) 2.36") is at
/// least `major.minor`.
fn glibc_at_least(major: u32, minor: u32) -> bool {
    let Ok(out) = std::process::Command::new("ldd").arg("--version").output() else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().last())
    else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(a), Some(b)) => (a, b) >= (major, minor),
        _ => false,
    }
}
