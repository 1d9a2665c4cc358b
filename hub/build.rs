//! The commit this hub is built from (`GET /api/v1/version`,
//! `fleetgate_hub_build_info`).

fn main() {
    fleetgate_build_info::emit_commit();
}
