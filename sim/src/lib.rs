//! fleetgate-sim: a faithful test Kubernetes API server serving the real Flux CRDs, with
//! a Flux simulator reconciling them in fast-forward time. One 127.0.0.1 port per
//! simulated cluster; real kubectl and kube-rs work against it unchanged.
//!
//! Layers: imports only `fleetgate-policy`; it stands in for Kubernetes, so no spoke, hub or
//! CLI code. Inside: the store, the served types (`crd`), errors and object rules below
//! the write path (`ops`, `prepare`), below the apiextensions and Flux controllers, below
//! the HTTP handlers and the `Sim` that wires them (the controllers run after CRD writes
//! through `Cluster::after_crd_write`, so the write path does not import them).
#![forbid(unsafe_code)]

mod apiextensions;
mod apply;
mod builtin;
mod cluster;
pub mod crd;
mod error;
mod events;
mod fields;
pub mod flux;
mod handlers;
pub mod issuer;
mod kubeconfig;
mod kubelet;
mod managed;
mod meta;
mod ops;
mod patch;
mod prepare;
mod protobuf;
mod query;
pub mod rbac;
mod schema;
mod selectors;
mod sim;
mod store;
mod tls;
mod upstream;
mod watch;
mod write_opts;

pub use error::{ApiStatus, Error, Result};
pub use rbac::{RbacConfig, RbacUser};
pub use sim::{Sim, SimConfig};
pub use upstream::{Failure, parse_manifests};
