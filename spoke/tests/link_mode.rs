//! On x86-64 Linux with glibc the spoke is linked as a position-dependent
//! executable (`build.rs`): the loader then relocates nothing, so the binary's
//! read-only data stays clean file pages instead of private memory. Building with
//! `FLEETGATE_SPOKE_PIE=1` links the usual PIE.
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
fn the_spoke_is_linked_position_dependent_unless_asked_for_a_pie() {
    let bin = env!("CARGO_BIN_EXE_fleetgate-spoke");
    let expected = if option_env!("FLEETGATE_SPOKE_PIE") == Some("1") {
        ET_DYN
    } else {
        ET_EXEC
    };
    assert_eq!(elf_type(bin), expected);
    // And it runs.
    let out = Command::new(bin).arg("--version").output().expect("run it");
    assert!(out.status.success(), "{out:?}");
}
