//! fleetgate scale benchmark: a real hub process on a real PostgreSQL, thousands
//! of simulated spokes (real gRPC streams over loopback) in this process, and the
//! physical floor (bare tonic fan-out, PostgreSQL NOTIFY) measured in the same run.
#![forbid(unsafe_code)]

pub mod bins;
pub mod config;
pub mod e2e;
pub mod error;
pub mod fleet;
pub mod flip_pairs;
pub mod flips;
pub mod floor;
pub mod hub_gauges;
pub mod hub_process;
pub mod ingest;
pub mod jwt;
pub mod probe;
pub mod proc_stats;
pub mod replicas;
pub mod report;
pub mod rolling;
pub mod run;
pub mod sim_process;
pub mod soak;
pub mod spoke_process;
pub mod stats;
pub mod steady;
pub mod storm;
pub mod swarm;
pub mod swarm_process;

pub use config::BenchConfig;
pub use error::{Error, Result};
pub use report::Report;
pub use run::run;
