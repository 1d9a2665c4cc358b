//! Rollout waves at hub level, with real PostgreSQL and the injected clock (no waiting):
//! waves release in order with soak, a failed wave halts (onFailure halt vs close),
//! pause/resume/abort/release-next, approval, two replicas stepping one rollout release
//! each wave once, a restarted hub continues mid-soak, a freeze mid-rollout closes every
//! cluster at once, late joiners and the cluster-scoped open override's bypass. A freeze
//! made in a cluster fences that cluster's opening when it ends, as the hub's own does.
//!
//! One module per topic: `waves` (release order, soak, each cluster's place), `failures`
//! (halts, failure settings, the failed-canary mark), `commands` (pause, resume, abort,
//! release-next, approval), `driver` (replicas and restarts stepping the driver) and
//! `mid_rollout` (freezes, late joiners and overrides while a rollout runs).

#[path = "../common/mod.rs"]
mod common;
#[path = "../grpc_support/mod.rs"]
mod grpc_support;
#[path = "../rollout_support/mod.rs"]
mod rollout_support;

mod commands;
mod driver;
mod failures;
mod mid_rollout;
mod waves;
