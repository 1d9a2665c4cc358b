//! fleetgate's gate model and its evaluation: manifests, validation, cron/rrule/dated windows
//! with DST-correct wall-clock semantics, overrides, and transitions. Pure, no I/O; shared by
//! the hub, the spoke and the CLI so they always agree.
#![forbid(unsafe_code)]

mod compile;
mod cron;
mod describe;
mod duration;
mod error;
mod eval;
mod kinds;
mod localtime;
mod manifest;
mod recurrence;
mod selector;
mod timeline;
mod transitions;
mod validate;

pub use compile::CompiledGate;
pub use cron::CronSchedule;
pub use duration::{format_duration, parse_duration};
pub use error::PolicyError;
pub use eval::{Combined, Evaluation, Override, combine};
pub use kinds::FluxKind;
pub use localtime::resolve_local;
pub use manifest::{
    API_VERSION, ClusterScope, Gate, GateSpec, GateState, KIND, Metadata, Mode, Targets, Window,
    WindowKind, parse_gate, parse_gate_json,
};
pub use selector::{LabelSelector, LabelSelectorRequirement, SelectorOperator};
pub use transitions::{Preview, PreviewState, Transition};
