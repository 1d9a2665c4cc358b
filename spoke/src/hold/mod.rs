//! Object-level holds (`mode: holdObjects`): while a gate is closed, chosen
//! objects *inside* a Kustomization carry kustomize-controller's own opt-out
//! (`kustomize.toolkit.fluxcd.io/reconcile: disabled`) with fleetgate's marker
//! beside it; everything else the Kustomization applies stays real-time.
//! `plan` decides (pure), `enforce` patches, `watch` observes metadata only.

pub mod enforce;
pub mod kinds;
pub mod marks;
pub mod observed;
pub mod plan;
pub mod watch;
