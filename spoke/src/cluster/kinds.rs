//! Finds which Flux kinds the cluster serves (API discovery per kind), so
//! missing CRDs are skipped with a log line and picked up once installed.

use fleetgate_policy::FluxKind;
use kube::{
    Client,
    core::{ApiResource, GroupVersionKind},
    discovery::pinned_kind,
};

use crate::error::{Error, Result};

/// The API resource serving `kind`, or `None` when its CRD is not installed.
pub async fn discover(client: &Client, kind: FluxKind) -> Result<Option<ApiResource>> {
    let gvk = GroupVersionKind::gvk(kind.group(), kind.version(), kind.as_str());
    match pinned_kind(client, &gvk).await {
        Ok((resource, _caps)) => Ok(Some(resource)),
        Err(kube::Error::Api(status)) if status.code == 404 => Ok(None),
        Err(kube::Error::Discovery(_)) => Ok(None),
        Err(e) => Err(Error::Kube(e)),
    }
}
