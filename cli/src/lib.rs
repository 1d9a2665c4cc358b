//! The `fleetgate` CLI as a library: the command-line grammar, the hub
//! client, and one module per command group. The `fleetgate` binary parses
//! and dispatches; `fleetgate-demo` drives its hub through the same client
//! and `gate apply`.
#![forbid(unsafe_code)]

pub mod args;
pub mod client;
pub mod commands;
pub mod config;
pub mod demo;
pub mod diff;
pub mod error;
pub mod login;
pub mod manifests;
pub mod output;
pub mod timearg;
