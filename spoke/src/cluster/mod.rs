//! The Kubernetes side: which Flux kinds the cluster serves, the watches and
//! object stores that keep the planner's view of every Flux object (parsed
//! straight into the fields the spoke plans on), and the Events it publishes.

pub mod events;
pub(crate) mod flux_events;
pub(crate) mod flux_object;
pub(crate) mod intern;
pub(crate) mod kinds;
pub(crate) mod object_store;
pub mod observed;
pub(crate) mod overlay;
pub(crate) mod readiness;
pub(crate) mod text;
pub(crate) mod watch;
