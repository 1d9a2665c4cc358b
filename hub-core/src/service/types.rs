//! The service's (and REST's) input and output types — defined in
//! `fleetgate-api-types`, shared with the CLI — and how database rows become
//! them.

pub use fleetgate_api_types::records::{
    ApiToken, ApiTokenWithSecret, AuditEntry, Cluster, ClusterWithToken, CreateToken, FieldWarning,
    GateRecord, OverrideClusters, OverrideRecord, OverrideRequest, RegisterCluster, Relabel,
};
