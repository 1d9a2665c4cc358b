//! Documentation-only OpenAPI schemas: the Gate manifest field for field,
//! the gate preview, and the pages of list endpoints. The real types live in
//! the pure `fleetgate-policy` crate (no utoipa) or are generic; parsing
//! never goes through these.

pub mod gate;
pub mod pages;
pub mod preview;
