//! fleetgate's gate model and its evaluation: manifests, validation, cron/rrule/dated/calendar windows
//! with DST-correct wall-clock semantics, overrides, and transitions. Pure, no I/O; shared by
//! the hub, the spoke and the CLI so they always agree.
//!
//! ```
//! use chrono::{TimeZone, Utc};
//! use fleetgate_policy::{GateState, parse_gate};
//!
//! let gate = parse_gate(r#"
//! apiVersion: fleetgate.io/v1
//! kind: Gate
//! metadata: {name: no-deploy-friday}
//! spec:
//!   clusters: {selector: {}}
//!   timeZone: Europe/Berlin
//!   windows:
//!     - {name: weekend, kind: deny, schedule: "0 0 * * FRI", duration: 72h}
//! "#)?.compile()?;
//! let friday_noon = Utc.with_ymd_and_hms(2026, 11, 27, 11, 0, 0).unwrap();
//! let e = gate.evaluate(friday_noon, &[]);
//! assert_eq!(e.state, GateState::Closed);
//! assert_eq!(e.reason, "deny window 'weekend' until Mon 2026-11-30 00:00 CET");
//! assert_eq!(e.next_transition, Some(Utc.with_ymd_and_hms(2026, 11, 29, 23, 0, 0).unwrap()));
//! # Ok::<(), fleetgate_policy::PolicyError>(())
//! ```
#![forbid(unsafe_code)]

mod approval;
pub mod budgets;
mod calendar;
mod compile;
mod cron;
mod describe;
mod duration;
mod error;
mod eval;
mod freeze;
mod kinds;
mod localtime;
mod manifest;
mod objects;
mod opening;
mod recurrence;
mod rollout;
mod rollout_preview;
mod selector;
pub mod text;
mod timeline;
mod transitions;
mod validate;
mod warnings;
mod waves;
pub mod yaml;

pub use approval::{
    Approval, Approvers, DEFAULT_APPROVAL_EXPIRY, MAX_APPROVAL_EXPIRY, MAX_APPROVERS,
};
pub use calendar::{
    CalendarAuth, CalendarIssue, CalendarRefusal, CalendarSource, Calendars, DEFAULT_MAX_STALE,
    DEFAULT_REFRESH, EventMatch, ExpandedCalendar, FeedOccurrences, HORIZON_AFTER, HORIZON_BEFORE,
    MAX_ICS_BYTES, MIN_REFRESH, Occurrence, OnStale, SecretRef, cut_summary, expand_ics,
    read_calendar,
};
pub use compile::CompiledGate;
pub use cron::CronSchedule;
pub use duration::{format_duration, parse_duration};
pub use error::PolicyError;
pub use eval::{Combined, Evaluation, Override, Rule, combine, next_combined_change};
pub use freeze::{FREEZE_GATE, active_freeze};
pub use kinds::FluxKind;
pub use localtime::resolve_local;
pub use manifest::{
    API_VERSION, ClusterScope, DEFAULT_REQUEST_WINDOW, Enforcement, Gate, GateSpec, GateState,
    KIND, LocalRequests, MAX_REQUEST_WINDOW, Metadata, Mode, Targets, Window, WindowKind,
    parse_gate, parse_gate_json,
};
pub use objects::{GroupKind, HeldObjects};
pub use opening::OPEN_SINCE_EVER;
pub use rollout::{
    Amount, DEFAULT_HEALTH_TIMEOUT, MAX_ROLLOUT_DURATION, MAX_WAVES, OnFailure, Rollout, Wave,
};
pub use rollout_preview::{RolloutEstimate, WaveEstimate};
pub use selector::{LabelSelector, LabelSelectorRequirement, SelectorOperator};
pub use transitions::{Preview, PreviewState, Transition};
pub use validate::dns_label;
pub use warnings::Warning;
pub use waves::{WaveCandidate, assign_waves};
