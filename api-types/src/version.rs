//! Versions and the version-skew policy (docs/hub-operations.md, "Upgrades and
//! version skew"): which releases of the spoke and the CLI a hub works with.
//! One definition for the hub (which flags spokes outside the policy) and the
//! CLI (which warns when it is too far from its hub).

use serde::{Deserialize, Serialize};

/// This build's version: every crate of the workspace shares it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// How many minor releases a spoke may be behind its hub: a hub serves spokes of
/// its own minor release and of the two before it.
pub const SPOKE_MINORS_BEHIND: u64 = 2;

/// How many minor releases a CLI may be away from its hub, either way.
pub const CLI_MINORS_APART: u64 = 1;

/// A release: its version, the commit it was made from, and the last
/// migration of its schema. The skew tests build and run the releases a hub
/// still supports from these commits (see docs/development.md, "Releases").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Release {
    pub version: &'static str,
    /// The full commit hash.
    pub commit: &'static str,
    /// The number of its last migration (`migrations/NNNN_*.sql`).
    pub last_migration: i64,
}

/// Every release made, oldest first (one line per release: the release
/// procedure adds it).
pub const RELEASES: &[Release] = &[Release {
    version: "0.1.0",
    commit: "8cdd7c421c32fde1d5acb4a6791ff19e995357fd",
    last_migration: 51,
}];

/// The oldest release whose spokes this build's hub still serves.
pub fn oldest_supported_spoke() -> Option<&'static Release> {
    RELEASES
        .iter()
        .find(|r| spoke_skew(VERSION, r.version) == Skew::Supported)
}

/// The newest release of an earlier minor (or major) version than this build:
/// its hub replicas share the database with this build's during a rolling update.
pub fn previous_release() -> Option<&'static Release> {
    let here = major_minor(VERSION)?;
    RELEASES
        .iter()
        .rev()
        .find(|r| major_minor(r.version).is_some_and(|v| v < here))
}

/// `GET /api/v1/version`: the hub's version and the commit it was built from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VersionInfo {
    /// Semantic version, e.g. `0.2.0`.
    pub version: String,
    /// The git commit (40 hex digits), or `unknown`.
    pub commit: String,
}

/// Whether a spoke (or CLI) is within the skew policy of the hub it talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "utoipa", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub enum Skew {
    /// Within the policy: tested to work.
    Supported,
    /// Outside it (too old, or newer than the hub): upgrade it, or the hub first.
    Unsupported,
    /// No version known (never connected) or not a semantic version.
    Unknown,
}

impl Skew {
    pub fn as_str(self) -> &'static str {
        match self {
            Skew::Supported => "supported",
            Skew::Unsupported => "unsupported",
            Skew::Unknown => "unknown",
        }
    }
}

impl std::fmt::Display for Skew {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `major.minor` of a semantic version (`0.2.0`, `0.2.1-rc.1+abc`, `v0.2.0`);
/// `None` when it is not one.
pub fn major_minor(version: &str) -> Option<(u64, u64)> {
    let core = version.trim().trim_start_matches('v');
    let core = core.split(['-', '+']).next()?;
    let mut parts = core.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let _patch: u64 = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((major, minor))
}

/// A spoke of `spoke` version against a hub of `hub` version: same major, and
/// at most [`SPOKE_MINORS_BEHIND`] minor releases behind; a spoke newer than
/// its hub is unsupported (upgrade the hub first).
pub fn spoke_skew(hub: &str, spoke: &str) -> Skew {
    match (major_minor(hub), major_minor(spoke)) {
        (Some((hm, hn)), Some((sm, sn))) => {
            if hm == sm && sn <= hn && hn - sn <= SPOKE_MINORS_BEHIND {
                Skew::Supported
            } else {
                Skew::Unsupported
            }
        }
        _ => Skew::Unknown,
    }
}

/// A spoke's skew against this hub build ([`VERSION`]); `Unknown` without a version.
pub fn spoke_skew_here(spoke: Option<&str>) -> Skew {
    spoke.map_or(Skew::Unknown, |s| spoke_skew(VERSION, s))
}

/// A CLI of `cli` version against a hub of `hub` version: same major, at most
/// [`CLI_MINORS_APART`] minor releases apart either way.
pub fn cli_skew(cli: &str, hub: &str) -> Skew {
    match (major_minor(cli), major_minor(hub)) {
        (Some((cm, cn)), Some((hm, hn))) => {
            if cm == hm && cn.abs_diff(hn) <= CLI_MINORS_APART {
                Skew::Supported
            } else {
                Skew::Unsupported
            }
        }
        _ => Skew::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        assert_eq!(major_minor("0.2.0"), Some((0, 2)));
        assert_eq!(major_minor("v1.12.3"), Some((1, 12)));
        assert_eq!(major_minor("0.3.0-rc.1+abc"), Some((0, 3)));
        for bad in ["", "0.2", "bench", "test-0.1.0", "0.2.x", "0.2.0.1"] {
            assert_eq!(major_minor(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_hub_serves_its_own_and_two_earlier_minor_spokes() {
        assert_eq!(spoke_skew("0.4.0", "0.4.3"), Skew::Supported);
        assert_eq!(spoke_skew("0.4.0", "0.3.0"), Skew::Supported);
        assert_eq!(spoke_skew("0.4.1", "0.2.9"), Skew::Supported);
        assert_eq!(spoke_skew("0.4.0", "0.1.0"), Skew::Unsupported);
        // newer than the hub: the hub is upgraded first
        assert_eq!(spoke_skew("0.4.0", "0.5.0"), Skew::Unsupported);
        // another major
        assert_eq!(spoke_skew("2.0.0", "1.9.0"), Skew::Unsupported);
        assert_eq!(spoke_skew("0.4.0", "bench"), Skew::Unknown);
        assert_eq!(spoke_skew_here(None), Skew::Unknown);
        assert_eq!(spoke_skew_here(Some(VERSION)), Skew::Supported);
    }

    #[test]
    fn releases_are_ordered_and_recorded_whole() {
        for pair in RELEASES.windows(2) {
            assert!(major_minor(pair[0].version) < major_minor(pair[1].version));
            assert!(pair[0].last_migration <= pair[1].last_migration);
        }
        for r in RELEASES {
            assert!(major_minor(r.version).is_some(), "{}", r.version);
            assert_eq!(r.commit.len(), 40, "{}: a full commit hash", r.version);
            assert!(r.commit.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        // 0.2.0 supports 0.1.0 spokes and shares its database with 0.1.0 replicas
        if major_minor(VERSION) == Some((0, 2)) {
            assert_eq!(oldest_supported_spoke().map(|r| r.version), Some("0.1.0"));
            assert_eq!(previous_release().map(|r| r.version), Some("0.1.0"));
        }
    }

    #[test]
    fn a_cli_talks_to_a_hub_one_minor_apart() {
        assert_eq!(cli_skew("0.2.0", "0.1.0"), Skew::Supported);
        assert_eq!(cli_skew("0.2.0", "0.3.5"), Skew::Supported);
        assert_eq!(cli_skew("0.2.0", "0.4.0"), Skew::Unsupported);
        assert_eq!(cli_skew("1.0.0", "0.9.0"), Skew::Unsupported);
        assert_eq!(cli_skew("0.2.0", "dev"), Skew::Unknown);
    }
}
