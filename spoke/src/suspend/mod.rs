//! Whole-object suspension (`mode: suspend` and `freezeSources`): the pure
//! planner deciding what to suspend and resume, the annotations that mark
//! fleetgate's suspends, the patches that apply the plan, and the check that
//! no gate holds the spoke's own delivery.

pub mod annotations;
pub mod enforce;
pub mod own_delivery;
pub mod plan;
