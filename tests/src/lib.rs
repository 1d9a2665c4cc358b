//! Test harness shared by every crate's tests: a throwaway PostgreSQL server
//! (one per test process, a fresh database per test) and helpers to find and
//! run the workspace's binaries as real processes.
#![forbid(unsafe_code)]

pub mod kube_client;
pub mod largest;
pub mod npm;
pub mod objects;
pub mod oidc;
pub mod pg;
pub mod pki;
pub mod process;
pub mod release;
pub mod rest;
pub mod sign_in;
pub mod sim;
pub mod spire;
pub mod spoke_sign_in;

pub use kube_client::{kube_client, kube_client_from_file};
pub use objects::{KUSTOMIZATION, dynamic_api, kubectl, nginx_app, nginx_objects, watch_until};
pub use pg::{TestDb, test_db};
pub use process::{
    ChildGuard, bin_path, binaries, free_port, hub_serve, hub_serve_with, output, poll,
    spoke_connect, spoke_connect_with, wait_readyz,
};
pub use release::{ReleaseBins, release_binaries, release_source};
pub use rest::Rest;
pub use sim::{
    SimCluster, SimProcess, create_namespaces, start_sim, start_sim_clusters, start_sim_with,
};
