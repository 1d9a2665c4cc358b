//! The Kubernetes side: which Flux kinds the cluster serves, the watches and
//! object stores that keep the planner's view of every Flux object (parsed
//! straight into the fields the spoke plans on), and the Events it publishes.

pub mod events;
pub mod flux_events;
pub mod flux_object;
pub mod intern;
pub mod kinds;
pub mod object_store;
pub mod observed;
pub(crate) mod overlay;
pub mod readiness;
pub mod watch;
