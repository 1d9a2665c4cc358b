//! fleetgate hub: gate policies in PostgreSQL, a service layer shared by the
//! REST and gRPC APIs, the REST API with tokens, roles and an audit log, and
//! the change notifications the gRPC fan-out consumes.
#![forbid(unsafe_code)]

pub mod auth;
pub mod build_info;
pub mod calendar_sync;
pub mod clock;
pub mod config;
pub mod dashboard;
pub mod db;
pub mod drain;
pub mod egress;
pub mod error;
pub mod fanout;
pub mod fleet_feed;
pub mod grpc;
pub mod http;
pub mod identity;
pub mod liveness;
pub mod metrics;
pub mod notify;
pub mod openapi;
pub mod replica;
pub mod rest;
pub mod rollout;
pub use fleetgate_api_types::schema;
pub mod serve;
pub mod service;
pub mod startup;
pub mod validate;

pub use error::{Error, Result};
pub use http::app;
pub use rest::AppState;
pub use serve::serve;
pub use service::{Actor, Role, Service};
