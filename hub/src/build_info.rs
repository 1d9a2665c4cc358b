//! This hub build's version and commit: `GET /api/v1/version`, gRPC
//! `AdminService/GetVersion`, `fleetgate_hub_build_info`.

use fleetgate_api_types::VersionInfo;

/// The workspace version and the commit `build.rs` found (`FLEETGATE_COMMIT`,
/// else git, else `unknown`).
pub fn version_info() -> VersionInfo {
    VersionInfo {
        version: fleetgate_api_types::version::VERSION.to_owned(),
        commit: env!("FLEETGATE_COMMIT").to_owned(),
    }
}
