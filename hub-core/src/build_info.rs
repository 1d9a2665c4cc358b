//! This hub build's version and commit: `GET /api/v1/version`, gRPC
//! `AdminService/GetVersion`, `fleetgate_hub_build_info`. The version is the
//! workspace's; the commit is known to the binary's build script only (so the
//! layers below are not rebuilt whenever HEAD moves), and `main` sets it once
//! before anything reads it. Unset (tests driving the router in-process): `unknown`.

use std::sync::OnceLock;

use fleetgate_api_types::VersionInfo;

static COMMIT: OnceLock<&'static str> = OnceLock::new();

/// Records the commit the binary was built from (the first call wins).
pub fn set_commit(commit: &'static str) {
    let _ = COMMIT.set(commit);
}

/// The workspace version and the commit [`set_commit`] recorded.
pub fn version_info() -> VersionInfo {
    VersionInfo {
        version: fleetgate_api_types::version::VERSION.to_owned(),
        commit: COMMIT.get().copied().unwrap_or("unknown").to_owned(),
    }
}
