//! The spoke is a PIE (`build.rs`) unless built with `FLEETGATE_SPOKE_PIE=0`,
//! which on x86-64 Linux with glibc links it position-dependent: the loader then
//! relocates nothing, so the binary's read-only data stays clean file pages.
#![cfg(all(target_arch = "x86_64", target_os = "linux", target_env = "gnu"))]

use std::process::Command;

/// ELF `e_type`: a position-dependent executable.
const ET_EXEC: u16 = 2;
/// ELF `e_type`: a shared object, which a PIE is.
const ET_DYN: u16 = 3;

fn elf_type(path: &str) -> u16 {
    let bytes = std::fs::read(path).expect("read the spoke binary");
    assert_eq!(&bytes[..4], b"\x7fELF", "not an ELF file");
    u16::from_le_bytes([bytes[16], bytes[17]])
}

#[test]
fn the_spoke_is_a_pie_unless_built_position_dependent() {
    let bin = env!("CARGO_BIN_EXE_fleetgate-spoke");
    let expected = if option_env!("FLEETGATE_SPOKE_PIE") == Some("0") {
        ET_EXEC
    } else {
        ET_DYN
    };
    assert_eq!(elf_type(bin), expected);
    // And it runs.
    let out = Command::new(bin).arg("--version").output().expect("run it");
    assert!(out.status.success(), "{out:?}");
}
