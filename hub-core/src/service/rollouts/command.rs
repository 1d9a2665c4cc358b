//! An operator's command on a gate's rollout ([`Command`]) and what it does to the rollout.
//! A leaf of `service/rollouts/`: the driver and the service methods import it.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::rollout::machine::Current;
use crate::rollout::{Event, State};
use crate::{Error, Result};

/// An operator's command on a gate's current rollout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Command {
    /// Release no further wave until resumed.
    Pause,
    /// Continue a paused or halted rollout (a halted wave is judged afresh from now;
    /// `onFailure: close` re-releases it).
    Resume,
    /// Stop: the remaining waves stay closed until the gate opens anew.
    Abort,
    /// Release the next wave now: approve a wave waiting for approval, or end the soak.
    ReleaseNext,
}

impl std::str::FromStr for Command {
    type Err = Error;
    /// `pause|resume|abort|release-next` (404 otherwise: REST's path segment).
    fn from_str(text: &str) -> Result<Self> {
        match text {
            "pause" => Ok(Command::Pause),
            "resume" => Ok(Command::Resume),
            "abort" => Ok(Command::Abort),
            "release-next" => Ok(Command::ReleaseNext),
            other => Err(Error::not_found("rollout command", other)),
        }
    }
}

impl Command {
    /// The audit action.
    pub fn action(&self) -> &'static str {
        match self {
            Command::Pause => "rollout.pause",
            Command::Resume => "rollout.resume",
            Command::Abort => "rollout.abort",
            Command::ReleaseNext => "rollout.release-next",
        }
    }

    /// Applies the command to `c`; 409 when the rollout's state does not allow it.
    pub(crate) fn apply(&self, c: &mut Current, now: DateTime<Utc>) -> Result<Event> {
        let state = State::parse(&c.row.state);
        let refuse = |why: String| Err(Error::conflict(why));
        let gate = c.row.gate.clone();
        match (self, state) {
            (Command::Pause, State::Running) => c.row.state = State::Paused.as_str().into(),
            (Command::Resume, State::Paused) => c.row.state = State::Running.as_str().into(),
            (Command::Resume, State::Halted) => {
                c.row.state = State::Running.as_str().into();
                c.row.detail = None;
                c.row.health_since = Some(now);
                c.row.healthy_at = None;
                let wave = c.row.wave;
                // The wave is judged afresh: its failures are forgotten until it fails again.
                for m in c.members.iter_mut().filter(|m| m.wave == wave) {
                    m.failed_at = None;
                    m.failure = None;
                }
                if c.members
                    .iter()
                    .any(|m| m.wave == wave && m.released_at.is_none())
                {
                    // onFailure close closed the wave: release it again.
                    c.row.wave_released_at = None;
                }
            }
            (Command::Abort, State::Running | State::Paused | State::Halted) => {
                c.row.state = State::Aborted.as_str().into();
            }
            (Command::ReleaseNext, State::Running) => {
                let wave = c.row.wave;
                if c.row.wave_released_at.is_none() {
                    c.row.approved_wave = Some(wave);
                } else if c.row.healthy_at.is_some() {
                    c.row.approved_wave = Some(wave + 1);
                } else {
                    return refuse(format!(
                        "rollout of gate '{gate}': wave {} is not healthy yet",
                        wave + 1
                    ));
                }
            }
            (Command::ReleaseNext, State::Paused | State::Halted) => {
                return refuse(format!(
                    "rollout of gate '{gate}' is {}: resume it first",
                    state.as_str()
                ));
            }
            (_, state) => {
                return refuse(format!(
                    "rollout of gate '{gate}' is {}: cannot {}",
                    state.as_str(),
                    self.action().trim_start_matches("rollout.")
                ));
            }
        }
        Ok(Event::of(&c.row, self.action(), None))
    }
}
