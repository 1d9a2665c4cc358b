//! The `fleetgate` CLI as a library: the command-line grammar, the hub
//! client, and one module per command group. The `fleetgate` binary parses
//! and dispatches; `fleetgate-demo` drives its hub through the same client
//! and `gate apply`.
//!
//! Layers: imports `fleetgate-policy` and `fleetgate-api-types` only (the demo is its own
//! program so the CLI links no hub, spoke or simulator). Inside, the grammar (`args/`),
//! configuration, client and output sit below `commands/`, which none of them import.
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
