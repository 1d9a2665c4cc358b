//! Small builders shared by the policy tests: gates from YAML snippets, instants, overrides.
#![allow(dead_code)]

use chrono::{DateTime, NaiveDate, Utc};
use fleetgate_policy::{CompiledGate, GateState, Override, parse_gate};

/// A compiled gate named `g` for every cluster with the given spec lines (YAML, indented by 2).
pub fn gate(spec: &str) -> CompiledGate {
    let text = format!(
        "apiVersion: fleetgate.io/v1\nkind: Gate\nmetadata: {{name: g}}\nspec:\n  clusters: {{selector: {{}}}}\n{spec}"
    );
    parse_gate(&text)
        .and_then(|g| g.compile())
        .unwrap_or_else(|e| panic!("test gate does not compile: {e}\n{text}"))
}

/// `utc("2026-03-29 01:30")`.
pub fn utc(s: &str) -> DateTime<Utc> {
    let fmt = if s.len() > 16 {
        "%Y-%m-%d %H:%M:%S"
    } else {
        "%Y-%m-%d %H:%M"
    };
    chrono::NaiveDateTime::parse_from_str(s, fmt)
        .unwrap_or_else(|e| panic!("bad test time {s}: {e}"))
        .and_utc()
}

/// Midnight UTC of a date.
pub fn day(y: i32, m: u32, d: u32) -> DateTime<Utc> {
    NaiveDate::from_ymd_opt(y, m, d)
        .unwrap()
        .and_hms_opt(0, 0, 0)
        .unwrap()
        .and_utc()
}

/// An override of gate `g`.
pub fn ovr(
    id: &str,
    state: GateState,
    starts: &str,
    expires: Option<&str>,
    created: &str,
) -> Override {
    Override {
        id: id.to_string(),
        gate: "g".to_string(),
        state,
        starts_at: utc(starts),
        expires_at: expires.map(utc),
        created_at: utc(created),
        actor: "alice".to_string(),
        reason: "hotfix INC-42".to_string(),
    }
}

/// Transitions as `(at, state)` pairs, for compact assertions.
pub fn changes(
    g: &CompiledGate,
    from: &str,
    to: &str,
    overrides: &[Override],
) -> Vec<(DateTime<Utc>, GateState)> {
    g.transitions(utc(from), utc(to), overrides)
        .into_iter()
        .map(|t| (t.at, t.state))
        .collect()
}

pub mod cron_oracle;
