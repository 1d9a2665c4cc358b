//! The commit this spoke is built from: sent in its Hello, exported as
//! `fleetgate_spoke_build_info`. On x86-64 Linux with glibc 2.36 or later (the
//! image's Debian 12), the binary is linked with packed relative relocations
//! (DT_RELR): its relocation table, read whole at every start and so resident,
//! shrinks from 1.27 MB to 22 KB (profile dist). A binary linked so does not start
//! on an older glibc, so the build machine's glibc decides (`ldd --version`; an
//! unknown one keeps the usual relocations).

fn main() {
    fleetgate_build_info::emit_commit();
    println!("cargo::rerun-if-changed=build.rs");
    let native = std::env::var("TARGET").ok() == std::env::var("HOST").ok();
    if std::env::var("TARGET").as_deref() == Ok("x86_64-unknown-linux-gnu")
        && native
        && glibc_at_least(2, 36)
    {
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
