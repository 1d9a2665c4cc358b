//! The commit this CLI is built from, for `fleetgate version`.

fn main() {
    fleetgate_build_info::emit_commit();
}
