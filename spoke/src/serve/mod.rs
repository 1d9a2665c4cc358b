//! What the spoke serves on its HTTP port: `/healthz`, `/readyz`, the
//! Prometheus metrics at `/metrics`, and Flagger's gate webhooks, all
//! answered from the spoke's own state so they work while the hub is away.

pub(crate) mod flagger;
pub(crate) mod health;
pub(crate) mod metrics;
