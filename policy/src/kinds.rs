//! The Flux object kinds a gate can govern, with their API groups, versions and plurals.
//! One table, so the spoke, the simulator and the CLI agree on every GVK.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::PolicyError;

/// A Flux kind. Serialized as its Kubernetes kind name (`Kustomization`, `OCIRepository`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum FluxKind {
    Kustomization,
    HelmRelease,
    GitRepository,
    OCIRepository,
    HelmRepository,
    Bucket,
    HelmChart,
    ImageUpdateAutomation,
}

impl FluxKind {
    /// Every kind, appliers first, then sources, then image automation.
    pub const ALL: [FluxKind; 8] = [
        FluxKind::Kustomization,
        FluxKind::HelmRelease,
        FluxKind::GitRepository,
        FluxKind::OCIRepository,
        FluxKind::HelmRepository,
        FluxKind::Bucket,
        FluxKind::HelmChart,
        FluxKind::ImageUpdateAutomation,
    ];

    /// The Kubernetes kind name.
    pub fn as_str(&self) -> &'static str {
        match self {
            FluxKind::Kustomization => "Kustomization",
            FluxKind::HelmRelease => "HelmRelease",
            FluxKind::GitRepository => "GitRepository",
            FluxKind::OCIRepository => "OCIRepository",
            FluxKind::HelmRepository => "HelmRepository",
            FluxKind::Bucket => "Bucket",
            FluxKind::HelmChart => "HelmChart",
            FluxKind::ImageUpdateAutomation => "ImageUpdateAutomation",
        }
    }

    /// The API group.
    pub fn group(&self) -> &'static str {
        match self {
            FluxKind::Kustomization => "kustomize.toolkit.fluxcd.io",
            FluxKind::HelmRelease => "helm.toolkit.fluxcd.io",
            FluxKind::ImageUpdateAutomation => "image.toolkit.fluxcd.io",
            _ => "source.toolkit.fluxcd.io",
        }
    }

    /// The served API version fleetgate uses.
    pub fn version(&self) -> &'static str {
        match self {
            FluxKind::HelmRelease => "v2",
            _ => "v1",
        }
    }

    /// `group/version`, as in an object's `apiVersion`.
    pub fn api_version(&self) -> String {
        format!("{}/{}", self.group(), self.version())
    }

    /// The resource name used in API paths (`ocirepositories`).
    pub fn plural(&self) -> &'static str {
        match self {
            FluxKind::Kustomization => "kustomizations",
            FluxKind::HelmRelease => "helmreleases",
            FluxKind::GitRepository => "gitrepositories",
            FluxKind::OCIRepository => "ocirepositories",
            FluxKind::HelmRepository => "helmrepositories",
            FluxKind::Bucket => "buckets",
            FluxKind::HelmChart => "helmcharts",
            FluxKind::ImageUpdateAutomation => "imageupdateautomations",
        }
    }

    /// Whether this is a source kind (what `freezeSources` suspends).
    pub fn is_source(&self) -> bool {
        self.group() == "source.toolkit.fluxcd.io"
    }
}

impl fmt::Display for FluxKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FluxKind {
    type Err = PolicyError;

    /// Accepts the kind name in any letter case (`helmrelease`, `HelmRelease`) or its plural.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        FluxKind::ALL
            .into_iter()
            .find(|k| k.as_str().eq_ignore_ascii_case(s) || k.plural().eq_ignore_ascii_case(s))
            .ok_or_else(|| {
                let names: Vec<&str> = FluxKind::ALL.iter().map(FluxKind::as_str).collect();
                PolicyError::new(
                    "",
                    format!(
                        "unknown Flux kind '{s}', expected one of {}",
                        names.join(", ")
                    ),
                )
            })
    }
}
