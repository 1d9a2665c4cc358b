//! The commit this hub is built from: `main` hands it to
//! `fleetgate_hub_core::build_info` (`GET /api/v1/version`,
//! `fleetgate_hub_build_info`). Only this thin crate rebuilds when HEAD moves.

fn main() {
    fleetgate_build_info::emit_commit();
}
