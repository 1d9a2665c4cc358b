//! The service's (and REST's) input and output types — defined in
//! `fleetgate-api-types`, shared with the CLI — and how database rows become
//! them.

pub use fleetgate_api_types::records::{
    ApiToken, ApiTokenWithSecret, AuditEntry, Cluster, ClusterIdentity, ClusterWithToken,
    CreateToken, FieldWarning, GateRecord, OverrideClusters, OverrideRecord, OverrideRequest,
    RegisterCluster, Relabel, SetClusterJwks,
};

use crate::db::gates::GateRow;
use crate::db::tokens::TokenRow;

impl From<GateRow> for GateRecord {
    fn from(r: GateRow) -> Self {
        // Stored manifests were validated when written; one that no longer parses has no
        // warnings to give (reading it fails elsewhere with a clear error).
        let warnings = fleetgate_policy::parse_gate_json(r.manifest.clone())
            .map(|g| g.warnings())
            .unwrap_or_default()
            .into_iter()
            .map(|w| FieldWarning {
                path: w.path,
                message: w.message,
            })
            .collect();
        Self {
            name: r.name,
            version: r.version,
            manifest: r.manifest,
            created_at: r.created_at,
            updated_at: r.updated_at,
            warnings,
            calendars: Vec::new(),
        }
    }
}

impl From<TokenRow> for ApiToken {
    fn from(r: TokenRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            role: r.role,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
            scope: r.scope.map(|s| s.0),
        }
    }
}
