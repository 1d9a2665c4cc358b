//! Approvals: pending override requests through gates with `approval` ([`requests`]), the
//! decisions on them ([`decisions`]), their expiry ([`expiry`]), the queue as the APIs list it
//! ([`queries`]) and who may decide ([`rights`]).

pub mod decisions;
pub mod expiry;
pub mod queries;
pub mod requests;
pub mod rights;

pub use fleetgate_api_types::OverrideOutcome;
pub use queries::ApprovalQuery;
pub use requests::person_key;
