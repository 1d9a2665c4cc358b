//! The commit this spoke is built from: sent in its Hello, exported as
//! `fleetgate_spoke_build_info`.

fn main() {
    fleetgate_build_info::emit_commit();
}
