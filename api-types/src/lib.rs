//! The hub's REST API bodies (`/api/v1`): what the hub serialises and what the
//! `fleetgate` CLI deserialises, one definition for both. Field names are
//! camelCase on the wire. With the `utoipa` feature (the hub's) the types
//! also describe themselves for the OpenAPI document.
//!
//! Layers: a contract beside `fleetgate-proto`; imports only `fleetgate-policy`, never the hub,
//! the CLI or anything that does I/O (they import it). `role` is a leaf the records and the
//! access policies both name.
#![forbid(unsafe_code)]

pub mod access;
pub mod admission;
pub mod approvals;
pub mod dashboard;
pub mod error;
pub mod identity;
pub mod impact;
pub mod page;
pub mod records;
pub mod role;
pub mod rollout;
#[cfg(feature = "utoipa")]
pub mod schema;
pub mod status;
pub mod version;
pub mod webhooks;

pub use access::{
    AccessPolicy, AccessPolicyRecord, AccessPolicySpec, AccessScope, GateScope, Subjects,
    WorkloadSubject, parse_access_policy,
};
pub use approvals::{
    ApprovalDecision, ApprovalEntry, ApprovalRequest, ApprovalRights, OverrideOutcome,
};
pub use dashboard::{Cell, FleetGrid, FleetRow, GateView, ScopedCluster, WhoAmI};
pub use error::{ErrorBody, ErrorDetail};
pub use identity::{
    AuthConfig, EndMySessions, EndSessions, Identity, IdentityKind, LoginRequest, LoginStart,
    SessionList, SessionRecord, SessionsEnded,
};
pub use page::Page;
pub use records::{
    ApiToken, ApiTokenWithSecret, AuditEntry, Cluster, ClusterIdentity, ClusterWithToken,
    CreateToken, FieldWarning, FreezeRecord, FreezeRequest, GateRecord, OverrideClusters,
    OverrideRecord, OverrideRequest, RegisterCluster, Relabel, Role, SetClusterJwks,
    SnapshotOverBudget, SnapshotPersistence, UnfreezeRequest,
};
pub use status::{
    ClusterBrief, ClusterCounts, ClusterStatus, FleetStatus, FleetSummary, GateBrief, GateStatus,
    GateSummary, HeldObject, HeldObjectStatus, ObjectCounts, ObjectStatus, ReportProblem,
    ReportProblems, ReportedObject,
};
pub use version::{Skew, VersionInfo};
