//! fleetgate gRPC contract (stub).
#![forbid(unsafe_code)]
