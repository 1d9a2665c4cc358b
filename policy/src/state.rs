//! A gate's state (open or closed), a change of it at an instant and the state a preview
//! starts from: the words every other module of the crate speaks, so this imports none of them.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::error::PolicyError;

/// Whether Flux may change the governed objects.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateState {
    #[default]
    Open,
    Closed,
}

impl GateState {
    /// `"open"` or `"closed"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            GateState::Open => "open",
            GateState::Closed => "closed",
        }
    }

    /// Whether this is [`GateState::Open`].
    pub fn is_open(&self) -> bool {
        *self == GateState::Open
    }
}

impl fmt::Display for GateState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for GateState {
    type Err = PolicyError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "open" => Ok(GateState::Open),
            "closed" => Ok(GateState::Closed),
            _ => Err(PolicyError::new(
                "",
                format!("unknown gate state '{s}', expected open or closed"),
            )),
        }
    }
}

/// A change of state at `at`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Transition {
    pub at: DateTime<Utc>,
    pub state: GateState,
    pub reason: String,
}

/// The state at the start of a preview.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PreviewState {
    pub state: GateState,
    pub reason: String,
}
