//! The hub's gRPC side: the spoke stream (`spoke`), the admin API for
//! integrations (`admin` and its `admin_*` topics, `watch_fleet`), report ingestion (`reports`), auth
//! and conversions, and the server with its hygiene settings (`server`).

pub mod admin;
mod admin_access;
mod admin_admission;
mod admin_approvals;
mod admin_clusters;
mod admin_convert;
mod admin_freezes;
mod admin_gates;
mod admin_identity;
mod admin_status;
mod admin_webhooks;
pub mod auth;
pub mod convert;
pub mod server;
pub mod spoke;
pub mod watch_fleet;

pub use crate::options::GrpcOptions;
pub use server::serve_replica;
