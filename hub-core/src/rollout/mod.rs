//! Rollout waves (issue 15), the pure parts: a released cluster's health ([`health`]) and
//! the state machine's step ([`machine`]). The service layer (`service::rollouts`) reads
//! their inputs from PostgreSQL, persists their results and runs the driver task.

pub mod event;
pub mod health;
pub mod machine;

pub use event::Event;
pub use fleetgate_api_types::rollout::RolloutState as State;
