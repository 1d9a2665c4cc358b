//! fleetgate gate model and evaluation (stub).
#![forbid(unsafe_code)]
