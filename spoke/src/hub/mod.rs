//! The hub side of the spoke: the one gRPC stream to the hub and its reconnect
//! schedule, the snapshot it receives (compiled, with rollout waves and the
//! hub-expanded calendar feeds) and persists in a ConfigMap, and the status
//! report it sends back.

pub(crate) mod calendars;
pub(crate) mod connection;
pub mod credential;
mod proto_time;
pub mod reconnect;
pub mod report;
pub mod snapshot;
pub mod snapshot_store;
pub(crate) mod waves;
