//! The fleet page's query and answer (`GET /api/v1/dashboard/fleet`): decided in the
//! service layer (`service::fleet::grid_page`), which builds only the page's rows.

pub use crate::service::fleet::grid_page::{
    FleetCounts, FleetGridPage, FleetGroup, FleetPageQuery, page,
};
